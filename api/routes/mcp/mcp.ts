/**
 * POST /v1/mcp: the project's agents and networks as a Model Context Protocol server (streamable HTTP
 * transport, stateless: each POST carries one JSON-RPC message and gets a server of its own). Keys and scopes are
 * the REST API's. A call of an agent's tool streams its answer (progress, then the result) as Server-Sent
 * Events and holds one of the key's event stream slots; everything else is answered as one JSON body. Errors
 * before the protocol takes over (authentication, scopes, limits, bad JSON) keep their HTTP status and carry a
 * JSON-RPC error body; a 401 or 403 names its challenge in WWW-Authenticate.
 */
import type { Middleware } from 'koa';
import type Router from '@koa/router';
import type { ApiContext, ApiDeps, ApiState } from '../../context.js';
import { answerRefusal, ApiError, AuthenticationError, refusalOf } from '../../errors.js';
import { drainUnreadBody } from '../../unread-body.js';
import { InFlightCalls } from './in-flight-calls.js';

// JSON-RPC 2.0's own codes, for the answers given before the protocol (and the SDK, loaded with the first
// request that reaches it) takes over.
const PARSE_ERROR = -32700;
const INVALID_REQUEST = -32600;
const INTERNAL_ERROR = -32603;
// "Server error", as the SDK's transport answers its own HTTP-level refusals.
const SERVER_ERROR = -32000;

export function mcpRoutes(
  router: Router<ApiState>,
  deps: ApiDeps,
  authenticateKey: Middleware<ApiState>,
  limits: Middleware<ApiState>,
): void {
  const calls = new InFlightCalls();
  router.all('/v1/mcp', answerErrorsAsJsonRpc(), onlyPost(), sameOrigin(), bearerOnly(), authenticateKey, limits, async (ctx) => {
    const { serveMcp } = await import('./serve.js');
    await serveMcp(ctx, deps, calls);
  });
}

/** JSON-RPC's error codes for the HTTP answers given before the protocol takes over. */
function rpcCodeOf(err: ApiError): number {
  if (err.code === 'invalid_json') return PARSE_ERROR;
  if (err.code === 'invalid_request') return INVALID_REQUEST;
  return SERVER_ERROR;
}

function answerErrorsAsJsonRpc(): Middleware<ApiState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      // Once the stream has begun, the protocol answers for itself.
      if (ctx.respond === false || ctx.headerSent) return ctx.state.log.warn({ err }, 'MCP request failed after its answer began');
      const apiError = refusalOf(ctx, err);
      const code = apiError.status === 500 ? INTERNAL_ERROR : rpcCodeOf(apiError);
      const data = { type: apiError.type, code: apiError.code, ...(apiError.param ? { param: apiError.param } : {}) };
      answerRefusal(ctx, apiError, { jsonrpc: '2.0', id: null, error: { code, message: apiError.message, data } });
      if (apiError.status === 401) ctx.set('WWW-Authenticate', challengeOf(ctx, apiError));
    }
  };
}

// RFC 6750: a request without credentials is told the scheme alone; one with a bad key, why it was refused.
const challengeOf = (ctx: ApiContext, err: ApiError) =>
  ctx.get('authorization') === ''
    ? 'Bearer realm="agentplane"'
    : `Bearer realm="agentplane", error="invalid_token", error_description="${err.message.replaceAll('"', "'")}"`;

/** A stateless server offers no stream to GET and no session to DELETE: 405, as the transport specifies. */
function onlyPost(): Middleware<ApiState> {
  return async (ctx, next) => {
    if (ctx.method === 'POST') return next();
    ctx.status = 405;
    ctx.set('Allow', 'POST');
    ctx.body = {
      jsonrpc: '2.0',
      id: null,
      error: { code: SERVER_ERROR, message: `Method not allowed: this MCP server is stateless and takes POST only.` },
    };
    drainUnreadBody(ctx);
  };
}

/**
 * The transport asks servers to refuse an Origin they do not expect (DNS rebinding). Browsers send one; a page
 * of the API's own origin (the console) is the only one expected, and other clients send none.
 */
function sameOrigin(): Middleware<ApiState> {
  return async (ctx, next) => {
    const origin = ctx.get('origin');
    if (origin !== '' && origin !== `${ctx.protocol}://${ctx.host}`) {
      throw new ApiError(403, 'permission_error', 'origin_mismatch', `Requests from the origin ${origin} are refused.`);
    }
    await next();
  };
}

/** A key in the Authorization header, never the console's cookie: a page on another site must not act through it. */
function bearerOnly(): Middleware<ApiState> {
  return async (ctx, next) => {
    if (ctx.get('authorization') === '') throw AuthenticationError();
    await next();
  };
}
