/**
 * A run's model and tool calls wait out a PostgreSQL outage rather than fail an attempt over it. A call's
 * attempts are for its provider's or its tool's failures: spent on the database, an outage of a few
 * seconds would fail the run or move an `auto` run to another model. And a reply or a tool result in hand
 * (paid for, its effects had) is recorded once the database is back, never asked for again.
 */
import type { Context } from '@temporalio/activity';
import { setTimeout as delay } from 'node:timers/promises';
import { DatabaseUnavailableError } from '../../records/db.js';

// The first wait after a failed try, doubled each time up to the longest: a restart is noticed within
// the longest wait of its end.
const FIRST_WAIT_MS = 250;
const LONGEST_WAIT_MS = 2_000;

/**
 * Runs `work` again after each DatabaseUnavailableError until it gets through; anything else it throws is
 * thrown. Ends with the activity: its cancellation rejects the wait, and its timeout bounds it. The
 * activity must keep heartbeating meanwhile.
 */
export async function outlastDatabaseOutage<T>(context: Context, work: () => Promise<T>): Promise<T> {
  let waiting = false;
  for (let wait = FIRST_WAIT_MS; ; wait = Math.min(wait * 2, LONGEST_WAIT_MS)) {
    try {
      const done = await work();
      if (waiting) context.log.info('the database answers again; the run goes on');
      return done;
    } catch (err) {
      if (!(err instanceof DatabaseUnavailableError)) throw err;
      if (!waiting) context.log.warn('the database is unavailable; the run waits for it', { error: err.message });
      waiting = true;
      await delay(wait, undefined, { signal: context.cancellationSignal });
    }
  }
}
