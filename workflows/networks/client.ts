/** Starting network runs, for the API and the maintenance duties; cancelling one is cancelling its workflow. */
import type { Client } from '@temporalio/client';
import { fairAmongProjects, TASK_QUEUE } from '../names.js';
import type { networkRunWorkflow } from './workflow.js';
import { networkRunWorkflowId } from './ids.js';

export { networkRunWorkflowId };

/**
 * Idempotent: a run whose workflow already exists keeps it. `taskQueue` is the network's worker pool, if it
 * has one: the run's hops (child workflows) and their activities inherit it.
 */
export async function startNetworkRunWorkflow(client: Client, runId: string, projectId: string, taskQueue = TASK_QUEUE): Promise<void> {
  await client.workflow.start<typeof networkRunWorkflow>('networkRunWorkflow', {
    taskQueue,
    workflowId: networkRunWorkflowId(runId),
    args: [{ runId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    // Its hops, child workflows, take the same fairness key.
    priority: fairAmongProjects(projectId),
  });
}
