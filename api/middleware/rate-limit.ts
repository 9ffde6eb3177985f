/**
 * Requests per minute per API key, and per project across its keys (AGENTPLANE_RATE_LIMIT_PROJECT_*), after
 * authentication: a limited key's or project's requests are served from leases on its window in PostgreSQL
 * (request-leases.ts); an unlimited one's cost nothing. The answer carries OpenAI's
 * `x-ratelimit-*-requests` headers; over the limit it is 429 with Retry-After. A database that is down when a
 * lease is needed answers 503, as any query would.
 */
import type { Middleware } from 'koa';
import type { Db } from '../../records/db.js';
import type { KeyRateLimits } from '../../records/api-keys.js';
import { callerOf, type ApiState, type Caller, type RateLimitDefaults } from '../context.js';
import { RateLimitError } from '../errors.js';
import { RequestLeases, type Allowance } from './request-leases.js';

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

/** Of the key's and the project's allowances, the one the request is nearer the end of: refused, or with less left. */
function nearerOf(...allowances: (Allowance | null)[]): Allowance | null {
  let nearer: Allowance | null = null;
  for (const allowance of allowances) {
    if (!allowance) continue;
    if (
      !nearer ||
      (nearer.allowed && !allowance.allowed) ||
      (nearer.allowed === allowance.allowed && allowance.remaining < nearer.remaining)
    )
      nearer = allowance;
  }
  return nearer;
}

export function limitRequests(db: Db, defaults: RateLimitDefaults = {}): Middleware<ApiState> {
  const ofKeys = new RequestLeases(db, 'api_key');
  const ofProjects = new RequestLeases(db, 'project');
  return async (ctx, next) => {
    const caller = callerOf(ctx);
    const keyLimit = requestsPerMinuteOf(caller, defaults);
    const projectLimit = defaults.projectRequestsPerMinute ?? null;
    // The key's window first: a request its key may not make is not counted against the project's other keys.
    const key = keyLimit === null ? null : await ofKeys.take(caller.apiKeyId, keyLimit);
    const project = projectLimit === null || (key && !key.allowed) ? null : await ofProjects.take(caller.projectId, projectLimit);
    // The headers tell of the limit the caller is nearer to.
    const nearer = nearerOf(key, project);
    if (!nearer) return next();
    const resetSeconds = Math.max(1, Math.ceil(nearer.resetMs / 1000));
    ctx.set({
      'x-ratelimit-limit-requests': String(nearer.limit),
      'x-ratelimit-remaining-requests': String(nearer.remaining),
      'x-ratelimit-reset-requests': `${resetSeconds}s`,
    });
    if (!nearer.allowed) {
      const whose =
        nearer === key
          ? `This API key may make ${nearer.limit} requests per minute`
          : `This project's API keys may make ${nearer.limit} requests per minute together`;
      throw RateLimitError('rate_limit_exceeded', `${whose}; the window resets in ${resetSeconds}s.`, resetSeconds);
    }
    await next();
  };
}
