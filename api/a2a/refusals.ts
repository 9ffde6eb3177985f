/**
 * Requests the API refuses before any A2A operation runs (no key, a key without the scope, too many requests,
 * an agent that is not the project's, a dependency down): the HTTP status says so, as for any request, and the
 * JSON-RPC endpoint's body is still a JSON-RPC error response, so a protocol client can read it. The code is
 * -32000, JSON-RPC's implementation-defined server error; `data` names the reason as a google.rpc.ErrorInfo.
 */
import type { Middleware } from 'koa';
import type { ApiState } from '../context.js';
import { answerRefusal, ApiError, toApiError } from '../errors.js';

export type JsonRpcId = string | number | null;

export const REFUSAL_CODE = -32000;
const ERROR_INFO = 'type.googleapis.com/google.rpc.ErrorInfo';

export function jsonRpcRefusal(error: ApiError, id: JsonRpcId) {
  return {
    jsonrpc: '2.0',
    id,
    error: {
      code: REFUSAL_CODE,
      message: error.message,
      data: [
        { '@type': ERROR_INFO, reason: error.code.toUpperCase(), domain: 'agentplane.io', metadata: { http_status: String(error.status) } },
      ],
    },
  };
}

export function answerRefusals(): Middleware<ApiState> {
  return async (ctx, next) => {
    try {
      await next();
    } catch (err) {
      const apiError = toApiError(err);
      // The card is a plain document: its refusals have the API's own error body.
      if (ctx.method !== 'POST' || !apiError) {
        if (apiError?.status === 401) ctx.set('WWW-Authenticate', 'Bearer realm="agentplane"');
        throw err;
      }
      const body = ctx.request.body as { id?: unknown } | undefined;
      const id = typeof body?.id === 'string' || typeof body?.id === 'number' ? body.id : null;
      answerRefusal(ctx, apiError, jsonRpcRefusal(apiError, id));
      if (apiError.status === 401) ctx.set('WWW-Authenticate', 'Bearer realm="agentplane"');
    }
  };
}
