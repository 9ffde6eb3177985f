/** Request validation against api/openapi.yaml: JSON bodies by schema name, query strings by operation. */
import type { Middleware } from 'koa';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import { openapiDocument, findOperation, parametersOf } from './openapi-document.js';
import { InvalidRequestError, UnsupportedMediaError } from './errors.js';
import type { ApiState } from './context.js';
import { koaBody } from 'koa-body';

const DOCUMENT_ID = 'agentplane-openapi';
const bodies = new Ajv2020({ strict: false, allErrors: false });
bodies.addSchema({ ...openapiDocument, $id: DOCUMENT_ID });
const queries = new Ajv2020({ strict: false, allErrors: false, coerceTypes: true, useDefaults: true });
queries.addSchema({ ...openapiDocument, $id: DOCUMENT_ID });

export function schemaValidator(schemaName: string): ValidateFunction {
  const validate = bodies.getSchema(`${DOCUMENT_ID}#/components/schemas/${schemaName}`);
  if (!validate) throw new Error(`no schema ${schemaName} in api/openapi.yaml`);
  return validate;
}

// PostgreSQL text cannot hold U+0000, so no string a request carries may: each way in (the URL, JSON bodies,
// multipart metadata) refuses it before anything is stored, and the document says so (its `Text` schema).
export const hasNul = (text: string) => text.includes('\u0000');

/** The dotted path of the first string in `value`, or key, that holds the NUL character; null if none does. */
export function nulPath(value: unknown, path: string[] = []): string | null {
  if (typeof value === 'string') return hasNul(value) ? path.join('.') : null;
  if (typeof value !== 'object' || value === null) return null;
  for (const [key, item] of Object.entries(value)) {
    if (hasNul(key)) return [...path, key].join('.');
    const found = nulPath(item, [...path, key]);
    if (found !== null) return found;
  }
  return null;
}

const nulRefused = (param: string | null) =>
  InvalidRequestError('invalid_parameter', `${param ? `\`${param}\`` : 'The URL'} must not contain the NUL character (U+0000).`, param);

/** Refuses a URL holding `%00` (the only way a NUL reaches a path or a query) before any route sees it. */
export function refuseNulInUrl(): Middleware<ApiState> {
  return async (ctx, next) => {
    if (/%00/i.test(ctx.url)) {
      const param = Object.entries(ctx.query).find(([name, value]) => hasNul(name) || [value ?? ''].flat().some(hasNul))?.[0];
      throw nulRefused(param ?? null);
    }
    await next();
  };
}

/** Turns the first schema violation into a 400 that names the offending parameter. */
export function violation(errors: ErrorObject[] | null | undefined, root?: string): Error {
  const error = errors?.[0];
  const path = (error?.instancePath ?? '').split('/').filter(Boolean);
  if (root) path.unshift(root);
  if (error?.keyword === 'required') {
    const name = [...path, error.params.missingProperty as string].join('.');
    return InvalidRequestError('missing_parameter', `Missing required parameter \`${name}\`.`, name);
  }
  if (error?.keyword === 'additionalProperties') {
    const name = [...path, error.params.additionalProperty as string].join('.');
    return InvalidRequestError('unknown_parameter', `Unknown parameter \`${name}\`.`, name);
  }
  const name = path.join('.') || null;
  return InvalidRequestError('invalid_parameter', `${name ? `\`${name}\`` : 'The body'} ${error?.message ?? 'is invalid'}.`, name);
}

// Parsed inside each route's chain, after authorization and audit, so that a body the API refuses
// (malformed, too large) is refused for a known caller and audited like any other failed request.
const parseJson = koaBody({ multipart: false, urlencoded: false, text: false, json: true, jsonLimit: '1mb', jsonStrict: true });

/** Parses a JSON body (application/json only) and checks it against a component schema. */
export function validateBody(schemaName: string): Middleware<ApiState> {
  const validate = schemaValidator(schemaName);
  return async (ctx, next) => {
    if (!ctx.is('application/json')) throw UnsupportedMediaError('unsupported_content_type', 'Send the body as application/json.');
    await parseJson(ctx, async () => {});
    const nul = nulPath(ctx.request.body);
    if (nul !== null) throw nulRefused(nul || null);
    if (!validate(ctx.request.body)) throw violation(validate.errors);
    await next();
  };
}

/** Checks, coerces and defaults the query string of an operation into `ctx.state.query`. */
export function validateQuery(operationId: string): Middleware<ApiState> {
  const { operation } = findOperation(operationId);
  const properties: Record<string, unknown> = {};
  for (const parameter of parametersOf(operation)) if (parameter.in === 'query') properties[parameter.name] = parameter.schema;
  // Parameter schemas point into the document; anchor their references to it.
  const schema = JSON.parse(JSON.stringify({ type: 'object', properties, additionalProperties: false }).replaceAll('"#/components/', `"${DOCUMENT_ID}#/components/`));
  const validate = queries.compile(schema);
  return async (ctx, next) => {
    const query: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(ctx.query)) {
      if (Array.isArray(value)) throw InvalidRequestError('invalid_parameter', `\`${name}\` may be given once.`, name);
      query[name] = value;
    }
    if (!validate(query)) throw violation(validate.errors);
    ctx.state.query = query;
    await next();
  };
}
