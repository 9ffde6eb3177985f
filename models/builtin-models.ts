/**
 * The catalogue used when AGENTPLANE_MODELS names no file: models whose sampling settings (temperature,
 * top_p) the providers still accept, with the providers' published list prices in USD per million tokens.
 * A price version starts on the day the provider's price took effect; a later change is a new version,
 * never an edit of an old one, so recorded usage can always be repriced with the price it was charged at.
 */
import type { CatalogueModel } from './catalogue.js';

const openai = (id: string, context_window: number, max_output_tokens: number, prices: CatalogueModel['prices']): CatalogueModel => ({
  id,
  provider: 'openai',
  provider_model: id,
  capabilities: { tools: true, vision: true, context_window, max_output_tokens },
  prices,
});

const anthropic = (id: string, context_window: number, max_output_tokens: number, prices: CatalogueModel['prices']): CatalogueModel => ({
  id,
  provider: 'anthropic',
  provider_model: id,
  capabilities: { tools: true, vision: true, context_window, max_output_tokens },
  prices,
});

export const builtinModels: CatalogueModel[] = [
  openai('gpt-4.1', 1_047_576, 32_768, [
    {
      version: '2025-04-14',
      effective_from: '2025-04-14',
      input_per_million: '2.00',
      output_per_million: '8.00',
      cached_input_per_million: '0.50',
    },
  ]),
  openai('gpt-4.1-mini', 1_047_576, 32_768, [
    {
      version: '2025-04-14',
      effective_from: '2025-04-14',
      input_per_million: '0.40',
      output_per_million: '1.60',
      cached_input_per_million: '0.10',
    },
  ]),
  openai('gpt-4.1-nano', 1_047_576, 32_768, [
    {
      version: '2025-04-14',
      effective_from: '2025-04-14',
      input_per_million: '0.10',
      output_per_million: '0.40',
      cached_input_per_million: '0.025',
    },
  ]),
  // gpt-4o launched at $5/$15 without a cache discount; the alias moved to the cheaper snapshot on 2024-10-02.
  openai('gpt-4o', 128_000, 16_384, [
    {
      version: '2024-05-13',
      effective_from: '2024-05-13',
      input_per_million: '5.00',
      output_per_million: '15.00',
      cached_input_per_million: '5.00',
    },
    {
      version: '2024-10-02',
      effective_from: '2024-10-02',
      input_per_million: '2.50',
      output_per_million: '10.00',
      cached_input_per_million: '1.25',
    },
  ]),
  openai('gpt-4o-mini', 128_000, 16_384, [
    {
      version: '2024-07-18',
      effective_from: '2024-07-18',
      input_per_million: '0.15',
      output_per_million: '0.60',
      cached_input_per_million: '0.075',
    },
  ]),
  anthropic('claude-sonnet-4-6', 1_000_000, 128_000, [
    {
      version: '2026-02-17',
      effective_from: '2026-02-17',
      input_per_million: '3.00',
      output_per_million: '15.00',
      cached_input_per_million: '0.30',
    },
  ]),
  anthropic('claude-haiku-4-5', 200_000, 64_000, [
    {
      version: '2025-10-15',
      effective_from: '2025-10-15',
      input_per_million: '1.00',
      output_per_million: '5.00',
      cached_input_per_million: '0.10',
    },
  ]),
  anthropic('claude-opus-4-5', 200_000, 64_000, [
    {
      version: '2025-11-24',
      effective_from: '2025-11-24',
      input_per_million: '5.00',
      output_per_million: '25.00',
      cached_input_per_million: '0.50',
    },
  ]),
];
