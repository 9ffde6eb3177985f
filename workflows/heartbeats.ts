/**
 * Heartbeats tell Temporal an activity's worker is alive, and carry back a cancellation, so a long activity
 * sends them at least every HEARTBEAT_MS. A local activity has none: its workflow task carries it.
 *
 * Each one Temporal receives is a write of the activity's workflow, and a call that hangs (a host that never
 * answers) sends them for as long as it lasts: every two seconds leaves three of the five-second heartbeat
 * timeout to spare, for half the writes of every second. A cancelled run's calls need not wait for one to end:
 * the worker that ends the run ends them (`calls-in-flight.ts`).
 */
import { Context } from '@temporalio/activity';

/** How often a long activity heartbeats, and the longest the worker holds one back (its heartbeat throttle). */
export const HEARTBEAT_MS = 2_000;

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
