/** Named errors, and the one place they become the one error body. */
import type { Middleware, ParameterizedContext } from 'koa';
import type { ApiState } from './context.js';
import { UnknownCursorError } from '../records/pagination.js';
import { DatabaseUnavailableError } from '../records/db.js';
import { drainUnreadBody } from './unread-body.js';

export type ErrorType =
  | 'invalid_request_error'
  | 'authentication_error'
  | 'permission_error'
  | 'not_found_error'
  | 'conflict_error'
  | 'rate_limit_error'
  | 'api_error'
  | 'service_unavailable_error';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: ErrorType,
    readonly code: string,
    message: string,
    readonly param: string | null = null,
    readonly headers: Record<string, string> = {},
    /** Fields of the error object beyond the four every error has (what a refusal was measured against). */
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

export const InvalidRequestError = (code: string, message: string, param: string | null = null) =>
  new ApiError(400, 'invalid_request_error', code, message, param);
export const AuthenticationError = (message = 'Provide a valid API key as `Authorization: Bearer <key>`.') =>
  new ApiError(401, 'authentication_error', 'invalid_api_key', message);
export const PermissionError = (scope: string) =>
  new ApiError(403, 'permission_error', 'missing_scope', `This API key lacks the \`${scope}\` scope.`);
/** No `what` with `id` in the caller's project; `param` names where the id came from (the path's `id`, or a field). */
export const NotFoundError = (what: string, id: string, param = 'id') =>
  new ApiError(404, 'not_found_error', 'resource_not_found', `No ${what} with id '${id}'.`, param);
export const ConflictError = (code: string, message: string, param: string | null = null) =>
  new ApiError(409, 'conflict_error', code, message, param);
export const PayloadTooLargeError = (message: string, param: string | null = null) =>
  new ApiError(413, 'invalid_request_error', 'file_too_large', message, param);
export const UnsupportedMediaError = (code: string, message: string, param: string | null = null) =>
  new ApiError(415, 'invalid_request_error', code, message, param);
export const RateLimitError = (code: string, message: string, retryAfterSeconds: number, details: Record<string, unknown> = {}) =>
  new ApiError(429, 'rate_limit_error', code, message, null, { 'Retry-After': String(retryAfterSeconds) }, details);
export const ServiceUnavailableError = (message: string) =>
  new ApiError(503, 'service_unavailable_error', 'dependency_unavailable', message, null, { 'Retry-After': '5' });

/** Errors thrown by body parsers and other libraries, which carry an HTTP status of their own. */
function fromLibraryError(err: { status?: number; type?: string; message?: string }): ApiError | null {
  if (err.status === 413) return new ApiError(413, 'invalid_request_error', 'body_too_large', 'The request body is too large.');
  if (err.status === 415) return UnsupportedMediaError('unsupported_content_type', 'Send the body as application/json.');
  // The JSON parser refuses an object key that would reach a prototype, at any depth (prototype poisoning).
  if (err.status === 400 && err.message?.includes('forbidden prototype property'))
    return InvalidRequestError('invalid_json', 'The body holds the object key "__proto__", which is refused at any depth: rename it.');
  if (err.status === 400 || err.type === 'entity.parse.failed') return InvalidRequestError('invalid_json', 'The body is not valid JSON.');
  if (err.status !== undefined && err.status >= 400 && err.status < 500) {
    return new ApiError(err.status, 'invalid_request_error', 'invalid_request', err.message ?? 'Invalid request.');
  }
  return null;
}

// Connection failures of Temporal (gRPC UNAVAILABLE) and the blob store; PostgreSQL's come typed from
// the records layer. The request was fine, a dependency was not, and the client should retry.
const UNAVAILABLE_SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN']);

function isDependencyOutage(err: object): boolean {
  // The Temporal client wraps the gRPC error it got in one of its own (a ServiceError), as its cause.
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    if (e instanceof DatabaseUnavailableError) return true;
    const { code } = e as { code?: unknown };
    if (typeof code === 'string' && UNAVAILABLE_SOCKET_CODES.has(code)) return true;
    if (code === 14 || code === 4) return true; // gRPC UNAVAILABLE, DEADLINE_EXCEEDED (a dependency that did not answer in time)
  }
  return false;
}

export function toApiError(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (typeof err === 'object' && err !== null && isDependencyOutage(err)) {
    return ServiceUnavailableError('A service the API depends on is unavailable; retry shortly.');
  }
  if (err instanceof UnknownCursorError) return InvalidRequestError('invalid_cursor', err.message, err.param);
  if (typeof err === 'object' && err !== null) return fromLibraryError(err as { status?: number });
  return null;
}

export const errorBody = (err: ApiError) => ({
  error: { type: err.type, code: err.code, message: err.message, param: err.param, ...err.details },
});

export function handleErrors(): Middleware<ApiState> {
  return async (ctx, next) => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new ApiError(404, 'not_found_error', 'route_not_found', `No route for ${ctx.method} ${ctx.path}.`);
      }
      if (ctx.status === 405 && ctx.body === undefined) {
        throw new ApiError(405, 'invalid_request_error', 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`);
      }
    } catch (err) {
      const apiError = refusalOf(ctx, err);
      answerRefusal(ctx, apiError, errorBody(apiError));
    }
  };
}

/** The ApiError a failed request answers with: its own, or a 500 (logged) for an error nothing here recognises. */
export function refusalOf(ctx: ParameterizedContext<ApiState>, err: unknown): ApiError {
  const apiError = toApiError(err);
  if (apiError) return apiError;
  ctx.state.log.error({ err }, 'unhandled error');
  return new ApiError(500, 'api_error', 'internal_error', 'The server failed to handle the request.');
}

/**
 * Answers a refusal with `body` (the API's error body, or a protocol's own): its status and headers, its code for
 * the request log, and the unread request body drained.
 */
export function answerRefusal(ctx: ParameterizedContext<ApiState>, apiError: ApiError, body: unknown): void {
  ctx.status = apiError.status;
  ctx.set(apiError.headers);
  ctx.body = body;
  ctx.state.errorCode = apiError.code;
  drainUnreadBody(ctx);
}
