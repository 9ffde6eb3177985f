/** Starting and cancelling run workflows, for the API and the maintenance duties. */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { fairAmongProjects, TASK_QUEUE } from '../names.js';
import type { agentRunWorkflow } from './workflow.js';
import { runWorkflowId } from './ids.js';

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
