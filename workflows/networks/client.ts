/** Starting network runs, for the API and the maintenance duties; cancelling one is cancelling its workflow. */
import type { Client } from '@temporalio/client';
import { TASK_QUEUE } from '../names.js';
import type { networkRunWorkflow } from './workflow.js';
import { networkRunWorkflowId } from './ids.js';

export { networkRunWorkflowId };

/** Idempotent: a run whose workflow already exists keeps it. */
export async function startNetworkRunWorkflow(client: Client, runId: string): Promise<void> {
  await client.workflow.start<typeof networkRunWorkflow>('networkRunWorkflow', {
    taskQueue: TASK_QUEUE,
    workflowId: networkRunWorkflowId(runId),
    args: [{ runId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
  });
}
