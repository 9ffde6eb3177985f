/** POST /v1/runs/{id}/cancel: the workflow is cancelled (aborting the model call in flight) and ends the run. */
import { idleWhile } from '../../fair-admission.js';
import type { ApiContext, ApiDeps } from '../../context.js';
import { callerOf } from '../../context.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { respond } from '../../audit.js';
import { transaction } from '../../../records/db.js';
import { findRun, finishRun, isFinished, runById, type RunRecord } from '../../../records/runs.js';
import { recordEvent, runEndedEventType } from '../../../records/events.js';
import { cancelRunWorkflow, runWorkflowId } from '../../../workflows/runs/client.js';
import { networkRunWorkflowId } from '../../../workflows/networks/client.js';
import { exportRunSpan } from '../../../tracing/gen-ai.js';
import { runWhenEnded } from './run-log.js';
import { presentRunOf } from './run-object.js';

const CANCEL_WAIT_MS = 10_000;

/** A run whose workflow was never started (Temporal was down) is ended here; true if it was. */
export async function endRunNeverStarted(deps: Pick<ApiDeps, 'db'>, runId: string): Promise<boolean> {
  const run = await runById(deps.db, runId);
  if (!run) return false;
  const ended = await transaction(deps.db, async (tx) => {
    const ended = await finishRun(tx, runId, { status: 'cancelled' });
    if (ended) await recordEvent(tx, run.project_id, runEndedEventType(run, 'cancelled'), { object: 'run', id: runId });
    return ended;
  });
  // Its span leaves once its end is committed.
  if (ended) exportRunSpan(ended);
  return ended !== null;
}

/** Cancels the run's workflow, or ends the run here if its workflow was never started. */
export async function requestRunCancel(deps: ApiDeps, run: Pick<RunRecord, 'id' | 'network_id'>): Promise<void> {
  const workflowId = run.network_id ? networkRunWorkflowId(run.id) : runWorkflowId(run.id);
  // Bounded by the connection's deadline for a call (workflows/call-deadline.ts).
  const reached = await cancelRunWorkflow(deps.temporal, run.id, workflowId);
  if (!reached) await endRunNeverStarted(deps, run.id);
}

export async function cancelRun(ctx: ApiContext, deps: ApiDeps, runId: string): Promise<void> {
  const { projectId } = callerOf(ctx);
  const run = await findRun(deps.db, projectId, runId);
  if (!run) throw NotFoundError('run', runId);
  if (isFinished(run.status)) throw ConflictError('run_finished', `Run ${runId} has already ended (${run.status}).`);
  await requestRunCancel(deps, run);
  const closed = new AbortController();
  ctx.req.on('close', () => closed.abort());
  const now = await idleWhile(ctx, () => runWhenEnded(deps, projectId, runId, CANCEL_WAIT_MS, closed.signal));
  respond(ctx, { status: isFinished(now.status) ? 200 : 202, body: await presentRunOf(deps, now) });
}
