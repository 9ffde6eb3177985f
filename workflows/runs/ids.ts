/** One workflow per run: starting a run twice finds the same workflow. */
export function runWorkflowId(runId: string): string {
  return `agent-run-${runId}`;
}
