/**
 * Reads the catalogue file AGENTPLANE_MODELS names (JSON or YAML) and checks it whole before any of it is
 * used: a mistake is reported with the file and the field it is in, and the process does not start.
 */
import { readFile } from 'node:fs/promises';
import { extname } from 'node:path';
import { Ajv2020, type ErrorObject } from 'ajv/dist/2020.js';
import { parse as parseYaml } from 'yaml';
import type { CatalogueModel } from './catalogue.js';

const DECIMAL = '^(0|[1-9][0-9]*)(\\.[0-9]{1,9})?$';
const DAY = '^[0-9]{4}-[0-9]{2}-[0-9]{2}$';

const priceSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['version', 'effective_from', 'input_per_million', 'output_per_million', 'cached_input_per_million'],
  properties: {
    version: { type: 'string', minLength: 1, maxLength: 64 },
    effective_from: { type: 'string', pattern: DAY },
    input_per_million: { type: 'string', pattern: DECIMAL },
    output_per_million: { type: 'string', pattern: DECIMAL },
    cached_input_per_million: { type: 'string', pattern: DECIMAL },
  },
};

const fileSchema = {
  type: 'object',
  additionalProperties: false,
  required: ['models'],
  properties: {
    models: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['id', 'provider', 'capabilities', 'prices'],
        properties: {
          id: { type: 'string', minLength: 1, maxLength: 200 },
          provider: { enum: ['openai', 'anthropic'] },
          provider_model: { type: 'string', minLength: 1, maxLength: 200 },
          capabilities: {
            type: 'object',
            additionalProperties: false,
            required: ['tools', 'vision', 'context_window', 'max_output_tokens'],
            properties: {
              tools: { type: 'boolean' },
              vision: { type: 'boolean' },
              context_window: { type: 'integer', minimum: 1 },
              max_output_tokens: { type: 'integer', minimum: 1 },
            },
          },
          prices: { type: 'array', minItems: 1, items: priceSchema },
        },
      },
    },
  },
};

interface CatalogueFile {
  models: (Omit<CatalogueModel, 'provider_model' | 'discovered'> & { provider_model?: string })[];
}

const validateFile = new Ajv2020({ strict: true, allErrors: false }).compile<CatalogueFile>(fileSchema);

/** A mistake in the catalogue file; its message names the file and the field. */
export class CatalogueFileError extends Error {
  constructor(file: string, problem: string) {
    super(`AGENTPLANE_MODELS file ${file}: ${problem}`);
    this.name = 'CatalogueFileError';
  }
}

/** `/models/1/prices/0/version` → `models[1].prices[0].version` */
function fieldPath(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, segment) => (/^[0-9]+$/.test(segment) ? `${path}[${segment}]` : path ? `${path}.${segment}` : segment), '');
}

function describe(error: ErrorObject): string {
  const at = fieldPath(error.instancePath);
  const field = (name: string) => (at ? `${at}.${name}` : name);
  // Prices are strings so that no amount passes through floating point; say so when one is a number.
  if ((error.keyword === 'type' || error.keyword === 'pattern') && at.endsWith('_per_million')) {
    return `${at} must be a decimal number of US dollars written as a string, such as "0.15"`;
  }
  switch (error.keyword) {
    case 'required':
      return `${field(String(error.params.missingProperty))} is missing`;
    case 'additionalProperties':
      return `${field(String(error.params.additionalProperty))} is not a known field`;
    case 'pattern':
      return `${at} must be a date written YYYY-MM-DD`;
    case 'enum':
      return `${at || 'the file'} must be one of ${(error.params.allowedValues as unknown[]).join(', ')}`;
    default:
      return `${at || 'the file'} ${error.message ?? 'is not valid'}`;
  }
}

function isCalendarDay(text: string): boolean {
  const day = new Date(`${text}T00:00:00Z`);
  return !Number.isNaN(day.getTime()) && day.toISOString().slice(0, 10) === text;
}

/** Checks what a schema cannot: unique ids and versions, real dates, prices in the order they took effect. */
function checkConsistency(file: string, models: CatalogueFile['models']): void {
  const ids = new Set<string>();
  models.forEach((model, m) => {
    if (ids.has(model.id)) throw new CatalogueFileError(file, `models[${m}].id "${model.id}" is listed twice`);
    ids.add(model.id);
    const versions = new Set<string>();
    model.prices.forEach((price, p) => {
      const at = `models[${m}].prices[${p}]`;
      if (!isCalendarDay(price.effective_from))
        throw new CatalogueFileError(file, `${at}.effective_from "${price.effective_from}" is not a calendar date`);
      if (versions.has(price.version))
        throw new CatalogueFileError(file, `${at}.version "${price.version}" is listed twice for model "${model.id}"`);
      versions.add(price.version);
      const previous = model.prices[p - 1];
      if (previous && previous.effective_from >= price.effective_from) {
        throw new CatalogueFileError(file, `${at}.effective_from must be later than the price before it (prices are listed oldest first)`);
      }
    });
  });
}

function parse(file: string, text: string): unknown {
  try {
    return extname(file).toLowerCase() === '.json' ? JSON.parse(text) : parseYaml(text);
  } catch (err) {
    throw new CatalogueFileError(file, `cannot be parsed: ${(err as Error).message}`);
  }
}

export async function readCatalogueFile(file: string): Promise<CatalogueModel[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new CatalogueFileError(file, `cannot be read: ${(err as Error).message}`);
  }
  const content = parse(file, text);
  if (!validateFile(content)) throw new CatalogueFileError(file, describe(validateFile.errors![0]!));
  checkConsistency(file, content.models);
  return content.models.map((model) => ({
    id: model.id,
    provider: model.provider,
    provider_model: model.provider_model ?? model.id,
    capabilities: { ...model.capabilities },
    prices: model.prices.map((price) => ({ ...price })),
  }));
}
