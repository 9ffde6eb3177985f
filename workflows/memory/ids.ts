/** What a run taught about its subject: one workflow per run, so a run that ends twice (a retried ending) is read once. */
export function memoryWorkflowId(runId: string): string {
  return `memory-${runId}`;
}
