/** The tool a member of a handoff network calls to pass the task on; the workflow ends the member's hop on it. */
export const HANDOFF_TOOL = 'handoff';

/** The signal that tells an `enqueue` run waiting its turn to look again. */
export const ADMIT_SIGNAL = 'admit';

/**
 * How long an `enqueue` run waits before looking for its turn on its own. The run ahead of it wakes it when it
 * ends, and each maintenance round wakes one whose turn has come (a wake lost while Temporal was unreachable);
 * this is the last resort, kept long so that a queue of waiting runs costs Temporal almost nothing.
 */
export const QUEUED_RUN_RECHECK = '1 minute';

/** One workflow per run: starting a run twice finds the same workflow. */
export function runWorkflowId(runId: string): string {
  return `agent-run-${runId}`;
}
