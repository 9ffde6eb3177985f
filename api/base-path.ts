/**
 * AGENTPLANE_BASE_PATH: the path browsers reach the API under, when an ingress serves it below the root
 * (`/agentplane`). Requests are answered the same whether or not the ingress strips the prefix.
 */
import type { Middleware } from 'koa';
import type { ApiState } from './context.js';

/** Null when `text` cannot be a base path; otherwise `/a/b` (leading slash, none trailing), or '' for the root. */
export function normaliseBasePath(text: string): string | null {
  const trimmed = text.trim().replace(/^\/+|\/+$/g, '');
  if (trimmed === '') return '';
  // Plain characters only: the path goes into a cookie's Path and into HTML (`<base href>`) unescaped.
  const segment = /^[A-Za-z0-9._~-]+$/;
  const segments = trimmed.split('/');
  if (segments.some((s) => !segment.test(s) || s === '.' || s === '..')) return null;
  return `/${segments.join('/')}`;
}

export function stripBasePath(basePath: string): Middleware<ApiState> {
  return async (ctx, next) => {
    if (basePath !== '' && (ctx.path === basePath || ctx.path.startsWith(`${basePath}/`))) {
      ctx.path = ctx.path.slice(basePath.length) || '/';
    }
    await next();
  };
}
