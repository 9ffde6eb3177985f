/** The judge of a run: one workflow per run, so a run that ends twice (a retried ending) is judged once. */
export function runJudgeWorkflowId(runId: string): string {
  return `run-judge-${runId}`;
}
