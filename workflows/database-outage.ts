/**
 * Activities wait out a PostgreSQL outage rather than fail an attempt over it. A run's model and tool calls:
 * their attempts are for the provider's or the tool's failures, and a reply or a tool result in hand (paid for,
 * its effects had) is recorded once the database is back, never asked for again. Extraction's stages: their
 * attempts are for the engines' failures, so an outage longer than their retries cannot fail a file. A
 * webhook's first attempt, made by the dispatcher: answered, it is logged once the database is back.
 */
import { setTimeout as delay } from 'node:timers/promises';
import { DatabaseUnavailableError } from '../records/db.js';

// The first wait after a failed try, doubled each time up to the longest: a restart is noticed within
// the longest wait of its end.
const FIRST_WAIT_MS = 250;
const LONGEST_WAIT_MS = 2_000;

/** What waits: an activity's context, or anything with a log and a signal that ends the wait. */
export interface OutageWaiter {
  log: { info(message: string): void; warn(message: string, attributes?: Record<string, unknown>): void };
  cancellationSignal: AbortSignal;
}

/**
 * Runs `work` again after each DatabaseUnavailableError until it gets through; anything else it throws is
 * thrown. Ends with the activity: its cancellation rejects the wait (or `signal`'s, for work that outlives
 * the attempt), and its timeout bounds it. The activity must keep heartbeating meanwhile.
 */
export async function outlastDatabaseOutage<T>(
  context: OutageWaiter,
  work: () => Promise<T>,
  signal: AbortSignal = context.cancellationSignal,
): Promise<T> {
  let waiting = false;
  for (let wait = FIRST_WAIT_MS; ; wait = Math.min(wait * 2, LONGEST_WAIT_MS)) {
    try {
      const done = await work();
      if (waiting) context.log.info('the database answers again; the activity goes on');
      return done;
    } catch (err) {
      if (!(err instanceof DatabaseUnavailableError)) throw err;
      if (!waiting) context.log.warn('the database is unavailable; the activity waits for it', { error: err.message });
      waiting = true;
      await delay(wait, undefined, { signal });
    }
  }
}
