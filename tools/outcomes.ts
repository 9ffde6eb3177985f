/**
 * What a tool call ends with: a result shown to the model, or ToolUnavailableError when the call should be
 * tried again later.
 */

import type { Citation, RemoteCharge } from '../records/run-steps.js';
import { storableText } from '../models/storable-text.js';

export type { RemoteCharge } from '../records/run-steps.js';

/** What the model sees of a call; `is_error` results are shown to it, never retried. */
export interface ToolResult {
  content: string;
  is_error: boolean;
  /** The passages the answer rests on; the run keeps them with its output. */
  citations?: Citation[];
  /** What a remote agent reported the call cost (tools/a2a.ts): charged to the run with the call's result. */
  charge?: RemoteCharge;
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
    // A remote's words reach the step's error once the call is given up, which is stored.
    super(storableText(message), options);
    this.name = 'ToolUnavailableError';
  }
}

// What a socket reports when the other side is gone, unreachable or overloaded for now.
// ETIMEOUT and ESERVFAIL: a name server that did not answer in time, or failed.
const PASSING_FAILURES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'ETIMEOUT',
  'ESERVFAIL',
]);

/** True for an error (or the cause it wraps) that says the connection failed in a way that may pass. */
export function isPassingConnectionFailure(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && PASSING_FAILURES.has(code)) return true;
  }
  return false;
}

/**
 * The longest a tool call that could not answer waits before it is tried again: the most of a tool's
 * Retry-After that is honoured, and the maximum interval of the tool calls' retry policy. Read by the run
 * workflow too.
 */
export const TOOL_RETRY_MAX_INTERVAL_MS = 20_000;

/**
 * `Retry-After` in milliseconds (seconds or an HTTP date), at most TOOL_RETRY_MAX_INTERVAL_MS, so a tool
 * cannot park a run; undefined when absent or unreadable.
 */
export function retryAfterMs(header: string | undefined, now = Date.now()): number | undefined {
  if (!header) return undefined;
  const asked = /^\d+$/.test(header.trim()) ? Number(header.trim()) * 1000 : Date.parse(header) - now;
  return Number.isNaN(asked) ? undefined : Math.min(Math.max(0, asked), TOOL_RETRY_MAX_INTERVAL_MS);
}
