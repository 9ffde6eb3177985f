import type { components } from '../api/generated/openapi.js';
import type { ScheduledRunRecord, ScheduleRecord } from '../records/schedules.js';
import { nextTimes } from '../records/schedule-times.js';
import { unixSeconds } from './time.js';

export type ScheduleObject = components['schemas']['Schedule'];

/** How many next times, and latest runs, a schedule shows. */
export const SHOWN_TIMES = 5;

export function presentSchedule(schedule: ScheduleRecord, recentRuns: ScheduledRunRecord[], now = new Date()): ScheduleObject {
  const timing =
    schedule.cron !== null ? { cron: schedule.cron, timezone: schedule.timezone } : { intervalSeconds: schedule.interval_seconds! };
  return {
    id: schedule.id,
    object: 'schedule',
    name: schedule.name,
    agent_id: schedule.agent_id,
    network_id: schedule.network_id,
    cron: schedule.cron,
    timezone: schedule.timezone,
    interval_seconds: schedule.interval_seconds,
    run: schedule.run,
    overlap: schedule.overlap,
    catchup_window_seconds: schedule.catchup_window_seconds,
    paused: schedule.paused,
    metadata: schedule.metadata,
    managed_resource: schedule.managed_resource,
    next_run_times: schedule.paused ? [] : nextTimes(timing, SHOWN_TIMES, now).map((at) => unixSeconds(at)),
    recent_runs: recentRuns.map((run) => ({
      run_id: run.id,
      scheduled_at: unixSeconds(run.scheduled_at),
      status: run.status === 'in_progress' && run.pending_approvals > 0 ? 'requires_action' : run.status,
    })),
    last_error: schedule.last_error,
    created_at: unixSeconds(schedule.created_at),
    updated_at: unixSeconds(schedule.updated_at),
  };
}

export function presentDeletedSchedule(id: string): components['schemas']['DeletedSchedule'] {
  return { id, object: 'schedule', deleted: true };
}
