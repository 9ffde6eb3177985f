/**
 * Heartbeats carry cancellation to a running activity (and tell Temporal its worker is alive), so a long
 * activity sends them at least every HEARTBEAT_MS. A local activity has none: its workflow task carries it.
 */
import { Context } from '@temporalio/activity';

const HEARTBEAT_MS = 1_000;

/** One heartbeat, now. */
export function heartbeat(): void {
  const context = Context.current();
  if (!context.info.isLocal) context.heartbeat();
}

/**
 * Heartbeats until `stop()`, for work that cannot send them itself (a call in flight). `details`, when given,
 * go with each: the activity's next attempt reads them (`heartbeatDetails`) if this one never ends.
 */
export function keepBeating(details?: unknown): { stop(): void } {
  const context = Context.current();
  if (context.info.isLocal) return { stop: () => {} };
  // Sent at once: the details reach Temporal even if the worker dies within the first interval.
  if (details !== undefined) context.heartbeat(details);
  const timer = setInterval(() => context.heartbeat(details), HEARTBEAT_MS);
  return { stop: () => clearInterval(timer) };
}
