/** POST /v1/runs/{id}/cancel: the workflow is cancelled (aborting the model call in flight) and ends the run. */
import { idleWhile } from '../../fair-admission.js';
import type { ApiContext, ApiDeps } from '../../context.js';
import { callerOf } from '../../context.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { respond } from '../../audit.js';
import { findRun, isFinished, type RunRecord } from '../../../records/runs.js';
import { endRunNeverStarted } from '../../../records/unstarted-runs.js';
import { cancelRunWorkflow, runWorkflowId } from '../../../workflows/runs/client.js';
import { networkRunWorkflowId } from '../../../workflows/networks/client.js';
import { runWhenEnded } from './run-log.js';
import { presentRunOf } from './run-object.js';

const CANCEL_WAIT_MS = 10_000;

/** Cancels the run's workflow, or ends the run here if its workflow was never started. */
export async function requestRunCancel(deps: ApiDeps, run: Pick<RunRecord, 'id' | 'network_id'>): Promise<void> {
  const workflowId = run.network_id ? networkRunWorkflowId(run.id) : runWorkflowId(run.id);
  // Bounded by the connection's deadline for a call (workflows/call-deadline.ts).
  const reached = await cancelRunWorkflow(deps.temporal, run.id, workflowId);
  if (!reached) await endRunNeverStarted(deps.db, run.id);
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
