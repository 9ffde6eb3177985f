/** The tool a member of a handoff network calls to pass the task on; the workflow ends the member's hop on it. */
export const HANDOFF_TOOL = 'handoff';

/** The signal that tells an `enqueue` run waiting its turn to look again. */
export const ADMIT_SIGNAL = 'admit';

/** The signal that tells a run one of its approvals was decided (its id). */
export const APPROVAL_SIGNAL = 'approval-decided';

/** One workflow per run: starting a run twice finds the same workflow. */
export function runWorkflowId(runId: string): string {
  return `agent-run-${runId}`;
}
