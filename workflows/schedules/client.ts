/**
 * Each schedule's Temporal Schedule, written from its record: created, brought up to the record's revision, or
 * deleted with it. The API writes it after committing a change; the maintenance round writes those Temporal
 * missed (it was down), so the record is always the truth and Temporal catches up with it.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleOptions,
  type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import type { Queryable } from '../../records/db.js';
import { recordScheduleSynced, scheduleById, type ScheduleOverlap, type ScheduleRecord } from '../../records/schedules.js';
import { temporalCron, timezoneNamed } from '../../records/schedule-times.js';
import { TASK_QUEUE } from '../names.js';
import type { scheduledRunWorkflow } from './workflow.js';
import { scheduledRunWorkflowId, temporalScheduleId } from './ids.js';

type Definition = Omit<ScheduleOptions<ScheduleOptionsStartWorkflowAction<typeof scheduledRunWorkflow>>, 'scheduleId'>;

/** The overlap policy applies to the scheduled runs themselves: each action's workflow lasts as long as its run. */
const OVERLAP: Record<ScheduleOverlap, ScheduleOverlapPolicy> = {
  skip: ScheduleOverlapPolicy.SKIP,
  queue_one: ScheduleOverlapPolicy.BUFFER_ONE,
  allow: ScheduleOverlapPolicy.ALLOW_ALL,
};

function definitionOf(schedule: ScheduleRecord): Definition {
  return {
    spec:
      schedule.cron !== null
        ? // Read as the platform reads it, in the time zone as the database spells it (a schedule saved before
          // names were checked for their case included).
          { cronExpressions: [temporalCron(schedule.cron)], timezone: timezoneNamed(schedule.timezone) ?? schedule.timezone }
        : { intervals: [{ every: schedule.interval_seconds! * 1000, offset: 0 }] },
    action: {
      type: 'startWorkflow',
      workflowType: 'scheduledRunWorkflow',
      // Temporal adds the scheduled time to it: one workflow per time.
      workflowId: scheduledRunWorkflowId(schedule.id),
      taskQueue: TASK_QUEUE,
      // It only makes a run; the run's own workflow carries the project as its fairness key.
      args: [{ scheduleId: schedule.id, projectId: schedule.project_id }],
    },
    policies: { overlap: OVERLAP[schedule.overlap], catchupWindow: schedule.catchup_window_seconds * 1000 },
    state: { paused: schedule.paused },
  };
}

/** Makes the Temporal Schedule match the record as it stands now, and records the revision Temporal holds. */
export async function syncSchedule(db: Queryable, client: Client, scheduleId: string): Promise<void> {
  const schedule = await scheduleById(db, scheduleId);
  if (!schedule) return;
  const handle = client.schedule.getHandle(temporalScheduleId(schedule.id));
  if (schedule.deleted_at !== null) {
    await handle.delete().catch((err: unknown) => {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
    });
  } else {
    const definition = definitionOf(schedule);
    try {
      await client.schedule.create({ scheduleId: temporalScheduleId(schedule.id), ...definition });
    } catch (err) {
      if (!(err instanceof ScheduleAlreadyRunning)) throw err;
      await handle.update(() => ({ ...definition, state: { paused: schedule.paused } }));
    }
  }
  await recordScheduleSynced(db, schedule.id, schedule.revision);
}

/** One time of one schedule: the project it was made for, and the time (ISO 8601) it was scheduled for. */
export interface ScheduledFiring {
  scheduleId: string;
  projectId: string;
  scheduledAt: string;
}

/** Makes the time's run once and starts it; answers its id, or null when the time makes none. */
export type ScheduledRunAdmission = (
  firing: ScheduledFiring,
  client: Client,
  warn: (details: Record<string, unknown>, message: string) => void,
) => Promise<string | null>;
