/**
 * Reading an OpenAI Evals export as a dataset: the eval's testing criteria become scorers where one of ours
 * judges the same thing, its items become dataset items (the input from a chosen field or template, the expected
 * answer from the criteria's reference), and whatever has no counterpart here is listed with why.
 */
import { MAX_RUBRIC_CHARS, type ScorerSpec } from '../../../workflows/experiments/client.js';
import { compiledSchema } from '../../../tools/argument-schemas.js';

/** An eval's testing criterion as its API gives it: `type` and `name`, then the fields of its kind. */
export type Criterion = { type: string; name?: string } & Record<string, unknown>;

export interface EvalMapping {
  scorers: ScorerSpec[];
  /** The template each item's expected answer comes from, when a criterion compares the answer with one. */
  expected: string | null;
  mapped: { criterion: string; type: string; scorer: string }[];
  unmapped: { criterion: string; type: string; reason: string }[];
}

/** The template the answer is in, as the Evals API writes it in a criterion's `input`. */
const ANSWER = /^\s*\{\{\s*sample\.output_text\s*\}\}\s*$/;
const PLACEHOLDER = /\{\{\s*([^{}]*?)\s*\}\}/g;
/** The fields tried, in order, for the input when the request names none. */
export const INPUT_FIELDS = ['input', 'question', 'prompt', 'query'] as const;

const nameOf = (criterion: Criterion, n: number) =>
  typeof criterion.name === 'string' && criterion.name ? criterion.name : `testing_criteria.${n}`;

/** A model grader's prompt as text: each message's role and content (text parts joined). */
function promptText(input: unknown): string {
  if (typeof input === 'string') return input;
  if (!Array.isArray(input)) return '';
  return input
    .map((message: unknown) => {
      const { role, content } = (typeof message === 'object' && message !== null ? message : {}) as { role?: unknown; content?: unknown };
      const parts = Array.isArray(content) ? content : [content];
      const text = parts
        .map((part: unknown) =>
          typeof part === 'string'
            ? part
            : typeof part === 'object' && part !== null && 'text' in part
              ? String((part as { text: unknown }).text)
              : '',
        )
        .join('\n');
      return `${typeof role === 'string' ? role : 'user'}: ${text}`;
    })
    .join('\n');
}

const TEMPLATE_NOTE =
  "In the prompt, {{sample.output_text}} stands for the answer being graded and {{item.<field>}} for the case's fields (the request and the expected answer).";

function rubricOf(criterion: Criterion): string | null {
  const prompt = promptText(criterion.input);
  if (prompt.trim() === '') return null;
  const lines = [
    `Grade as this grader prompt asks (OpenAI eval grader "${String(criterion.name ?? criterion.type)}"):`,
    prompt,
    TEMPLATE_NOTE,
  ];
  if (criterion.type === 'label_model') {
    const labels = Array.isArray(criterion.labels) ? criterion.labels.map(String) : [];
    const passing = Array.isArray(criterion.passing_labels) ? criterion.passing_labels.map(String) : [];
    lines.push(
      `Choose one label of: ${labels.join(', ')}. Score 1 when the label you choose is one of the passing labels (${passing.join(', ')}), else 0.`,
    );
  } else {
    const range = Array.isArray(criterion.range) && criterion.range.length === 2 ? criterion.range.map(Number) : [0, 1];
    const pass = typeof criterion.pass_threshold === 'number' ? ` A grade of ${criterion.pass_threshold} or more passes.` : '';
    lines.push(
      `Grade from ${range[0]} to ${range[1]}, then give the score as (grade - ${range[0]}) / (${range[1]} - ${range[0]}), from 0 to 1.${pass}`,
    );
  }
  const rubric = lines.join('\n\n');
  return rubric.length > MAX_RUBRIC_CHARS ? `${rubric.slice(0, MAX_RUBRIC_CHARS - 1)}…` : rubric;
}

/**
 * The reference a criterion compares the answer with, when it does (its `input` is the answer); else why not.
 */
function referenceOf(criterion: Criterion): { reference: string } | { reason: string } {
  if (typeof criterion.input !== 'string' || !ANSWER.test(criterion.input)) {
    return { reason: 'it does not grade the answer ({{sample.output_text}}) but other text, which a dataset scorer cannot read' };
  }
  if (typeof criterion.reference !== 'string' || criterion.reference.trim() === '') return { reason: 'it names no reference' };
  return { reference: criterion.reference };
}

