/** The Anthropic SDK client, configured from the given environment only (never the process's own). */
import Anthropic from '@anthropic-ai/sdk';

export function anthropicClient(env: NodeJS.ProcessEnv): Anthropic {
  return new Anthropic({
    // Passing a key keeps the SDK from looking for credentials of its own (profiles, files on disk).
    apiKey: env.ANTHROPIC_API_KEY || 'unused',
    baseURL: env.ANTHROPIC_BASE_URL || null,
    // Retries belong to the Temporal activity that makes the call, which records each attempt.
    maxRetries: 0,
  });
}
