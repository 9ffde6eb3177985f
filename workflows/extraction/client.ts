/** Starting and cancelling extraction workflows, for the API and the maintenance duties. */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { fairAmongProjects, TASK_QUEUE } from '../names.js';
import type { extractFileWorkflow } from './workflow.js';

/** One workflow per file: a retry or a duplicate start finds the same id. */
export function extractionWorkflowId(fileId: string): string {
  return `file-extraction-${fileId}`;
}

/** Idempotent: a file whose extraction is already running keeps that run. */
export async function startExtraction(client: Client, fileId: string, projectId: string): Promise<void> {
  await client.workflow.start<typeof extractFileWorkflow>('extractFileWorkflow', {
    taskQueue: TASK_QUEUE,
    workflowId: extractionWorkflowId(fileId),
    args: [{ fileId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    priority: fairAmongProjects(projectId),
  });
}

export async function cancelExtraction(client: Client, fileId: string): Promise<void> {
  try {
    await client.workflow.getHandle(extractionWorkflowId(fileId)).cancel();
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}
