/**
 * Updates are PATCH. POST on `/v1/<resource>/<id>` still updates agents, networks, budgets and API keys for
 * clients written before, and says on every answer that it is deprecated (RFC 9745), linking the document
 * that marks the operation `deprecated` and names PATCH in its stead.
 */
import type { Middleware } from 'koa';
import type { ApiState } from '../context.js';

// When PATCH became the update verb, as RFC 9745 writes a date: Unix seconds after `@`.
const DEPRECATED_SINCE = `@${Date.UTC(2026, 10, 25) / 1000}`;
// Relative to `/v1/<resource>/<id>`, so that it holds under whatever base path serves the API.
const DOCUMENT_LINK = '<../openapi.json>; rel="deprecation"; type="application/json"';

export function deprecatedUpdateByPost(): Middleware<ApiState> {
  return async (ctx, next) => {
    ctx.set('Deprecation', DEPRECATED_SINCE);
    ctx.set('Link', DOCUMENT_LINK);
    await next();
  };
}
