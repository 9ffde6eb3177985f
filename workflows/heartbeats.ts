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

/** Heartbeats kept going for work that cannot send them itself. */
export interface Beating {
  /** Each heartbeat from now on carries `details`, the first of them at once. */
  carry(details: unknown): void;
  stop(): void;
}

/**
 * Heartbeats until `stop()`, for work that cannot send them itself (a call in flight), one every HEARTBEAT_MS.
 * `details`, when given (here, or from now on by `carry`), go with each: the activity's next attempt reads them
 * (`heartbeatDetails`) if this one never ends. `carry` sends its details at once, so that they reach Temporal even
 * if the worker dies within the interval; the worker sends an activity's first heartbeat without delay and holds
 * later ones back for up to its throttle, so that is the heartbeat that should carry them.
 */
export function keepBeating(details?: unknown): Beating {
  const context = Context.current();
  if (context.info.isLocal) return { carry: () => {}, stop: () => {} };
  let carried = details;
  const timer = setInterval(() => context.heartbeat(carried), HEARTBEAT_MS);
  return {
    carry(next) {
      carried = next;
      context.heartbeat(next);
    },
    stop: () => clearInterval(timer),
  };
}
