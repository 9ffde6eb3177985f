/**
 * The models runs may name, what each can do, and what it costs over time. Built in, or replaced whole by
 * the file AGENTPLANE_MODELS names; an OpenAI-compatible server at OPENAI_BASE_URL adds the models it
 * serves that the catalogue does not list (docs/models.md).
 */
import type { Logger } from 'pino';
import { builtinModels } from './builtin-models.js';
import { readCatalogueFile } from './catalogue-file.js';
import { discoveredModel, listServerModels } from './discovery.js';

/** Decimal USD strings, exact: cost arithmetic happens in SQL numerics, never in floating point. */
export interface ModelPrice {
  version: string;
  /** YYYY-MM-DD (UTC): the first day this price applies. */
  effective_from: string;
  input_per_million: string;
  output_per_million: string;
  cached_input_per_million: string;
}

export type ModelProvider = 'openai' | 'anthropic';

export interface CatalogueModel {
  /** The name runs use. */
  id: string;
  provider: ModelProvider;
  /** The name the provider knows it by. */
  provider_model: string;
  capabilities: { tools: boolean; vision: boolean; context_window: number; max_output_tokens: number };
  /** Oldest first. */
  prices: ModelPrice[];
  /** Listed by the OpenAI-compatible server rather than by the catalogue. */
  discovered?: boolean;
}

const SETTINGS: Record<ModelProvider, { variables: string[]; missing: string }> = {
  openai: {
    variables: ['OPENAI_API_KEY', 'OPENAI_BASE_URL'],
    missing: 'OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server)',
  },
  anthropic: {
    variables: ['ANTHROPIC_API_KEY', 'ANTHROPIC_BASE_URL'],
    missing: 'ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for an Anthropic-compatible server)',
  },
};

export class ModelCatalogue {
  private discovered: CatalogueModel[] = [];
  private discovering: Promise<void> | null = null;

  private constructor(
    private readonly listed: CatalogueModel[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly log: Logger,
  ) {}

  /** Fails only on a bad catalogue file; a discovery server that does not answer is logged and retried by refresh(). */
  static async load(env: NodeJS.ProcessEnv, log: Logger): Promise<ModelCatalogue> {
    const listed = env.AGENTPLANE_MODELS ? await readCatalogueFile(env.AGENTPLANE_MODELS) : builtinModels;
    const catalogue = new ModelCatalogue(listed, env, log);
    await catalogue.refresh();
    return catalogue;
  }

  list(): CatalogueModel[] {
    return [...this.listed, ...this.discovered];
  }

  find(id: string): CatalogueModel | undefined {
    return this.listed.find((model) => model.id === id) ?? this.discovered.find((model) => model.id === id);
  }

  /**
   * The price in effect on the (UTC) day of `at`. Before a model's first price took effect, that first
   * price is the best there is.
   */
  priceAt(model: CatalogueModel, at: Date): ModelPrice {
    const day = at.toISOString().slice(0, 10);
    let inEffect = model.prices[0]!;
    for (const price of model.prices) if (price.effective_from <= day) inEffect = price;
    return inEffect;
  }

  /**
   * The dearest of the prices in effect from `from` for `spanMs` (which may cross into a new day's price), each
   * rate its own highest: what a call that may last that long can be charged at most.
   */
  dearestPriceWithin(model: CatalogueModel, from: Date, spanMs: number): ModelPrice {
    const first = this.priceAt(model, from);
    const last = this.priceAt(model, new Date(from.getTime() + spanMs));
    const dearer = (a: string, b: string) => (Number(b) > Number(a) ? b : a);
    return {
      ...first,
      input_per_million: dearer(first.input_per_million, last.input_per_million),
      cached_input_per_million: dearer(first.cached_input_per_million, last.cached_input_per_million),
      output_per_million: dearer(first.output_per_million, last.output_per_million),
    };
  }

  configured(provider: ModelProvider): boolean {
    return SETTINGS[provider].variables.some((name) => Boolean(this.env[name]));
  }

  /** The setting that would make `provider` usable, for messages that tell the operator what to do. */
  missingSetting(provider: ModelProvider): string {
    return SETTINGS[provider].missing;
  }

  /** Lists the OpenAI-compatible server's models again; concurrent calls share one listing. */
  refresh(): Promise<void> {
    if (!this.env.OPENAI_BASE_URL) return Promise.resolve();
    this.discovering ??= this.discover().finally(() => {
      this.discovering = null;
    });
    return this.discovering;
  }

  private async discover(): Promise<void> {
    const server = this.env.OPENAI_BASE_URL;
    let names: string[];
    try {
      names = await listServerModels(this.env);
    } catch (err) {
      // Keep what an earlier listing found: a server that is restarting still serves those models.
      this.log.warn({ err, server }, 'could not list the models of the OpenAI-compatible server; its models are usable once it answers');
      return;
    }
    const known = new Set(this.listed.flatMap((model) => (model.provider === 'openai' ? [model.id, model.provider_model] : [model.id])));
    this.discovered = [...new Set(names)].filter((name) => !known.has(name)).map(discoveredModel);
    this.log.info({ server, models: this.discovered.map((model) => model.id) }, 'models discovered on the OpenAI-compatible server');
  }
}
