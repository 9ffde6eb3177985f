/**
 * POST /v1/datasets/import: a dataset made from an OpenAI Evals export, all or nothing. The items' fields that are
 * neither their input nor their expected answer are kept as metadata where they fit; the rest are listed.
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited, respond } from '../../audit.js';
import { operation, unstorablePath, type Input } from '../../validation.js';
import { ApiError, InvalidRequestError } from '../../errors.js';
import { createOnce } from '../../idempotency.js';
import { depthProblem } from '../../../records/json-depth.js';
import { MAX_METADATA_KEY_LENGTH, MAX_METADATA_PAIRS, MAX_METADATA_VALUE_LENGTH } from '../files/metadata.js';
import { addItems, createDataset, type NewDatasetItem } from '../../../records/datasets.js';
import type { InputMessage } from '../../../records/runs.js';
import { presentDataset } from '../../../presenters/dataset.js';
import { checkedScorers } from './datasets.js';
import { MAX_EXPECTED_BYTES } from './items.js';
import { fieldsOf, INPUT_FIELDS, itemFieldsOf, itemSchemaCheck, mapCriteria, render, templateOf, type Criterion } from './openai-evals.js';

type ImportBody = Input<'importDataset'>['body'];

export const MAX_IMPORT_ITEMS = 1_000;
const MAX_INPUT_CHARS = 262_144;

const refused = (message: string, param: string) => InvalidRequestError('invalid_import', message, param);

/** The exported lines, each with the parameter that names it in an error. */
function linesOf(body: ImportBody): { line: unknown; param: string }[] {
  if (body.items !== undefined && body.items_jsonl !== undefined) throw refused('Give `items` or `items_jsonl`, not both.', 'items_jsonl');
  if (body.items !== undefined) return body.items.map((line, n) => ({ line, param: `items.${n}` }));
  const lines: { line: unknown; param: string }[] = [];
  // A file saved by an editor that marks it UTF-8 begins with a byte order mark, which is not JSON: it is read past.
  const jsonl = (body.items_jsonl ?? '').replace(/^\uFEFF/, '');
  for (const [n, text] of jsonl.split('\n').entries()) {
    if (text.trim() === '') continue;
    const param = `items_jsonl (line ${n + 1})`;
    let line: unknown;
    try {
      line = JSON.parse(text);
    } catch {
      throw refused(`Line ${n + 1} of \`items_jsonl\` is not JSON.`, param);
    }
    const deep = depthProblem(line);
    if (deep) throw refused(`Line ${n + 1} of \`items_jsonl\` ${deep}.`, param);
    // What no string of a request may hold (the NUL character, half a surrogate pair), which JSON can spell as an escape.
    const unfit = unstorablePath(line);
    if (unfit) throw refused(`Line ${n + 1} of \`items_jsonl\` holds ${unfit.holds}.`, param);
    lines.push({ line, param });
    if (lines.length > MAX_IMPORT_ITEMS)
      throw refused(`\`items_jsonl\` holds more than the ${MAX_IMPORT_ITEMS} items allowed.`, 'items_jsonl');
  }
  return lines;
}

/** An item's input: text is the user's message; a list of user and assistant messages is kept as it is. */
function inputOf(value: unknown, param: string): InputMessage[] {
  const isMessage = (m: unknown) =>
    typeof m === 'object' &&
    m !== null &&
    ['user', 'assistant'].includes((m as InputMessage).role) &&
    typeof (m as InputMessage).content === 'string';
  if (Array.isArray(value) && value.length > 0 && value.every(isMessage) && value.some((m: InputMessage) => m.role === 'user')) {
    return (value as { role: 'user' | 'assistant'; content: string }[]).map(({ role, content }) => ({ role, content }) as InputMessage);
  }
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  if (text.trim() === '') throw refused(`The input of \`${param}\` is empty.`, param);
  if (text.length > MAX_INPUT_CHARS)
    throw refused(`The input of \`${param}\` is longer than the ${MAX_INPUT_CHARS} characters allowed.`, param);
  return [{ role: 'user', content: text }];
}

/** Which of the items' other fields can be metadata (text, numbers and booleans short enough, in every item), and why the rest cannot. */
function metadataFields(items: Record<string, unknown>[], used: Set<string>) {
  const kept: string[] = [];
  const unmapped: { field: string; reason: string }[] = [];
  const fields = [...new Set(items.flatMap((item) => Object.keys(item)))].filter((field) => !used.has(field));
  for (const field of fields) {
    const values = items.map((item) => item[field]).filter((value) => value !== undefined && value !== null);
    const why =
      field.length > MAX_METADATA_KEY_LENGTH
        ? `its name is longer than the ${MAX_METADATA_KEY_LENGTH} characters a metadata key may have`
        : values.some((value) => typeof value === 'object')
          ? 'it holds objects or lists, and metadata holds text'
          : values.some((value) => String(value).length > MAX_METADATA_VALUE_LENGTH)
            ? `a value is longer than the ${MAX_METADATA_VALUE_LENGTH} characters a metadata value may have`
            : kept.length >= MAX_METADATA_PAIRS
              ? `an item keeps ${MAX_METADATA_PAIRS} metadata values at most`
              : null;
    if (why) unmapped.push({ field: `item.${field}`, reason: `${why}; it is neither the input nor the expected answer` });
    else kept.push(field);
  }
  return { kept, unmapped };
}

