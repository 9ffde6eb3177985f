/** One workflow per experiment: starting an experiment twice finds the same workflow. */
export function experimentWorkflowId(experimentId: string): string {
  return `experiment-${experimentId}`;
}
