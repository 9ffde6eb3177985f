import type { components } from '../api/generated/openapi.js';
import type { CatalogueModel, ModelCatalogue } from '../models/catalogue.js';

export type ModelObject = components['schemas']['Model'];

export function presentModel(catalogue: ModelCatalogue, model: CatalogueModel, at: Date): ModelObject {
  const price = catalogue.priceAt(model, at);
  return {
    id: model.id,
    object: 'model',
    provider: model.provider,
    capabilities: { ...model.capabilities },
    pricing: {
      version: price.version,
      effective_from: price.effective_from,
      currency: 'USD',
      input_per_million: price.input_per_million,
      output_per_million: price.output_per_million,
      cached_input_per_million: price.cached_input_per_million,
    },
    configured: catalogue.configured(model.provider),
    discovered: model.discovered ?? false,
  };
}
