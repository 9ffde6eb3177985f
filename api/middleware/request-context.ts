/** Request id, one structured log line per request, and the request-duration metric. */
import type { Middleware } from 'koa';
import type { Logger } from 'pino';
import { newId } from '../../records/ids.js';
import type { ApiState } from '../context.js';
import type { ApiMetrics } from '../metrics.js';

// A caller's own id is kept when it is short and plain, so traces join up across services.
const ACCEPTABLE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

export function requestContext(log: Logger, metrics: ApiMetrics): Middleware<ApiState> {
  return async (ctx, next) => {
    const started = process.hrtime.bigint();
    const incoming = ctx.get('x-request-id');
    const requestId = ACCEPTABLE_REQUEST_ID.test(incoming) ? incoming : newId('req');
    ctx.state.requestId = requestId;
    ctx.state.log = log.child({ request_id: requestId });
    ctx.set('x-request-id', requestId);
    try {
      await next();
    } finally {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = (ctx as unknown as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      metrics.requestDuration.observe({ method: ctx.method, route, status: String(ctx.status) }, seconds);
      ctx.state.log.info(
        {
          method: ctx.method,
          route,
          path: ctx.path,
          status: ctx.status,
          duration_ms: Math.round(seconds * 1000),
          api_key_id: ctx.state.caller?.apiKeyId,
        },
        'request',
      );
    }
  };
}
