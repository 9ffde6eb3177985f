/**
 * Requests per minute per API key, after authentication: a limited key's requests are served from leases on
 * its window in PostgreSQL (request-leases.ts); an unlimited key's cost nothing. The answer carries OpenAI's
 * `x-ratelimit-*-requests` headers; over the limit it is 429 with Retry-After. A database that is down when a
 * lease is needed answers 503, as any query would.
 */
import type { Middleware } from 'koa';
import type { Db } from '../../records/db.js';
import type { KeyRateLimits } from '../../records/api-keys.js';
import { callerOf, type ApiState, type Caller, type RateLimitDefaults } from '../context.js';
import { RateLimitError } from '../errors.js';
import { RequestLeases } from './request-leases.js';

/**
 * The deployment's value is a ceiling as well as the default: a key's own limit may be lower, never higher,
 * so the operator's throttle holds whatever a project's admins set (keys stored before the ceiling was
 * lowered included).
 */
export const withinCeiling = (own: number | null, ceiling: number | undefined): number | null =>
  own === null ? (ceiling ?? null) : Math.min(own, ceiling ?? own);

/** A key's limits as asked for, each lowered to the deployment's ceiling: what a key is given when it is written. */
export function keyLimitsWithinCeilings(
  asked: Partial<KeyRateLimits> | undefined,
  ceilings: RateLimitDefaults = {},
): Partial<KeyRateLimits> | undefined {
  if (!asked) return asked;
  const limits: Partial<KeyRateLimits> = {};
  if (asked.requests_per_minute !== undefined)
    limits.requests_per_minute =
      asked.requests_per_minute === null ? null : withinCeiling(asked.requests_per_minute, ceilings.requestsPerMinute);
  if (asked.concurrent_runs !== undefined)
    limits.concurrent_runs = asked.concurrent_runs === null ? null : withinCeiling(asked.concurrent_runs, ceilings.concurrentRuns);
  return limits;
}

export const requestsPerMinuteOf = (caller: Caller, defaults: RateLimitDefaults = {}): number | null =>
  withinCeiling(caller.rateLimits.requests_per_minute, defaults.requestsPerMinute);

export const concurrentRunsOf = (caller: Caller, defaults: RateLimitDefaults = {}): number | null =>
  withinCeiling(caller.rateLimits.concurrent_runs, defaults.concurrentRuns);

export function limitRequests(db: Db, defaults: RateLimitDefaults = {}): Middleware<ApiState> {
  const leases = new RequestLeases(db);
  return async (ctx, next) => {
    const caller = callerOf(ctx);
    const limit = requestsPerMinuteOf(caller, defaults);
    if (limit !== null) {
      const allowance = await leases.take(caller.apiKeyId, limit);
      const resetSeconds = Math.max(1, Math.ceil(allowance.resetMs / 1000));
      ctx.set({
        'x-ratelimit-limit-requests': String(limit),
        'x-ratelimit-remaining-requests': String(allowance.remaining),
        'x-ratelimit-reset-requests': `${resetSeconds}s`,
      });
      if (!allowance.allowed) {
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
