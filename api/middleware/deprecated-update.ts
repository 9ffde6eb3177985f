/**
 * Updates are PATCH. POST on `/v1/<resource>/<id>` still updates agents, networks, budgets, API keys and
 * schedules for clients written before, and says on every answer that it is deprecated (RFC 9745), linking the
 * document that marks the operation `deprecated` and names PATCH in its stead.
 */
import type { Middleware } from 'koa';
import type { ApiState } from '../context.js';

// When PATCH became the update verb, as RFC 9745 writes a date: Unix seconds after `@`. Schedules, which
// changed by POST alone until then, took PATCH later.
const PATCH_SINCE = Date.UTC(2026, 10, 25);
export const SCHEDULES_PATCH_SINCE = Date.UTC(2026, 10, 30);
// Relative to `/v1/<resource>/<id>`, so that it holds under whatever base path serves the API.
const DOCUMENT_LINK = '<../openapi.json>; rel="deprecation"; type="application/json"';

/** Marks the answer deprecated since `sinceMs`, the day PATCH became the resource's update verb. */
export function deprecatedUpdateByPost(sinceMs = PATCH_SINCE): Middleware<ApiState> {
  const since = `@${sinceMs / 1000}`;
  return async (ctx, next) => {
    ctx.set('Deprecation', since);
    ctx.set('Link', DOCUMENT_LINK);
    await next();
  };
}
