/**
 * `model: "auto"`: the models that can serve a request, cheapest first, and why (docs/models.md). The run
 * tries them in order, moving on when one is rate limited or unavailable.
 */
import type { CatalogueModel, ModelCatalogue, ModelProvider } from './catalogue.js';

export interface RoutingNeeds {
  tools: boolean;
  vision: boolean;
  /** An estimate of the request's input: a model whose context window is smaller cannot take it. */
  input_tokens: number;
}

export interface Route {
  /** Catalogue ids, best first; empty when no model fits. */
  candidates: string[];
  reason: string;
}

// How many fallbacks a reason names before it only counts the rest.
const NAMED_FALLBACKS = 3;

/** A decimal USD string in billionths of a dollar, so prices compare exactly. */
function nanoDollars(decimal: string): bigint {
  const [whole = '0', fraction = ''] = decimal.split('.');
  return BigInt(whole) * 1_000_000_000n + BigInt(fraction.padEnd(9, '0').slice(0, 9));
}

/** `0.6` → `$0.60`, `2` → `$2.00`, `0.075` → `$0.075`. */
function dollars(decimal: string): string {
  const [whole = '0', fraction = ''] = decimal.split('.');
  return `$${whole}.${fraction.padEnd(2, '0')}`;
}

function describeNeeds(needs: RoutingNeeds): string {
  const capabilities = [needs.tools && 'tools', needs.vision && 'vision'].filter(Boolean).join(' and ');
  return `${capabilities ? `needs ${capabilities}` : 'needs no tools or vision'} and room for ${needs.input_tokens.toLocaleString('en-US')} input tokens`;
}

const canServe = (model: CatalogueModel, needs: RoutingNeeds) =>
  (!needs.tools || model.capabilities.tools) &&
  (!needs.vision || model.capabilities.vision) &&
  model.capabilities.context_window >= needs.input_tokens;

export function routeAuto(catalogue: ModelCatalogue, needs: RoutingNeeds): Route {
  const now = new Date();
  const capable = catalogue.list().filter((model) => canServe(model, needs));
  const priced = capable
    .filter((model) => catalogue.configured(model.provider))
    .map((model) => ({ model, price: catalogue.priceAt(model, now) }))
    .map(({ model, price }) => ({ model, price, total: nanoDollars(price.input_per_million) + nanoDollars(price.output_per_million) }))
    .sort((a, b) => (a.total === b.total ? (a.model.id < b.model.id ? -1 : a.model.id > b.model.id ? 1 : 0) : a.total < b.total ? -1 : 1));

  const [best, ...fallbacks] = priced;
  if (!best) return { candidates: [], reason: noCandidateReason(catalogue, needs, capable) };

  const named = fallbacks.slice(0, NAMED_FALLBACKS).map(({ model }) => model.id);
  const unnamed = fallbacks.length - named.length;
  const fallbackText = named.length ? `; fallbacks: ${named.join(', ')}${unnamed ? ` and ${unnamed} more` : ''}` : '; no fallbacks';
  return {
    candidates: priced.map(({ model }) => model.id),
    reason:
      `auto: ${describeNeeds(needs)}; cheapest configured model with them is ${best.model.id} ` +
      `(${dollars(best.price.input_per_million)} in / ${dollars(best.price.output_per_million)} out per million tokens)${fallbackText}`,
  };
}

function noCandidateReason(catalogue: ModelCatalogue, needs: RoutingNeeds, capable: CatalogueModel[]): string {
  const wanted = `auto: no model can serve this request: it ${describeNeeds(needs)}`;
  if (capable.length === 0) {
    return `${wanted}, and no model in the catalogue has them (AGENTPLANE_MODELS can name a catalogue file that lists one)`;
  }
  const providers = [...new Set(capable.map((model) => model.provider))] as ModelProvider[];
  const settings = providers.map((provider) => {
    const examples = capable
      .filter((model) => model.provider === provider)
      .slice(0, 2)
      .map((model) => model.id);
    return `set ${catalogue.missingSetting(provider)} to use ${examples.join(' or ')}`;
  });
  return `${wanted}, and the models that have them belong to providers that are not configured: ${settings.join('; ')}`;
}
