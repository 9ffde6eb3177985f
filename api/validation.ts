/**
 * Request validation against api/openapi.yaml. A route names its operation; the headers, query string and
 * JSON body that operation declares are checked, and the handler receives them typed from the generated
 * `operations` types: the document is the one source of both the checks and the types.
 */
import type { Middleware } from 'koa';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { koaBody } from 'koa-body';
import { openapiDocument, findOperation, parametersOf, type OpenApiParameter } from './openapi-document.js';
import { InvalidRequestError, NotFoundError, UnsupportedMediaError } from './errors.js';
import type { ApiContext, ApiState } from './context.js';
import type { operations } from './generated/openapi.js';
import { idleWhile } from './fair-admission.js';
import { depthProblem } from '../records/json-depth.js';
import { halfPairIn } from '../models/storable-text.js';

export type OperationId = keyof operations;

type JsonBodyOf<Id extends OperationId> = operations[Id] extends { requestBody: { content: { 'application/json': infer Body } } }
  ? Body
  : undefined;
// operation() applies the document's defaults, so a defaulted parameter is always present.
type Defaulted<Query> = Query & Required<Pick<Query, Extract<keyof Query, 'limit' | 'order' | 'bucket_width'>>>;
type QueryOf<Id extends OperationId> = operations[Id]['parameters'] extends { query?: infer Query }
  ? [Query] extends [never | undefined]
    ? Record<string, never>
    : Defaulted<NonNullable<Query>>
  : Record<string, never>;

type PathOf<Id extends OperationId> = operations[Id]['parameters'] extends { path: infer Path }
  ? [Path] extends [never | undefined]
    ? Record<string, never>
    : Path
  : Record<string, never>;

export interface Input<Id extends OperationId> {
  path: PathOf<Id>;
  query: QueryOf<Id>;
  body: JsonBodyOf<Id>;
}

const DOCUMENT_ID = 'agentplane-openapi';
// `verbose` keeps the offending value on each error, for the messages that name it (`not`). With
// `discriminator`, a tool is checked against the branch its `type` names only, and its errors are that
// branch's; Ajv reads the branch from each one's `type` constant and refuses a `mapping`, which the
// document keeps for other readers.
const bodies = new Ajv2020({ strict: false, allErrors: false, verbose: true, discriminator: true });
const withoutMappings: unknown = JSON.parse(JSON.stringify(openapiDocument), (key, value: unknown) =>
  key === 'discriminator' ? { propertyName: (value as { propertyName: string }).propertyName } : value,
);
// The document is added whole, for its schemas to be referred to, and not checked against the meta-schema: that
// looks into none of them (they sit under `components` and `paths`, which it does not enter) and cost every process
// a fifth of a second as it started. The contract test checks each schema instead.
const NOT_CHECKED_AGAINST_META_SCHEMA = false;
bodies.addSchema({ ...(withoutMappings as object), $id: DOCUMENT_ID }, undefined, undefined, NOT_CHECKED_AGAINST_META_SCHEMA);
const parameters = new Ajv2020({ strict: false, allErrors: false, coerceTypes: true, useDefaults: true });
parameters.addSchema({ ...openapiDocument, $id: DOCUMENT_ID }, undefined, undefined, NOT_CHECKED_AGAINST_META_SCHEMA);

// PostgreSQL text cannot hold U+0000, nor jsonb half of a surrogate pair (a JSON `\ud83d` without the `\ude00` that
// completes it, which is no character), so no string a request carries may hold either: each way in (the URL, JSON
// bodies, multipart metadata) refuses it before anything is stored, and the document says so (its `Text` schema).
export const hasNul = (text: string) => text.includes('\u0000');
const NUL = 'the NUL character (U+0000)';

/** What in `text` no string of a request may hold, named ("the NUL character (U+0000)"); null if nothing. */
export function unstorable(text: string): string | null {
  if (hasNul(text)) return NUL;
  const half = halfPairIn(text);
  return half ? `half of a surrogate pair (\`${half}\` without its other half)` : null;
}

/** The dotted path of the first string in `value`, or key, that holds what no string of a request may, and what. */
export function unstorablePath(value: unknown, path: string[] = []): { path: string; holds: string } | null {
  if (typeof value === 'string') {
    const holds = unstorable(value);
    return holds ? { path: path.join('.'), holds } : null;
  }
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    const holds = unstorable(key);
    if (holds) return { path: [...path, key].join('.'), holds };
    const found = unstorablePath(item, [...path, key]);
    if (found !== null) return found;
  }
  return null;
}

