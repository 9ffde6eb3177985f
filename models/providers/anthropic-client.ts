/**
 * The Anthropic SDK client, configured from the given environment only (never the process's own). The SDK is
 * loaded with the first client: it takes a process most of half a second, which a process making no call skips.
 */
import type Anthropic from '@anthropic-ai/sdk';

export async function anthropicClient(env: NodeJS.ProcessEnv): Promise<Anthropic> {
  const { default: Anthropic } = await import('@anthropic-ai/sdk');
  return new Anthropic({
    // Passing a key keeps the SDK from looking for credentials of its own (profiles, files on disk).
    apiKey: env.ANTHROPIC_API_KEY || 'unused',
    baseURL: env.ANTHROPIC_BASE_URL || null,
    // Retries belong to the Temporal activity that makes the call, which records each attempt.
    maxRetries: 0,
  });
}