const ITEM_SCHEMA = 'eval.data_source_config.item_schema';

/** Each item against the export's item schema, when it has one: the first that does not match is refused, by its index. */
function checkItemSchema(dataSourceConfig: unknown, items: Record<string, unknown>[], lines: { param: string }[]): void {
  const schema = itemSchemaCheck(dataSourceConfig);
  if (schema === null) return;
  if ('problem' in schema) throw refused(`\`${ITEM_SCHEMA}\` ${schema.problem}.`, ITEM_SCHEMA);
  for (const [n, item] of items.entries()) {
    const problem = schema.check(item);
    if (problem !== null) {
      const { param } = lines[n]!;
      throw refused(`The item at index ${n} (\`${param}\`) does not match \`${ITEM_SCHEMA}\`: ${problem}.`, param);
    }
  }
}

export function datasetImportRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.post(
    '/v1/datasets/import',
    audited(deps.db, 'dataset.import', 'dataset'),
    requireScope('datasets:write'),
    operation('importDataset', async (ctx, { body }) => {
      const { projectId } = callerOf(ctx);
      const lines = linesOf(body);
      const items = lines.map(({ line, param }) => {
        const fields = itemFieldsOf(line);
        if (!fields) throw refused(`\`${param}\` is not an item: an object, or \`{"item": {...}}\`.`, param);
        return fields;
      });
      checkItemSchema(body.eval.data_source_config, items, lines);
      const mapping = mapCriteria(body.eval.testing_criteria as Criterion[]);
      const inputTemplate = body.input
        ? templateOf(body.input)
        : INPUT_FIELDS.map(templateOf).find((t) => items[0] && fieldsOf(t)[0]! in items[0]);
      if (items.length > 0 && !inputTemplate) {
        throw refused(
          `The items have none of the fields ${INPUT_FIELDS.join(', ')}: name the one that is the input with \`input\`.`,
          'input',
        );
      }
      const expectedTemplate = body.expected ? templateOf(body.expected) : mapping.expected;
      const used = new Set([...fieldsOf(inputTemplate ?? ''), ...fieldsOf(expectedTemplate ?? '')]);
      const metadata = metadataFields(items, used);

      const newItems: NewDatasetItem[] = items.map((item, n) => {
        const { param } = lines[n]!;
        const input = render(inputTemplate!, item);
        if ('missing' in input) throw refused(`\`${param}\` has no \`${input.missing}\`, which is the input.`, param);
        let expected: unknown = null;
        if (expectedTemplate) {
          const rendered = render(expectedTemplate, item);
          if ('missing' in rendered) throw refused(`\`${param}\` has no \`${rendered.missing}\`, which is the expected answer.`, param);
          expected = rendered.value;
          if (Buffer.byteLength(JSON.stringify(expected) ?? '') > MAX_EXPECTED_BYTES) {
            throw refused(`The expected answer of \`${param}\` is more than the ${MAX_EXPECTED_BYTES} bytes allowed as JSON.`, param);
          }
        }
        const pairs = metadata.kept.flatMap((field) =>
          item[field] === undefined || item[field] === null ? [] : [[field, String(item[field])]],
        );
        return { input: inputOf(input.value, param), fileIds: [], expected, metadata: Object.fromEntries(pairs) };
      });
      const scorers = await checkedScorers(deps, mapping.scorers);
      const name = body.name ?? (body.eval.name?.trim() ? body.eval.name.slice(0, 256) : 'Imported eval');

      const { created } = await createOnce(ctx, deps, body, async (tx) => {
        const dataset = await createDataset(tx, projectId, {
          name,
          description: body.description ?? '',
          metadata: body.metadata ?? {},
          scorers,
        });
        const added = await addItems(tx, dataset, newItems);
        return {
          status: 201,
          body: {
            id: dataset.id,
            object: 'dataset.import' as const,
            dataset: presentDataset({ ...dataset, item_count: added.length }),
            items_imported: added.length,
            mapped: mapping.mapped,
            unmapped: mapping.unmapped,
            unmapped_fields: metadata.unmapped,
          },
        };
      });
      respond(ctx, created);
    }),
  );
}

/**
 * `/v1/datasets/{id}` would take `import` for an id, and offer its GET and DELETE on this path: ahead of the routers,
 * this path answers for itself, POST alone (405 with `Allow: POST` for any other method).
 */
export function datasetImportMethods(): Middleware<ApiState> {
  return async (ctx, next) => {
    if (ctx.path !== '/v1/datasets/import' || ctx.method === 'POST') return next();
    ctx.set('Allow', 'POST');
    if (ctx.method !== 'OPTIONS') {
      throw new ApiError(405, 'invalid_request_error', 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`, null, {
        Allow: 'POST',
      });
    }
    ctx.status = 200;
    ctx.body = '';
  };
}
