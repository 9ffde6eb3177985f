/** Runs whose workflow never started: nothing but this ends them. */
import { exportRunSpan } from '../tracing/gen-ai.js';
import { transaction, type Db } from './db.js';
import { finishRun } from './runs.js';

/** A run whose workflow was never started (Temporal was down, or its starter was cancelled first) is ended cancelled here; true if it was. */
export async function endRunNeverStarted(db: Db, runId: string): Promise<boolean> {
  // With its outbox event, in the same statement; a run that is not there ends nothing.
  const ended = await transaction(db, (tx) => finishRun(tx, runId, { status: 'cancelled' }));
  // Its span leaves once its end is committed.
  if (ended) exportRunSpan(ended);
  return ended !== null;
}
