/**
 * What a tool call ends with: a result shown to the model, or ToolUnavailableError when the call should be
 * tried again later.
 */

import type { Citation } from '../records/run-steps.js';

/** What the model sees of a call; `is_error` results are shown to it, never retried. */
export interface ToolResult {
  content: string;
  is_error: boolean;
  /** The passages the answer rests on; the run keeps them with its output. */
  citations?: Citation[];
}

/**
 * A tool that could not answer now (refused or reset connections, 429, 5xx) but may later: the activity
 * that called it fails and Temporal retries it with backoff, waiting at least `retryAfterMs` when the
 * tool said how long. Everything a model can act on (a 404, bad arguments, a refused target) is a result
 * with `is_error: true` instead, never this.
 */
export class ToolUnavailableError extends Error {
  readonly retryable = true;

  constructor(
    message: string,
    readonly retryAfterMs?: number,
    options?: ErrorOptions,
  ) {
    super(message, options);
    this.name = 'ToolUnavailableError';
  }
}

// What a socket reports when the other side is gone, unreachable or overloaded for now.
const PASSING_FAILURES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN', 'UND_ERR_SOCKET']);

/** True for an error (or the cause it wraps) that says the connection failed in a way that may pass. */
export function isPassingConnectionFailure(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && PASSING_FAILURES.has(code)) return true;
  }
  return false;
}

/** `Retry-After` in milliseconds (seconds or an HTTP date), or undefined when absent or unreadable. */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim()) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}
