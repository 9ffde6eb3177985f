/** One workflow per network run. */
export function networkRunWorkflowId(runId: string): string {
  return `network-run-${runId}`;
}