const textRefused = (param: string | null, holds = NUL) =>
  InvalidRequestError('invalid_parameter', `${param ? `\`${param}\`` : 'The URL'} must not contain ${holds}.`, param);

/** Refuses a JSON value holding a string that no request may (unstorable), naming where it is. */
function refuseUnstorable(value: unknown): void {
  const found = unstorablePath(value);
  if (found) throw textRefused(found.path || null, found.holds);
}

/** Refuses a URL holding `%00` (the only way a NUL reaches a path or a query) before any route sees it. */
export function refuseNulInUrl(): Middleware<ApiState> {
  return async (ctx, next) => {
    if (/%00/i.test(ctx.url)) {
      const param = Object.entries(ctx.query).find(([name, value]) => hasNul(name) || [value ?? ''].flat().some(hasNul))?.[0];
      throw textRefused(param ?? null);
    }
    await next();
  };
}

// Errors that only say a value is not of some branch's kind.
const KIND_ONLY = new Set(['type', 'const']);
const depthOf = (error: ErrorObject) => error.instancePath.split('/').length;

/**
 * The error that says most. Under `oneOf` or `anyOf` Ajv reports a failure from every branch; the telling
 * one comes from the branch the value names (below), or reaches deepest into the value, or, as deep, says more
 * than that the value is not a branch's kind.
 */
function mostTelling(errors: ErrorObject[]): ErrorObject | undefined {
  // What an array lacks is told by `contains`, not by the items that do not supply it.
  const lacking = errors.find((e) => e.keyword === 'contains');
  if (lacking) return lacking;
  const untagged = errors.find((e) => e.keyword === 'discriminator');
  if (untagged) return tagError(untagged);
  const named = errors
    .filter((e) => e.keyword === 'oneOf' || e.keyword === 'anyOf')
    .sort((a, b) => depthOf(a) - depthOf(b))
    .map(namedBranchError)
    .find((e) => e !== undefined);
  if (named) return named;
  const branches = errors.filter((e) => e.keyword !== 'oneOf' && e.keyword !== 'anyOf');
  const better = (e: ErrorObject, best: ErrorObject) =>
    depthOf(e) > depthOf(best) || (depthOf(e) === depthOf(best) && KIND_ONLY.has(best.keyword) && !KIND_ONLY.has(e.keyword));
  const best = branches.reduce<ErrorObject | undefined>((found, e) => (!found || better(e, found) ? e : found), undefined) ?? errors[0];
  if (best?.keyword !== 'required') return best;
  // Alternatives that each need a field the value lacks (`agent_id` or `network_id`): each is named.
  const alike = branches.filter((e) => e.keyword === 'required' && e.instancePath === best.instancePath);
  const missing = [...new Set(alike.map((e) => e.params.missingProperty as string))];
  return missing.length > 1 ? { ...best, params: { missingProperty: missing } } : best;
}

/**
 * A tool (or any `oneOf` with a `discriminator`) whose `type` is missing, or names no branch: Ajv says only that
 * the tag "must be in oneOf"; the error names the field, and what it may be.
 */
function tagError(error: ErrorObject): ErrorObject {
  const tag = error.params.tag as string;
  const value = error.data as Record<string, unknown> | undefined;
  if (value !== null && typeof value === 'object' && value[tag] === undefined)
    return { ...error, keyword: 'required', params: { missingProperty: tag } };
  const branches = (error.parentSchema as Schema | undefined)?.oneOf;
  const allowed = [...new Set((Array.isArray(branches) ? branches : []).flatMap((branch) => pinnedProperties(branch).get(tag) ?? []))];
  return { ...error, keyword: 'enum', instancePath: `${error.instancePath}/${tag}`, params: { allowedValues: allowed } };
}

type Schema = Record<string, unknown>;

const referred = (schema: unknown): Schema | undefined => {
  const ref = (schema as Schema | undefined)?.$ref;
  if (typeof ref !== 'string') return schema as Schema | undefined;
  const found = ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, key) => (node as Schema | undefined)?.[key], openapiDocument);
  return found as Schema | undefined;
};

/** The values a branch allows for each property it pins with `const` or `enum` (a `type`, a `name`, a `mode`). */
function pinnedProperties(branch: unknown): Map<string, unknown[]> {
  const pinned = new Map<string, unknown[]>();
  const properties = referred(branch)?.properties as Record<string, Schema> | undefined;
  for (const [name, property] of Object.entries(properties ?? {})) {
    if ('const' in property) pinned.set(name, [property.const]);
    else if (Array.isArray(property.enum)) pinned.set(name, property.enum);
  }
  return pinned;
}

const branchValidators = new WeakMap<object, ValidateFunction>();
function branchValidator(branch: object): ValidateFunction {
  let validate = branchValidators.get(branch);
  if (!validate) branchValidators.set(branch, (validate = bodies.compile(anchored(branch) as object)));
  return validate;
}

/**
 * What is wrong with a value under a `oneOf` whose branches are told apart by a property each pins (a router's
 * `type`, a scorer's `name`): the failure of the branches the value's own `type` (or `name`) names, not that it
 * is not another branch's. When it names none, that property is what is wrong, and the error lists what it may
 * be. Undefined when the branches pin no property in common, or the value does not hold it.
 */
function namedBranchError(choice: ErrorObject): ErrorObject | undefined {
  const branches = choice.schema;
  const value = choice.data as Record<string, unknown> | undefined;
  if (!Array.isArray(branches) || value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  const pins = branches.map(pinnedProperties);
  if (pins.length === 0) return undefined;
  // The properties that tell the branches apart: those every branch pins. One a single branch pins (a
  // scorer's `metric`) is that branch's own field, wrong or right only there.
  const held = [...pins[0]!.keys()].filter((name) => pins.every((pin) => pin.has(name)) && value[name] !== undefined);
  if (held.length === 0) return undefined;
  const named = branches.filter((_, i) => held.every((name) => pins[i]!.get(name)!.includes(value[name])));
  if (named.length === branches.length) return undefined;
  if (named.length === 0) {
    const name = held.find((key) => !pins.some((pin) => pin.get(key)!.includes(value[key]))) ?? held[0]!;
    const allowed = [...new Set(pins.flatMap((pin) => pin.get(name) ?? []))];
    return { ...choice, keyword: 'enum', instancePath: `${choice.instancePath}/${name}`, params: { allowedValues: allowed } };
  }
  const failures: ErrorObject[] = [];
  for (const branch of named) {
    const validate = branchValidator(branch as object);
    // A value two branches take fails `oneOf` for that, which Ajv's own error tells.
    if (validate(value)) return undefined;
    failures.push(...(validate.errors ?? []).map((e) => ({ ...e, instancePath: `${choice.instancePath}${e.instancePath}` })));
  }
  return mostTelling(failures);
}

/** Turns the most telling schema violation into a 400 that names the offending parameter. */
function violation(errors: ErrorObject[] | null | undefined): Error {
  const error = errors ? mostTelling(errors) : undefined;
  const path = (error?.instancePath ?? '').split('/').filter(Boolean);
  if (error?.keyword === 'required') {
    const names = [error.params.missingProperty as string | string[]].flat().map((missing) => [...path, missing].join('.'));
    const listed = names.map((name) => `\`${name}\``).join(' or ');
    return InvalidRequestError('missing_parameter', `Missing required parameter ${listed}.`, names[0]!);
  }
  if (error?.keyword === 'additionalProperties') {
    const name = [...path, error.params.additionalProperty as string].join('.');
    return InvalidRequestError('unknown_parameter', `Unknown parameter \`${name}\`.`, name);
  }
  const name = path.join('.') || null;
  const subject = name ? `\`${name}\`` : 'The body';
  const description = (error?.parentSchema as { description?: unknown } | undefined)?.description;
  if (error?.keyword === 'not' && typeof description === 'string' && name === null) {
    // A rule on the body as a whole (two fields that exclude each other) is told in the document's words.
    return InvalidRequestError('invalid_parameter', `${subject} is not valid: ${description}`, name);
  }
  if (error?.keyword === 'not' && error.data !== undefined) {
    // Ajv's own words ("must NOT be valid") do not say which value is refused.
    return InvalidRequestError('invalid_parameter', `${subject} may not be ${JSON.stringify(error.data)}.`, name);
  }
  if ((error?.keyword === 'pattern' || error?.keyword === 'contains') && typeof description === 'string') {
    // A described rule (a URL's grammar, say) reads better in the document's words than as a regex.
    return InvalidRequestError('invalid_parameter', `${subject} is not valid: ${description}`, name);
  }
  const bound = error ? boundWords(error) : null;
  if (bound) return InvalidRequestError('invalid_parameter', `${subject} ${bound}.`, name);
  if (error?.keyword === 'uniqueItems') {
    const [first, second] = [error.params.j as number, error.params.i as number].sort((a, b) => a - b);
    return InvalidRequestError(
      'invalid_parameter',
      `${subject} must not hold the same item twice: items ${first} and ${second} are the same.`,
      name,
    );
  }
  const allowed = error?.keyword === 'enum' ? (error.params.allowedValues as unknown[]) : [];
  if (allowed.length > 0 && allowed.length <= MAX_LISTED_VALUES) {
    const listed = allowed.map((value) => (typeof value === 'string' ? value : JSON.stringify(value))).join(', ');
    return InvalidRequestError('invalid_parameter', `${subject} must be one of: ${listed}.`, name);
  }
  return InvalidRequestError('invalid_parameter', `${subject} ${error?.message ?? 'is invalid'}.`, name);
}

