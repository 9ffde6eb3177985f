/** The Temporal names of a schedule: its Temporal Schedule's id, and its actions' workflow ids. */
export const temporalScheduleId = (scheduleId: string) => `schedule-${scheduleId}`;

/** Temporal adds `-<scheduled time>` (RFC 3339) to it for each action. */
export const scheduledRunWorkflowId = (scheduleId: string) => `scheduled-run-${scheduleId}`;

/** The time an action's workflow was scheduled for, read from its workflow id; null for an id of another form. */
export function scheduledTimeOf(workflowId: string, scheduleId: string): string | null {
  const prefix = `${scheduledRunWorkflowId(scheduleId)}-`;
  if (!workflowId.startsWith(prefix)) return null;
  const at = Date.parse(workflowId.slice(prefix.length));
  return Number.isNaN(at) ? null : new Date(at).toISOString();
}
