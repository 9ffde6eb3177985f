/**
 * The scorers a dataset (or an experiment) names: each a name, or an object with its `name` and options. They are
 * checked where they are written, so that an experiment never finds out half-way that a scorer cannot be used,
 * and kept in one normal form (an object with its defaults filled in) for whoever reads them.
 */
import { HEURISTIC_SCORERS, type HeuristicScorer } from '../../records/run-scorers.js';
import { compiledSchema, shapeProblem } from '../../tools/argument-schemas.js';

/** The most scorers one list may name. */
export const MAX_SCORERS = 16;
/** The most a `json_schema` scorer's schema may take, as JSON text. */
export const MAX_SCORER_SCHEMA_BYTES = 16_384;
/** The longest a `judge` scorer's rubric may be. */
export const MAX_RUBRIC_CHARS = 8_000;
export const MAX_MODEL_NAME_CHARS = 128;

export const OUTPUT_SCORERS = [
  'exact_match',
  'string_check',
  'fuzzy_match',
  'text_similarity',
  'json_schema',
  'judge',
  'faithfulness',
] as const;
/** How `string_check` compares the answer with the expected one: equal, not equal, contains, contains ignoring case. */
export const STRING_CHECK_OPERATIONS = ['eq', 'ne', 'like', 'ilike'] as const;
export type StringCheckOperation = (typeof STRING_CHECK_OPERATIONS)[number];
/** The n-gram overlap measures `text_similarity` computes. */
export const SIMILARITY_METRICS = ['bleu', 'gleu', 'rouge_1', 'rouge_2', 'rouge_3', 'rouge_4', 'rouge_5', 'rouge_l'] as const;
export type SimilarityMetric = (typeof SIMILARITY_METRICS)[number];
export const SCORER_NAMES = [...HEURISTIC_SCORERS, ...OUTPUT_SCORERS] as const;
export type ScorerName = (typeof SCORER_NAMES)[number];

export type ScorerSpec =
  | { name: HeuristicScorer }
  | { name: 'exact_match'; case_sensitive: boolean; trim: boolean }
  /** 1 or 0 by `operation`, on the answer and the expected text as they are (untrimmed). */
  | { name: 'string_check'; operation: StringCheckOperation }
  /** `threshold`, when given, decides pass or fail (said in the explanation); the score is the similarity. */
  | { name: 'fuzzy_match'; threshold?: number }
  /** The score is the `metric`'s overlap with the expected text; `threshold` as fuzzy_match's. */
  | { name: 'text_similarity'; metric: SimilarityMetric; threshold?: number }
  | { name: 'json_schema'; schema: Record<string, unknown> }
  /** `model` names a model of the catalogue (checked by the API); the deployment's judge model when absent. */
  | { name: 'judge'; rubric: string; model?: string }
  | { name: 'faithfulness' };

export type ScorerSpecsCheck =
  { ok: true; specs: ScorerSpec[] } | { ok: false; code: 'invalid_scorer' | 'duplicate_scorer'; problem: string; param: string };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

class SpecProblem extends Error {
  constructor(
    message: string,
    readonly param: string,
    readonly code: 'invalid_scorer' | 'duplicate_scorer' = 'invalid_scorer',
  ) {
    super(message);
  }
}

/** The options each scorer takes, beside `name`. */
const OPTIONS: Record<ScorerName, readonly string[]> = {
  completion: [],
  latency: [],
  tool_errors: [],
  non_empty: [],
  groundedness: [],
  faithfulness: [],
  exact_match: ['case_sensitive', 'trim'],
  string_check: ['operation'],
  fuzzy_match: ['threshold'],
  text_similarity: ['metric', 'threshold'],
  json_schema: ['schema'],
  judge: ['rubric', 'model'],
};

function booleanOption(value: unknown, fallback: boolean, param: string): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new SpecProblem(`\`${param}\` must be true or false.`, param);
  return value;
}

function choiceOption<T extends string>(value: unknown, choices: readonly T[], param: string): T {
  if (typeof value !== 'string' || !choices.includes(value as T)) {
    throw new SpecProblem(`\`${param}\` must be one of ${choices.join(', ')}.`, param);
  }
  return value as T;
}

function thresholdOption(value: unknown, param: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0 || value > 1) {
    throw new SpecProblem('`threshold` must be a number from 0 to 1.', param);
  }
  return value;
}

function textOption(value: unknown, max: number, param: string): string {
  if (typeof value !== 'string' || value === '') throw new SpecProblem(`\`${param}\` must be a non-empty string.`, param);
  if (value.length > max) throw new SpecProblem(`\`${param}\` is longer than the ${max} characters allowed.`, param);
  return value;
}