/** A length or count bound broken, in words ("must not be empty", "must be at most 200 characters"), or null. */
function boundWords(error: ErrorObject): string | null {
  const limit = error.params.limit as number;
  const counted = (one: string, many: string) => `${limit.toLocaleString('en-US')} ${limit === 1 ? one : many}`;
  switch (error.keyword) {
    case 'minLength':
      return limit === 1 ? 'must not be empty' : `must be at least ${counted('character', 'characters')} long`;
    case 'maxLength':
      return `must be at most ${counted('character', 'characters')} long`;
    case 'minItems':
      return `must hold at least ${counted('item', 'items')}`;
    case 'maxItems':
      return `must hold at most ${counted('item', 'items')}`;
    case 'minProperties':
      return `must hold at least ${counted('field', 'fields')}`;
    case 'maxProperties':
      return `must hold at most ${counted('field', 'fields')}`;
    default:
      return null;
  }
}

// The most values a refusal lists of those a parameter may take; past it, the document lists them.
const MAX_LISTED_VALUES = 24;

// Parameter schemas point into the document; anchor their references to it.
const anchored = (schema: unknown) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${DOCUMENT_ID}#/components/`));

function parameterValidator(declared: OpenApiParameter[], where: OpenApiParameter['in']): ValidateFunction | null {
  const chosen = declared.filter((p) => p.in === where);
  if (where !== 'query' && chosen.length === 0) return null;
  const properties = Object.fromEntries(chosen.map((p) => [where === 'header' ? p.name.toLowerCase() : p.name, p.schema]));
  const required = chosen.filter((p) => p.required).map((p) => (where === 'header' ? p.name.toLowerCase() : p.name));
  // Headers other than the declared ones are the client's business; query parameters are not.
  return parameters.compile(anchored({ type: 'object', properties, required, additionalProperties: where === 'header' }));
}