/** The scorers, expected answer and lists of what was and was not mapped, for an eval's testing criteria. */
export function mapCriteria(criteria: Criterion[]): EvalMapping {
  const mapping: EvalMapping = { scorers: [], expected: null, mapped: [], unmapped: [] };
  const taken = new Set<string>();
  for (const [n, criterion] of criteria.entries()) {
    const name = nameOf(criterion, n);
    const type = criterion.type;
    const skip = (reason: string) => mapping.unmapped.push({ criterion: name, type, reason });
    const take = (spec: ScorerSpec, reference?: string) => {
      if (taken.has(spec.name)) return skip(`a dataset names each scorer once, and an earlier criterion is already its ${spec.name}`);
      if (reference !== undefined) {
        if (mapping.expected !== null && mapping.expected !== reference) {
          return skip(`its reference ${reference} differs from ${mapping.expected}, which gives the items their expected answer`);
        }
        mapping.expected = reference;
      }
      taken.add(spec.name);
      mapping.scorers.push(spec);
      mapping.mapped.push({ criterion: name, type, scorer: spec.name });
    };
    switch (type) {
      case 'string_check': {
        const compared = referenceOf(criterion);
        if ('reason' in compared) {
          skip(compared.reason);
        } else if (criterion.operation === 'eq') {
          take({ name: 'exact_match', case_sensitive: true, trim: false }, compared.reference);
        } else if (criterion.operation === 'ne') {
          skip('`ne` passes when the answer differs from the reference; no scorer here inverts a match');
        } else if (criterion.operation === 'like' || criterion.operation === 'ilike') {
          skip(`\`${String(criterion.operation)}\` checks that the answer contains the reference; no scorer here checks containment`);
        } else {
          skip(`the operation ${JSON.stringify(criterion.operation)} is not one of eq, ne, like, ilike`);
        }
        break;
      }
      case 'text_similarity': {
        const compared = referenceOf(criterion);
        const threshold = criterion.pass_threshold;
        if ('reason' in compared) {
          skip(compared.reason);
        } else if (criterion.evaluation_metric !== 'fuzzy_match') {
          skip(`the metric ${JSON.stringify(criterion.evaluation_metric)} has no scorer here (fuzzy_match has: edit-distance similarity)`);
        } else if (threshold !== undefined && (typeof threshold !== 'number' || !(threshold >= 0 && threshold <= 1))) {
          skip('its pass_threshold is not a number from 0 to 1');
        } else {
          take(threshold === undefined ? { name: 'fuzzy_match' } : { name: 'fuzzy_match', threshold }, compared.reference);
        }
        break;
      }
      case 'label_model':
      case 'score_model': {
        const rubric = rubricOf(criterion);
        // The grader's model is OpenAI's; the judge runs on a model of this deployment's catalogue.
        if (rubric) take({ name: 'judge', rubric });
        else skip('its prompt (`input`) is empty');
        break;
      }
      case 'python':
        skip('it runs Python code, which the platform does not run');
        break;
      default:
        skip(`the grader type ${JSON.stringify(type)} has no counterpart here`);
    }
  }
  return mapping;
}

/** The fields of an item a template reads (`item.question` reads `question`). */
export function fieldsOf(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!.replace(/^item\./, '').split('.')[0]!);
}

/** A template as a field name alone is written (`question`), or as given when it holds a placeholder. */
export const templateOf = (field: string) => (field.includes('{{') ? field : `{{item.${field}}}`);

type Rendered = { value: unknown } | { missing: string };

function lookup(item: Record<string, unknown>, path: string): Rendered {
  const parts = path.replace(/^item\./, '').split('.');
  let value: unknown = item;
  for (const part of parts) {
    if (typeof value !== 'object' || value === null || !Object.hasOwn(value, part)) return { missing: path };
    value = (value as Record<string, unknown>)[part];
  }
  return { value };
}

/**
 * A template filled from an item: a template that is one placeholder alone gives the field's value as it is
 * (a number stays a number); text around placeholders gives text, each value in it as text or JSON.
 */
export function render(template: string, item: Record<string, unknown>): Rendered {
  const whole = /^\s*\{\{\s*([^{}]*?)\s*\}\}\s*$/.exec(template);
  if (whole) return lookup(item, whole[1]!);
  let missing: string | null = null;
  const text = template.replace(PLACEHOLDER, (_all, path: string) => {
    const found = lookup(item, path);
    if ('missing' in found) {
      missing ??= path;
      return '';
    }
    return typeof found.value === 'string' ? found.value : JSON.stringify(found.value);
  });
  return missing !== null ? { missing } : { value: text };
}

/** An exported line: `{"item": {...}}` (beside it a `sample` is read past), or the item's fields alone. */
export function itemFieldsOf(line: unknown): Record<string, unknown> | null {
  if (typeof line !== 'object' || line === null || Array.isArray(line)) return null;
  const { item } = line as { item?: unknown };
  if (item !== undefined)
    return typeof item === 'object' && item !== null && !Array.isArray(item) ? (item as Record<string, unknown>) : null;
  return line as Record<string, unknown>;
}

/** Why an item does not match the eval's item schema, or null when it does. */
export type ItemCheck = (item: Record<string, unknown>) => string | null;

/**
 * The check of each item against the export's `data_source_config.item_schema`, a JSON Schema a tenant wrote: held to
 * the bounds a tool's argument schema is (size, depth, patterns matched in linear time). Null when the export has
 * none; why it cannot be used when it cannot.
 */
export function itemSchemaCheck(dataSourceConfig: unknown): { check: ItemCheck } | { problem: string } | null {
  if (typeof dataSourceConfig !== 'object' || dataSourceConfig === null || !('item_schema' in dataSourceConfig)) return null;
  const schema = (dataSourceConfig as { item_schema: unknown }).item_schema;
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return { problem: 'is not a JSON Schema object' };
  const compiled = compiledSchema(schema as Record<string, unknown>);
  if ('problem' in compiled) return compiled;
  // The checker names the value it reads `arguments`; here it is the item.
  return { check: (item) => compiled.check(item)?.replace(/(^|, )arguments/g, '$1item') ?? null };
}
