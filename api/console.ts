/**
 * The web console: a static single-page app built into dist/console (index.html and assets/), served
 * under /console/. Paths without an extension are the app's own routes and get index.html; assets are
 * named by their content, so they are cached for good. Every answer carries a strict CSP. The console's icon
 * also answers /favicon.ico at the root.
 */
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Middleware } from 'koa';
import type { ApiContext, ApiState } from './context.js';
import { ApiError } from './errors.js';

/** Beside the compiled API: dist/api/console.js serves dist/console. */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../console/', import.meta.url));

const SECURITY_HEADERS = {
  'Content-Security-Policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    "connect-src 'self'",
    "manifest-src 'self'",
    "base-uri 'self'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; '),
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'X-Frame-Options': 'DENY',
};

const NotBuiltError = () => new ApiError(404, 'not_found_error', 'console_not_built', 'The web console is not built into this server.');
const FileNotFoundError = (path: string) => new ApiError(404, 'not_found_error', 'route_not_found', `No file ${path} in the web console.`);

/** index.html with `<base href>` set to where browsers reach the console, so deep links load their assets. */
async function readIndex(dir: string, basePath: string): Promise<string | null> {
  let html: string;
  try {
    html = await readFile(resolve(dir, 'index.html'), 'utf8');
  } catch {
    return null;
  }
  const base = `<base href="${basePath}/console/">`;
  const head = /<head(\s[^>]*)?>/i.exec(html);
  return head ? html.slice(0, head.index + head[0].length) + base + html.slice(head.index + head[0].length) : base + html;
}

/**
 * The file a request names inside the console's folder, or null when the path could step outside it or
 * names something hidden: `..` and `.` segments, dot files, backslashes, and encoded slashes are refused.
 */
function fileOf(dir: string, rawPath: string): string | null {
  if (/%2f|%5c|\\/i.test(rawPath)) return null;
  let path: string;
  try {
    path = decodeURIComponent(rawPath);
  } catch {
    return null;
  }
  const segments = path.split('/');
  if (segments.some((s) => s === '' || s.startsWith('.') || s.includes('\0'))) return null;
  const file = resolve(dir, ...segments);
  return file.startsWith(resolve(dir) + sep) ? file : null;
}

async function sendFile(ctx: ApiContext, file: string | null, cacheControl: string): Promise<void> {
  const found = file ? await stat(file).catch(() => null) : null;
  if (!file || !found?.isFile()) throw FileNotFoundError(ctx.path);
  ctx.set('Cache-Control', cacheControl);
  ctx.type = extname(file);
  ctx.length = found.size;
  ctx.body = createReadStream(file);
}

export function serveConsole(options: { dir: string; basePath: string }): Middleware<ApiState> {
  let index: Promise<string | null> | undefined;
  return async (ctx, next) => {
    // Browsers ask the root for the site's icon on any page without one of its own (the API's JSON, say).
    if (ctx.path === '/favicon.ico' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.set(SECURITY_HEADERS);
      await sendFile(ctx, resolve(options.dir, 'favicon.ico'), 'public, max-age=86400');
      return;
    }
    if (ctx.path !== '/console' && !ctx.path.startsWith('/console/')) return next();
    ctx.set(SECURITY_HEADERS);
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      throw new ApiError(405, 'invalid_request_error', 'method_not_allowed', `${ctx.method} is not allowed on ${ctx.path}.`, null, {
        Allow: 'GET, HEAD',
      });
    }
    if (ctx.path === '/console') {
      ctx.status = 308;
      ctx.redirect(`${options.basePath}/console/${ctx.search}`);
      return;
    }
    const rest = ctx.path.slice('/console/'.length);
    const isAsset = rest === 'assets' || rest.startsWith('assets/');
    // The app's own routes have no dot in their last segment; anything else names a file (`.env` included).
    if (isAsset || /\.|%2e/i.test(rest.slice(rest.lastIndexOf('/') + 1))) {
      await sendFile(ctx, fileOf(options.dir, rest), isAsset ? 'public, max-age=31536000, immutable' : 'no-cache');
      return;
    }
    // Read once; a console built after start-up is found on the next request.
    const html = await (index ??= readIndex(options.dir, options.basePath));
    if (html === null) {
      index = undefined;
      throw NotBuiltError();
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.type = 'html';
    ctx.body = html;
  };
}