function jsonBodyValidator(operationId: OperationId): ValidateFunction | null {
  const { operation } = findOperation(operationId);
  const content = (operation.requestBody as { content?: Record<string, { schema?: { $ref?: string } }> } | undefined)?.content;
  const ref = content?.['application/json']?.schema?.$ref;
  if (!ref) return null;
  const validate = bodies.getSchema(`${DOCUMENT_ID}${ref}`);
  if (!validate) throw new Error(`no schema ${ref} in api/openapi.yaml`);
  return validate;
}

// Parsed inside each route's chain, after authorization and audit, so that a body the API refuses
// (malformed, too large) is refused for a known caller and audited like any other failed request.
const parseJson = koaBody({ multipart: false, urlencoded: false, text: false, json: true, jsonLimit: '1mb', jsonStrict: true });

/**
 * The handler of one operation: its declared headers (checked before any body is read, so an upload with
 * a bad `Idempotency-Key` is refused before it streams), query string (coerced, defaults applied) and JSON
 * body are validated, and reach the handler typed.
 */
export function operation<Id extends OperationId>(
  operationId: Id,
  handler: (ctx: ApiContext, input: Input<Id>) => Promise<void>,
): Middleware<ApiState> {
  findOperation(operationId); // an operation the document lacks fails as the app is made, not at its first request
  return async (ctx) => {
    const {
      declared,
      deepObjects,
      lists,
      headers: validateHeaders,
      path: validatePath,
      query: validateQuery,
      body: validateBody,
    } = validatorsOf(operationId);
    if (validateHeaders) {
      const headers: Record<string, string> = {};
      for (const { name } of declared.filter((p) => p.in === 'header')) {
        const value = ctx.headers[name.toLowerCase()];
        if (value !== undefined) headers[name.toLowerCase()] = Array.isArray(value) ? value.join(', ') : value;
      }
      if (!validateHeaders(headers))
        throw violation(validateHeaders.errors?.map((e) => ({ ...e, instancePath: headerName(declared, e.instancePath) })));
    }
    const path = { ...(ctx.params as Record<string, string> | undefined) };
    // An id longer than any the platform issues names nothing.
    if (validatePath && !validatePath(path)) throw NotFoundError('object', String(Object.values(path)[0] ?? ''));
    const query: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(ctx.query)) {
      if (Array.isArray(value) && !lists.has(name)) throw InvalidRequestError('invalid_parameter', `\`${name}\` may be given once.`, name);
      // `name[key]`: the key is whatever stands between the first `[` and the last `]`, brackets included.
      const nested = /^([^[\]]+)\[(.*)\]$/s.exec(name);
      if (nested && deepObjects.has(nested[1]!)) {
        const object = (query[nested[1]!] ??= {}) as Record<string, unknown>;
        object[nested[2]!] = value;
      } else if (lists.has(name) && value !== undefined) {
        // A list comes comma-separated, repeated, or both; an empty value is the empty list.
        query[name] = [value].flat().flatMap((item) => (item === '' ? [] : item.split(',')));
      } else query[name] = value;
    }
    if (validateQuery && !validateQuery(query)) throw violation(validateQuery.errors);
    let body: unknown;
    if (validateBody) {
      if (!ctx.is('application/json')) throw UnsupportedMediaError('unsupported_content_type', 'Send the body as application/json.');
      await idleWhile(ctx, () => parseJson(ctx, async () => {}));
      body = ctx.request.body;
      const deep = depthProblem(body);
      if (deep) throw InvalidRequestError('invalid_json', `The body ${deep}.`);
      refuseUnstorable(body);
      if (!validateBody(body)) throw violation(validateBody.errors);
    }
    await handler(ctx, { path, query, body } as Input<Id>);
  };
}

