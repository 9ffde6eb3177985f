/** Runs whose workflow never started: nothing but this ends them. */
import { exportRunSpan } from '../tracing/gen-ai.js';
import { transaction, type Db } from './db.js';
import { recordEvent, runEndedEventType } from './events.js';
import { finishRun, runById } from './runs.js';

/** A run whose workflow was never started (Temporal was down, or its starter was cancelled first) is ended cancelled here; true if it was. */
export async function endRunNeverStarted(db: Db, runId: string): Promise<boolean> {
  const run = await runById(db, runId);
  if (!run) return false;
  const ended = await transaction(db, async (tx) => {
    const ended = await finishRun(tx, runId, { status: 'cancelled' });
    if (ended) await recordEvent(tx, run.project_id, runEndedEventType(run, 'cancelled'), { object: 'run', id: runId });
    return ended;
  });
  // Its span leaves once its end is committed.
  if (ended) exportRunSpan(ended);
  return ended !== null;
}
