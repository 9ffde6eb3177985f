/**
 * One time of a schedule: makes its run, through the records path the run endpoints use, and lasts until the run
 * ends, so that the Temporal Schedule's overlap policy (skip, buffer one, allow all) applies to the runs themselves.
 */
import { proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { ScheduleActivities } from './activities.js';
import { scheduledTimeOf } from './ids.js';

const { startScheduledRun, hasRunEnded } = proxyActivities<ScheduleActivities>({
  // Single transactions and a workflow start; through a database or Temporal outage they are retried until it passes.
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** How often the run is looked at: soon for a short run, then every half minute, so a long one adds little history. */
const FIRST_LOOK_MS = 1_000;
const LATEST_LOOK_MS = 30_000;

export interface ScheduledRunInput {
  scheduleId: string;
  projectId: string;
}

/** The run made, or null when the time made none (the schedule paused or gone, a limit reached). */
export interface ScheduledRunOutcome {
  runId: string | null;
}

export async function scheduledRunWorkflow({ scheduleId, projectId }: ScheduledRunInput): Promise<ScheduledRunOutcome> {
  const info = workflowInfo();
  // A workflow started by hand (not by the Schedule) is taken to be scheduled for when it started.
  const scheduledAt = scheduledTimeOf(info.workflowId, scheduleId) ?? info.startTime.toISOString();
  const runId = await startScheduledRun({ scheduleId, projectId, scheduledAt });
  if (runId === null) return { runId };
  let wait = FIRST_LOOK_MS;
  while (!(await hasRunEnded(runId))) {
    await sleep(wait);
    wait = Math.min(wait * 2, LATEST_LOOK_MS);
  }
  return { runId };
}
