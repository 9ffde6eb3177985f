/** Starting and cancelling run workflows, for the API and the maintenance duties. */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { fairAmongProjects, TASK_QUEUE } from '../names.js';
import type { agentRunWorkflow } from './workflow.js';
import { APPROVAL_SIGNAL, runWorkflowId } from './ids.js';
import { networkRunWorkflowId, startNetworkRunWorkflow } from '../networks/client.js';
import { recordInterruptSent, type RunToStart } from '../../records/runs.js';
import type { Db } from '../../records/db.js';
import { endRunNeverStarted } from '../../records/unstarted-runs.js';

export { runWorkflowId };

/**
 * Idempotent: a run whose workflow already exists keeps it. Its tasks, and its activities', are dispatched
 * fairly among projects (the project is the fairness key), so one project's backlog does not hold another's.
 */
export async function startRunWorkflow(client: Client, runId: string, projectId: string): Promise<void> {
  await client.workflow.start<typeof agentRunWorkflow>('agentRunWorkflow', {
    taskQueue: TASK_QUEUE,
    workflowId: runWorkflowId(runId),
    args: [{ runId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    priority: fairAmongProjects(projectId),
  });
}

/** Starts a top-level run's workflow, an agent run's or a network run's (on its worker pool, if it has one). */
export function startRunOf(client: Client, run: RunToStart): Promise<void> {
  return run.network
    ? startNetworkRunWorkflow(client, run.id, run.projectId, run.workerPool ?? undefined)
    : startRunWorkflow(client, run.id, run.projectId);
}

/**
 * Asks the run's workflow to cancel (`workflowId` when it is not an agent run's); false when there is none
 * (never started, or long gone).
 */
export async function cancelRunWorkflow(client: Client, runId: string, workflowId = runWorkflowId(runId)): Promise<boolean> {
  try {
    await client.workflow.getHandle(workflowId).cancel();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** Tells the run's workflow one of its approvals was decided, so that its call goes on at once. */
export async function signalApprovalDecided(client: Client, runId: string, approvalId: string): Promise<void> {
  await client.workflow.getHandle(runWorkflowId(runId)).signal<[string]>(APPROVAL_SIGNAL, approvalId);
}

/**
 * Ends a run an `interrupt` run replaced: its workflow asked to cancel, or, with none, the run ended here. Then
 * nothing more is owed for it, and its mark is cleared; a failure (Temporal unreachable) leaves the mark for the
 * maintenance round to try again.
 */
export async function interruptRun(client: Client, db: Db, run: { id: string; network: boolean }): Promise<void> {
  const workflowId = run.network ? networkRunWorkflowId(run.id) : runWorkflowId(run.id);
  if (!(await cancelRunWorkflow(client, run.id, workflowId))) await endRunNeverStarted(db, run.id);
  await recordInterruptSent(db, run.id);
}
