/** What went wrong, in words, for a workflow to record: an activity's failure is told by its cause. Workflow-safe. */
import { ActivityFailure } from '@temporalio/workflow';

export function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return err instanceof Error ? err.message : String(err);
}
