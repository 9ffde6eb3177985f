/**
 * The OpenAI SDK client, configured from the given environment only (never the process's own). The SDK is loaded
 * with the first client, as the Anthropic one is (anthropic-client.ts).
 */
import type OpenAI from 'openai';

export async function openAiClient(env: NodeJS.ProcessEnv): Promise<OpenAI> {
  const { default: OpenAI } = await import('openai');
  return new OpenAI({
    // A local OpenAI-compatible server needs no key, but the SDK refuses to start without one.
    apiKey: env.OPENAI_API_KEY || 'unused',
    baseURL: env.OPENAI_BASE_URL || null,
    organization: env.OPENAI_ORG_ID || null,
    project: env.OPENAI_PROJECT_ID || null,
    // Retries belong to the Temporal activity that makes the call, which records each attempt.
    maxRetries: 0,
  });
}
