/**
 * The console's cookie session. The cookie holds a random token; its CSRF token is derived from it
 * (an HMAC keyed by the token), so the server can hand it out again to a page that reloads while storing only
 * hashes of both. A cookie request that changes something must come from the API's own origin and carry the
 * CSRF token in `X-CSRF-Token`: the cookie alone, which the browser attaches to any request, is not enough.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../records/db.js';
import { hashSecret } from '../../records/api-keys.js';
import { findLiveSession, type LiveSession } from '../../records/console-sessions.js';
import type { ApiContext } from '../context.js';
import { ApiError } from '../errors.js';

export const SESSION_COOKIE = 'agentplane_session';
/** AGENTPLANE_SESSION_TTL_SECONDS unset: a working day. Sessions end this long after sign-in, however busy. */
export const DEFAULT_SESSION_TTL_SECONDS = 8 * 60 * 60;
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
// A token is 32 base62 characters; anything much longer is not one.
const MAX_TOKEN_LENGTH = 128;

export const csrfTokenOf = (sessionToken: string) => createHmac('sha256', sessionToken).update('agentplane csrf').digest('base64url');

export const SessionInvalidError = () =>
  new ApiError(401, 'authentication_error', 'invalid_session', 'The console session has ended or expired; sign in again.');
export const NoSessionError = () =>
  new ApiError(401, 'authentication_error', 'no_session', 'This request carries no console session (the `agentplane_session` cookie).');
export const OriginMismatchError = () =>
  new ApiError(403, 'permission_error', 'origin_mismatch', "A console request must carry an `Origin` header naming the API's own origin.");
export const CsrfTokenInvalidError = () =>
  new ApiError(
    403,
    'permission_error',
    'csrf_token_invalid',
    "A console request that changes something must carry the session's CSRF token in `X-CSRF-Token`.",
  );

/**
 * Browsers send Origin with every POST, PUT, PATCH and DELETE; it must be the API's own, as the request
 * reached it (behind a proxy, X-Forwarded-Proto and X-Forwarded-Host). Koa's `ctx.origin` is the Origin
 * header itself, so the API's own is built here.
 */
export function requireSameOrigin(ctx: ApiContext): void {
  if (ctx.get('origin') !== `${ctx.protocol}://${ctx.host}`) throw OriginMismatchError();
}

/** The request's live session; a request that changes something also needs Origin and the CSRF token. */
export async function authenticateSession(db: Db, ctx: ApiContext): Promise<LiveSession & { token: string }> {
  const token = ctx.cookies.get(SESSION_COOKIE) ?? '';
  const live = token.length > 0 && token.length <= MAX_TOKEN_LENGTH ? await findLiveSession(db, token) : null;
  if (!live) throw SessionInvalidError();
  if (!SAFE_METHODS.has(ctx.method)) {
    requireSameOrigin(ctx);
    const given = ctx.get('x-csrf-token');
    if (given === '' || !timingSafeEqual(hashSecret(given), live.csrfHash)) throw CsrfTokenInvalidError();
  }
  return { ...live, token };
}

/** The Set-Cookie value of a session: the browser's only copy of the token, which scripts cannot read. */
export function sessionCookie(options: { token: string; basePath: string; maxAgeSeconds: number; secure: boolean }): string {
  const attributes = [
    `${SESSION_COOKIE}=${options.token}`,
    `Path=${options.basePath}/`,
    'HttpOnly',
    'SameSite=Strict',
    `Max-Age=${options.maxAgeSeconds}`,
  ];
  if (options.secure) attributes.push('Secure');
  return attributes.join('; ');
}