// Ajv reports `/idempotency-key`; the error names the header as the document spells it.
function headerName(declared: OpenApiParameter[], instancePath: string): string {
  const lower = instancePath.replace(/^\//, '');
  return `/${declared.find((p) => p.name.toLowerCase() === lower)?.name ?? lower}`;
}

interface Validators {
  declared: OpenApiParameter[];
  /** The query parameters sent as `name[key]=value` pairs. */
  deepObjects: Set<string>;
  /** The query parameters that are lists. */
  lists: Set<string>;
  headers: ValidateFunction | null;
  path: ValidateFunction | null;
  query: ValidateFunction | null;
  body: ValidateFunction | null;
}

// Compiled at an operation's first request, once per process however many apps it makes (Ajv keeps every schema it
// compiles). Compiling all of them as the API started took it a second and more, for operations it may never serve.
const compiled = new Map<OperationId, Validators>();
function validatorsOf(operationId: OperationId): Validators {
  let found = compiled.get(operationId);
  if (!found) {
    const declared = parametersOf(findOperation(operationId).operation);
    found = {
      declared,
      deepObjects: new Set(declared.filter((p) => p.in === 'query' && p.style === 'deepObject').map((p) => p.name)),
      lists: new Set(declared.filter((p) => p.in === 'query' && p.explode === false).map((p) => p.name)),
      headers: parameterValidator(declared, 'header'),
      path: parameterValidator(declared, 'path'),
      query: parameterValidator(declared, 'query'),
      body: jsonBodyValidator(operationId),
    };
    compiled.set(operationId, found);
  }
  return found;
}

function validatorOf(operationId: OperationId, what: 'body' | 'query'): ValidateFunction {
  const validate = validatorsOf(operationId)[what];
  if (!validate) throw new Error(`${operationId} takes no ${what}`);
  return validate;
}

/**
 * The JSON body of `operationId` as operation() would hand it to its handler, for a protocol that carries the
 * same request another way (an MCP tool's arguments); the same 400 when it is not valid.
 */
export function checkJsonBody<Id extends OperationId>(operationId: Id, body: unknown): JsonBodyOf<Id> {
  refuseUnstorable(body);
  const validate = validatorOf(operationId, 'body');
  if (!validate(body)) throw violation(validate.errors);
  return body as JsonBodyOf<Id>;
}

/** The query of `operationId` checked and completed with its defaults, as operation() would hand it over. */
export function checkQuery<Id extends OperationId>(operationId: Id, query: Record<string, unknown>): QueryOf<Id> {
  refuseUnstorable(query);
  const copy = { ...query };
  const validate = validatorOf(operationId, 'query');
  if (!validate(copy)) throw violation(validate.errors);
  return copy as QueryOf<Id>;
}
