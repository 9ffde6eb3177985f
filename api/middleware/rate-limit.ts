/**
 * Requests per minute per API key: after authentication, one upsert of the key's window row per request of a
 * limited key (none for an unlimited one). The answer carries OpenAI's `x-ratelimit-*-requests` headers;
 * over the limit it is 429 with Retry-After. A database that is down answers 503, as any query would.
 */
import type { Middleware } from 'koa';
import type { Db } from '../../records/db.js';
import { countRequest } from '../../records/rate-limits.js';
import { callerOf, type ApiState, type Caller, type RateLimitDefaults } from '../context.js';
import { RateLimitError } from '../errors.js';

export const requestsPerMinuteOf = (caller: Caller, defaults: RateLimitDefaults = {}): number | null =>
  caller.rateLimits.requests_per_minute ?? defaults.requestsPerMinute ?? null;

export const concurrentRunsOf = (caller: Caller, defaults: RateLimitDefaults = {}): number | null =>
  caller.rateLimits.concurrent_runs ?? defaults.concurrentRuns ?? null;

export function limitRequests(db: Db, defaults: RateLimitDefaults = {}): Middleware<ApiState> {
  return async (ctx, next) => {
    const caller = callerOf(ctx);
    const limit = requestsPerMinuteOf(caller, defaults);
    if (limit !== null) {
      const window = await countRequest(db, caller.apiKeyId, limit);
      const resetSeconds = Math.max(1, Math.ceil(window.resetMs / 1000));
      ctx.set({
        'x-ratelimit-limit-requests': String(limit),
        'x-ratelimit-remaining-requests': String(Math.max(0, limit - window.requests)),
        'x-ratelimit-reset-requests': `${resetSeconds}s`,
      });
      if (window.requests > limit) {
        throw RateLimitError(
          'rate_limit_exceeded',
          `This API key may make ${limit} requests per minute; the window resets in ${resetSeconds}s.`,
          resetSeconds,
        );
      }
    }
    await next();
  };
}
