/** Names shared by the worker and everything that starts or signals its workflows. */
export const TASK_QUEUE = 'agentplane';

export function extractionWorkflowId(fileId: string): string {
  return `file-extraction-${fileId}`;
}
