/**
 * The maintenance Schedule: one per Temporal namespace (so one per cluster), a round every 30 s, never two
 * rounds at once. Every worker makes sure of it at start: the first creates it, the others find it, and
 * one whose definition differs (a new release) writes its own. It outlives any worker, as it should.
 */
import { isDeepStrictEqual } from 'node:util';
import {
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleDescription,
  type ScheduleOptions,
  type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import { TASK_QUEUE } from '../names.js';
import type { maintenanceWorkflow } from './workflow.js';

export const MAINTENANCE_SCHEDULE_ID = 'agentplane-maintenance';

type Definition = Omit<ScheduleOptions<ScheduleOptionsStartWorkflowAction<typeof maintenanceWorkflow>>, 'scheduleId'>;

const definition = {
  spec: { intervals: [{ every: 30_000, offset: 0 }] },
  action: {
    type: 'startWorkflow',
    workflowType: 'maintenanceWorkflow',
    workflowId: MAINTENANCE_SCHEDULE_ID,
    taskQueue: TASK_QUEUE,
    // A round stuck beyond this (no worker polling, say) gives way to the next.
    workflowExecutionTimeout: 10 * 60_000,
  },
  policies: {
    overlap: ScheduleOverlapPolicy.SKIP,
    // After a Temporal outage, one late round is worth running; a backlog of them is not.
    catchupWindow: 60_000,
  },
} satisfies Definition;

/** What the definition fixes, in the form `describe()` answers, so a difference means it changed. */
function essentials(schedule: ScheduleDescription | typeof definition) {
  return {
    intervals: schedule.spec.intervals,
    calendars: 'calendars' in schedule.spec ? (schedule.spec.calendars?.length ?? 0) : 0,
    workflowType: schedule.action.workflowType,
    taskQueue: schedule.action.taskQueue,
    workflowExecutionTimeout: schedule.action.workflowExecutionTimeout,
    overlap: schedule.policies.overlap,
    catchupWindow: schedule.policies.catchupWindow,
  };
}

/** Creates the maintenance Schedule, or brings an existing one up to this definition. */
export async function scheduleMaintenance(client: Client): Promise<void> {
  try {
    // The first round at once: a cluster coming up may have missed starts waiting since before it was down.
    await client.schedule.create({ scheduleId: MAINTENANCE_SCHEDULE_ID, ...definition, state: { triggerImmediately: true } });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    const handle = client.schedule.getHandle(MAINTENANCE_SCHEDULE_ID);
    if (isDeepStrictEqual(essentials(await handle.describe()), essentials(definition))) return;
    // An operator's pause (the state) is kept.
    await handle.update((current) => ({ ...definition, state: current.state }));
  }
}