function schemaOption(value: unknown, param: string): Record<string, unknown> {
  if (!isObject(value)) throw new SpecProblem(`\`${param}\` must be a JSON Schema object.`, param);
  const shape = shapeProblem(value);
  if (shape) throw new SpecProblem(`\`${param}\` ${shape}.`, param);
  const bytes = Buffer.byteLength(JSON.stringify(value));
  if (bytes > MAX_SCORER_SCHEMA_BYTES) {
    throw new SpecProblem(`\`${param}\` is ${bytes} bytes as JSON, more than the ${MAX_SCORER_SCHEMA_BYTES} allowed.`, param);
  }
  const compiled = compiledSchema(value);
  if ('problem' in compiled) throw new SpecProblem(`\`${param}\` ${compiled.problem}.`, param);
  return value;
}

function specOf(entry: unknown, param: string): ScorerSpec {
  const fields = typeof entry === 'string' ? { name: entry } : entry;
  if (!isObject(fields) || typeof fields.name !== 'string') {
    throw new SpecProblem(`\`${param}\` must be a scorer's name, or an object with its \`name\` and options.`, param);
  }
  const name = fields.name as ScorerName;
  if (!SCORER_NAMES.includes(name)) {
    throw new SpecProblem(`${JSON.stringify(fields.name)} is not a scorer; the scorers are ${SCORER_NAMES.join(', ')}.`, `${param}.name`);
  }
  const unknown = Object.keys(fields).find((key) => key !== 'name' && !OPTIONS[name].includes(key));
  if (unknown !== undefined) {
    const takes = OPTIONS[name].length ? `takes ${OPTIONS[name].map((o) => `\`${o}\``).join(', ')}` : 'takes no options';
    throw new SpecProblem(`The ${name} scorer ${takes}, not \`${unknown}\`.`, `${param}.${unknown}`);
  }
  switch (name) {
    case 'exact_match':
      return {
        name,
        case_sensitive: booleanOption(fields.case_sensitive, true, `${param}.case_sensitive`),
        trim: booleanOption(fields.trim, true, `${param}.trim`),
      };
    case 'string_check':
      return { name, operation: choiceOption(fields.operation, STRING_CHECK_OPERATIONS, `${param}.operation`) };
    case 'fuzzy_match': {
      const threshold = thresholdOption(fields.threshold, `${param}.threshold`);
      return threshold === undefined ? { name } : { name, threshold };
    }
    case 'text_similarity': {
      const metric = choiceOption(fields.metric, SIMILARITY_METRICS, `${param}.metric`);
      const threshold = thresholdOption(fields.threshold, `${param}.threshold`);
      return threshold === undefined ? { name, metric } : { name, metric, threshold };
    }
    case 'json_schema':
      return { name, schema: schemaOption(fields.schema, `${param}.schema`) };
    case 'judge': {
      const rubric = textOption(fields.rubric, MAX_RUBRIC_CHARS, `${param}.rubric`);
      if (fields.model === undefined) return { name, rubric };
      return { name, rubric, model: textOption(fields.model, MAX_MODEL_NAME_CHARS, `${param}.model`) };
    }
    default:
      return { name };
  }
}

/**
 * The scorers `value` names, in their normal form, or the first problem with them and where it is. A scorer is
 * named once at most: its scores are told apart by its name.
 */
export function checkScorerSpecs(value: unknown, param = 'scorers'): ScorerSpecsCheck {
  try {
    if (!Array.isArray(value)) throw new SpecProblem(`\`${param}\` must be a list of scorers.`, param);
    if (value.length > MAX_SCORERS) throw new SpecProblem(`\`${param}\` names more than the ${MAX_SCORERS} scorers allowed.`, param);
    const specs = value.map((entry, n) => specOf(entry, `${param}.${n}`));
    const seen = new Set<string>();
    for (const [n, spec] of specs.entries()) {
      if (seen.has(spec.name))
        throw new SpecProblem(`The ${spec.name} scorer is named more than once.`, `${param}.${n}`, 'duplicate_scorer');
      seen.add(spec.name);
    }
    return { ok: true, specs };
  } catch (err) {
    if (err instanceof SpecProblem) return { ok: false, code: err.code, problem: err.message, param: err.param };
    throw err;
  }
}

/** The models `specs` name (judges'), for the caller to check against the catalogue. */
export function modelsNamed(specs: readonly ScorerSpec[]): { model: string; index: number }[] {
  return specs.flatMap((spec, index) => (spec.name === 'judge' && spec.model !== undefined ? [{ model: spec.model, index }] : []));
}

/** The scorers an experiment uses when neither it nor its dataset names any: `completion`, and `exact_match` when any item has an answer. */
export function defaultScorers(anyExpected: boolean): ScorerSpec[] {
  const checked = checkScorerSpecs(anyExpected ? ['completion', 'exact_match'] : ['completion']);
  return checked.ok ? checked.specs : [];
}

/**
 * An experiment's stored scorers in their normal form. Experiments made before every scorer was taken stored
 * names alone; a scorer that no longer checks is left out rather than failing the items.
 */
export function storedScorers(value: unknown): ScorerSpec[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((entry) => {
    const checked = checkScorerSpecs([entry]);
    return checked.ok ? checked.specs : [];
  });
}
