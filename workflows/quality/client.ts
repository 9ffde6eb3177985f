/** Starting a quality backfill, for the API; its workflow id. */
import type { Client } from '@temporalio/client';
import { fairAmongProjects, TASK_QUEUE } from '../names.js';
import type { qualityBackfillWorkflow } from './workflow.js';

export const backfillWorkflowId = (backfillId: string) => `quality-backfill-${backfillId}`;

/** Idempotent: a backfill whose workflow already exists keeps it. Its judge runs take the project's fairness key. */
export async function startQualityBackfill(client: Client, backfillId: string, projectId: string): Promise<void> {
  await client.workflow.start<typeof qualityBackfillWorkflow>('qualityBackfillWorkflow', {
    taskQueue: TASK_QUEUE,
    workflowId: backfillWorkflowId(backfillId),
    args: [{ backfillId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    priority: fairAmongProjects(projectId),
  });
}
