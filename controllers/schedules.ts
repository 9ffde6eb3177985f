/**
 * The schedules an Agent or AgentNetwork declares (spec.schedules) → the platform's schedules of its record,
 * marked as the resource's: created, brought back to the spec when they differ, and deleted once their entry
 * is gone. Each is known by its entry's name among the schedules the resource manages.
 */
import { isDeepStrictEqual } from 'node:util';
import type { Platform, Schedule, ScheduleBody } from './platform.js';
import type { AgentSpec, Kind, Resource, ResourceStatus } from './resources.js';

export type ScheduleSpec = NonNullable<AgentSpec['schedules']>[number];
type Changeable = Pick<ScheduleBody, 'cron' | 'timezone' | 'interval_seconds' | 'run' | 'overlap' | 'catchup_window_seconds' | 'paused'>;

/** What the entry asks of its schedule, in the API's words, with the API's defaults filled in as it returns them. */
export function scheduleFields(entry: ScheduleSpec): Changeable {
  const run = entry.run;
  return {
    ...(entry.cron !== undefined
      ? { cron: entry.cron.trim(), timezone: entry.timezone ?? 'UTC' }
      : { interval_seconds: entry.intervalSeconds! }),
    run: {
      input: run.input,
      ...(run.metadata ? { metadata: run.metadata } : {}),
      ...(run.model !== undefined ? { model: run.model } : {}),
      ...(run.maxCostUsd !== undefined ? { max_cost_usd: run.maxCostUsd } : {}),
    },
    overlap: entry.overlap ?? 'skip',
    catchup_window_seconds: entry.catchupWindowSeconds ?? 60,
    paused: entry.paused ?? false,
  };
}

/** Whether the platform's schedule differs from what its entry asks. */
export function scheduleDiffers(schedule: Schedule, wanted: Changeable): boolean {
  const current: Changeable = {
    ...(schedule.cron !== null ? { cron: schedule.cron, timezone: schedule.timezone } : { interval_seconds: schedule.interval_seconds! }),
    run: schedule.run,
    overlap: schedule.overlap,
    catchup_window_seconds: schedule.catchup_window_seconds,
    paused: schedule.paused,
  };
  return !isDeepStrictEqual(comparable(current), comparable(wanted));
}

/**
 * The fields as compared: a time zone by its letters alone, as the platform keeps one given in another case as the
 * time zone database spells it (`europe/paris` is `Europe/Paris`), which is no change to make again.
 */
function comparable(fields: Changeable): unknown {
  const plain = JSON.parse(JSON.stringify(fields)) as Changeable;
  return plain.timezone === undefined ? plain : { ...plain, timezone: plain.timezone.toLowerCase() };
}

/** Makes the record's schedules match the resource's entries; answers them for the status, in the spec's order. */
export async function syncSchedules(
  platform: Platform,
  kind: Kind,
  resource: Resource<{ schedules?: ScheduleSpec[] }>,
  recordId: string,
): Promise<Pick<ResourceStatus, 'schedules'>> {
  const { namespace, name, uid } = resource.metadata;
  const entries = resource.spec.schedules ?? [];
  // A resource that declares no schedule and shows none has none to keep or remove: the platform is not asked, so a
  // controller key made before schedules (without their scopes) goes on reconciling what declares none.
  if (entries.length === 0 && !resource.status?.schedules?.length) return { schedules: [] };
  const existing = new Map((await platform.managedSchedules(uid)).map((s) => [s.name ?? '', s]));
  const shown: NonNullable<ResourceStatus['schedules']> = [];
  for (const entry of entries) {
    const wanted = scheduleFields(entry);
    const current = existing.get(entry.name);
    existing.delete(entry.name);
    let schedule: Schedule | null;
    if (!current) {
      schedule = await platform.createSchedule({
        name: entry.name,
        ...(kind === 'Agent' ? { agent_id: recordId } : { network_id: recordId }),
        ...wanted,
        managed_resource: { kind, namespace, name, uid },
      });
    } else if (scheduleDiffers(current, wanted)) {
      schedule = await platform.updateSchedule(current.id, wanted);
    } else {
      schedule = current;
    }
    if (!schedule) continue;
    const next = schedule.next_run_times[0];
    shown.push({
      name: entry.name,
      id: schedule.id,
      ...(next !== undefined ? { nextRunTime: new Date(next * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z') } : {}),
    });
  }
  // Entries removed from the spec (and any schedule of the resource's by another name).
  for (const gone of existing.values()) await platform.deleteSchedule(gone.id);
  return { schedules: shown };
}
