/**
 * Authentication and scope checks. A request carries an API key as a bearer token, or, from the console,
 * the session cookie that stands for one (console-session.ts). Verified keys are cached for a few seconds
 * so a hot read path costs one query, not two; revoking through this process drops the entry at once, and
 * other replicas stop honouring a revoked key within KEY_CACHE_TTL_MS. Sessions are read on every request,
 * so a revoked key's sessions end at once everywhere.
 */
import type { Middleware } from 'koa';
import { LRUCache } from 'lru-cache';
import type { Db } from '../../records/db.js';
import { findApiKeyBySecret, hashSecret, type ApiKeyRecord } from '../../records/api-keys.js';
import { AuthenticationError, PermissionError } from '../errors.js';
import type { ApiState, Caller } from '../context.js';
import { authenticateSession, SESSION_COOKIE } from './console-session.js';

export const KEY_CACHE_TTL_MS = 5_000;
/**
 * How long a secret found to be no key's is answered 401 without a query. Secrets are made by the API and never
 * reused, so one found unknown becomes valid only as the configured bootstrap key of a restarted deployment.
 */
const UNKNOWN_KEY_TTL_MS = 5_000;
const MAX_KEY_LENGTH = 128;

export class KeyCache {
  private readonly cache = new LRUCache<string, Caller>({ max: 10_000, ttl: KEY_CACHE_TTL_MS });
  // A lookup that read the key just before its revocation committed must not cache it afterwards.
  private readonly revoked = new LRUCache<string, true>({ max: 10_000 });
  // Secrets no live key has, for a short while: a client repeating a wrong or revoked key costs no query each
  // time. Kept apart, so a flood of wrong keys cannot push the valid ones out.
  private readonly unknown = new LRUCache<string, true>({ max: 10_000, ttl: UNKNOWN_KEY_TTL_MS });

  get(secret: string): Caller | undefined {
    return this.cache.get(cacheKey(secret));
  }

  isKnownUnknown(secret: string): boolean {
    return this.unknown.has(cacheKey(secret));
  }

  setUnknown(secret: string): void {
    this.unknown.set(cacheKey(secret), true);
  }

  set(secret: string, caller: Caller): void {
    if (this.revoked.has(caller.apiKeyId)) return;
    this.cache.set(cacheKey(secret), caller);
  }

  /** A key changed: the next request reads it again. */
  refreshKey(apiKeyId: string): void {
    for (const [key, caller] of this.cache.entries()) if (caller.apiKeyId === apiKeyId) this.cache.delete(key);
  }

  forgetKey(apiKeyId: string): void {
    this.revoked.set(apiKeyId, true);
    for (const [key, caller] of this.cache.entries()) if (caller.apiKeyId === apiKeyId) this.cache.delete(key);
  }
}

// The cache holds hashes, never secrets.
const cacheKey = (secret: string) => hashSecret(secret).toString('base64');

/** What a key may do, as every route reads it. */
export function callerOfKey(record: ApiKeyRecord): Caller {
  return {
    apiKeyId: record.id,
    projectId: record.project_id,
    scopes: record.scopes,
    bootstrap: record.bootstrap,
    controller: record.controller,
    rateLimits: { requests_per_minute: record.requests_per_minute, concurrent_runs: record.concurrent_runs },
  };
}

export function authenticate(db: Db, keys: KeyCache): Middleware<ApiState> {
  return async (ctx, next) => {
    // A request with an Authorization header is a bearer request, whatever cookies the client holds.
    if (ctx.get('authorization') === '' && ctx.cookies.get(SESSION_COOKIE) !== undefined) {
      const session = await authenticateSession(db, ctx);
      // The same caller as the key's: every scope check and rate limit applies unchanged.
      ctx.state.caller = callerOfKey(session.key);
      ctx.state.session = { record: session.session, key: session.key, token: session.token };
      return next();
    }
    // The scheme is case-insensitive, and one or more spaces part it from the key (RFC 9110, 11.4).
    const match = /^bearer +([^\s]+)$/i.exec(ctx.get('authorization'));
    const secret = match?.[1];
    if (!secret || secret.length > MAX_KEY_LENGTH || !secret.startsWith('ap_')) throw AuthenticationError();
    let caller = keys.get(secret);
    if (!caller) {
      const knownUnknown = keys.isKnownUnknown(secret);
      const record = knownUnknown ? null : await findApiKeyBySecret(db, secret);
      if (!record) {
        if (!knownUnknown) keys.setUnknown(secret);
        throw AuthenticationError('The API key is not valid, or has been revoked.');
      }
      caller = callerOfKey(record);
      keys.set(secret, caller);
    }
    ctx.state.caller = caller;
    await next();
  };
}

/** `admin` holds every scope of its project. */
export function hasScope(caller: Caller, scope: string): boolean {
  return caller.scopes.includes(scope) || caller.scopes.includes('admin');
}

/** Any one of `scopes` will do (a write scope that also reads, say). */
export function requireAnyScope(...scopes: string[]): Middleware<ApiState> {
  return async (ctx, next) => {
    if (!ctx.state.caller || !scopes.some((scope) => hasScope(ctx.state.caller!, scope))) throw PermissionError(scopes[0]!);
    await next();
  };
}

export function requireScope(scope: string): Middleware<ApiState> {
  return async (ctx, next) => {
    if (!ctx.state.caller || !hasScope(ctx.state.caller, scope)) throw PermissionError(scope);
    await next();
  };
}
