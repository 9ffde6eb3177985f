/**
 * The models an OpenAI-compatible server (Ollama, llama.cpp, vLLM, …) serves, listed from its
 * `GET /models`, so that with only OPENAI_BASE_URL set its model names are usable as they are.
 */
import type { CatalogueModel } from './catalogue.js';
import { openAiClient } from './providers/openai-client.js';

// A local server answers at once; one that does not should not hold up starting the platform.
const LISTING_TIMEOUT_MS = 5_000;

// Nothing says how large a discovered model's window is; assume a small one, so that routing never sends
// it more than it can hold. The catalogue file can state the real figures.
export const DISCOVERED_CONTEXT_WINDOW = 8_192;
export const DISCOVERED_MAX_OUTPUT_TOKENS = 4_096;

export async function listServerModels(env: NodeJS.ProcessEnv): Promise<string[]> {
  const names: string[] = [];
  for await (const model of (await openAiClient(env)).models.list({ timeout: LISTING_TIMEOUT_MS })) names.push(model.id);
  return names;
}

export function discoveredModel(name: string): CatalogueModel {
  return {
    id: name,
    provider: 'openai',
    provider_model: name,
    capabilities: {
      tools: true,
      vision: false,
      context_window: DISCOVERED_CONTEXT_WINDOW,
      max_output_tokens: DISCOVERED_MAX_OUTPUT_TOKENS,
    },
    prices: [
      { version: 'local', effective_from: '1970-01-01', input_per_million: '0', output_per_million: '0', cached_input_per_million: '0' },
    ],
    discovered: true,
  };
}
