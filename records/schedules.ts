/**
 * Schedules: an agent or a network run at cron times or every so many seconds. The row is the truth and its
 * Temporal Schedule follows it (workflows/schedules/client.ts): every change counts a revision, and the
 * revision last written to Temporal is kept beside it, so what Temporal missed is found and written again.
 */
import type { components } from '../api/generated/openapi.js';
import { newId } from './ids.js';
import type { Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import type { RunStatus } from './runs.js';
import { managedConditions, type ManagedFilter, type ManagedResource } from './managed-resources.js';

export type ScheduleOverlap = 'skip' | 'queue_one' | 'allow';
/** The run request each firing makes, as the run endpoints take it (without `wait` and `stream`). */
export type ScheduledRunRequest = components['schemas']['ScheduledRunRequest'];

export interface ScheduleError {
  code: string;
  message: string;
  scheduled_at: number;
}

export interface ScheduleRecord {
  id: string;
  project_id: string;
  name: string | null;
  agent_id: string | null;
  network_id: string | null;
  cron: string | null;
  timezone: string;
  interval_seconds: number | null;
  run: ScheduledRunRequest;
  overlap: ScheduleOverlap;
  catchup_window_seconds: number;
  paused: boolean;
  metadata: Record<string, string>;
  api_key_id: string | null;
  managed_resource: ManagedResource | null;
  last_error: ScheduleError | null;
  revision: number;
  synced_revision: number | null;
  deleted_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** What a schedule fires and when: the fields a create sets and an update may change. */
export interface ScheduleDefinition {
  name: string | null;
  agentId: string | null;
  networkId: string | null;
  cron: string | null;
  timezone: string;
  intervalSeconds: number | null;
  run: ScheduledRunRequest;
  overlap: ScheduleOverlap;
  catchupWindowSeconds: number;
  paused: boolean;
  metadata: Record<string, string>;
}

const COLUMNS = `s.id, s.project_id, s.name, s.agent_id, s.network_id, s.cron, s.timezone, s.interval_seconds, s.run, s.overlap,
  s.catchup_window_seconds, s.paused, s.metadata, s.api_key_id, s.managed_resource, s.last_error, s.revision, s.synced_revision, s.deleted_at,
  s.created_at, s.updated_at`;

export async function insertSchedule(
  tx: Queryable,
  projectId: string,
  apiKeyId: string,
  schedule: ScheduleDefinition,
  managed: ManagedResource | null = null,
): Promise<ScheduleRecord> {
  const id = newId('sched');
  await tx.query(
    `INSERT INTO schedules (id, project_id, name, agent_id, network_id, cron, timezone, interval_seconds, run, overlap,
       catchup_window_seconds, paused, metadata, api_key_id, managed_resource)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
    [
      id,
      projectId,
      schedule.name,
      schedule.agentId,
      schedule.networkId,
      schedule.cron,
      schedule.timezone,
      schedule.intervalSeconds,
      JSON.stringify(schedule.run),
      schedule.overlap,
      schedule.catchupWindowSeconds,
      schedule.paused,
      schedule.metadata,
      apiKeyId,
      managed === null ? null : JSON.stringify(managed),
    ],
  );
  return (await findSchedule(tx, projectId, id))!;
}

/** The most schedules a project holds, paused or not: each is a Temporal Schedule that every project's runs share. */
export const MAX_SCHEDULES_PER_PROJECT = 100;

/**
 * The most times a minute a project's interval schedules that are not paused may start runs, all together: one
 * schedule every second, or sixty every minute. A cron schedule starts at most one a minute, and the number of
 * schedules bounds those.
 */
export const MAX_INTERVAL_STARTS_PER_MINUTE = 60;

/** How many times a minute an interval schedule starts a run; a cron or paused one is not counted. */
export const startsPerMinuteOf = (schedule: { intervalSeconds: number | null; paused: boolean }): number =>
  schedule.paused || schedule.intervalSeconds === null ? 0 : 60 / schedule.intervalSeconds;

/**
 * The project's live schedules, but `except`: how many, and how many runs a minute the interval ones not paused
 * start. Takes the project's schedules lock first, so that two changes at once count each other.
 */
export async function scheduleLoadOf(
  tx: Queryable,
  projectId: string,
  except: string | null,
): Promise<{ count: number; startsPerMinute: number }> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('schedules:' || $1))`, [projectId]);
  const { rows } = await tx.query<{ count: number; starts: number }>(
    `SELECT count(*)::int AS count,
            coalesce(sum(60.0 / interval_seconds) FILTER (WHERE NOT paused AND interval_seconds IS NOT NULL), 0)::float8 AS starts
     FROM schedules WHERE project_id = $1 AND deleted_at IS NULL AND id IS DISTINCT FROM $2`,
    [projectId, except],
  );
  return { count: rows[0]!.count, startsPerMinute: rows[0]!.starts };
}

/** A live schedule of the project; with `lock`, its row is held until the transaction ends. */
export async function findSchedule(
  db: Queryable,
  projectId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ScheduleRecord | null> {
  const { rows } = await db.query<ScheduleRecord>(
    `SELECT ${COLUMNS} FROM schedules s WHERE s.id = $1 AND s.project_id = $2 AND s.deleted_at IS NULL${options.lock ? ' FOR UPDATE' : ''}`,
    [id, projectId],
  );
  return rows[0] ?? null;
}

export async function listSchedules(
  db: Queryable,
  projectId: string,
  page: PageRequest,
  filter: ManagedFilter = {},
): Promise<Page<ScheduleRecord>> {
  return selectPage<ScheduleRecord>(db, {
    table: 'schedules',
    from: 'schedules s',
    alias: 's',
    columns: COLUMNS,
    projectId,
    conditions: [['s.deleted_at IS NULL'], ...managedConditions('s', filter)],
    page,
  });
}

/** Writes the whole definition (the caller merged the change into it) and counts a revision. */
export async function updateSchedule(tx: Queryable, projectId: string, id: string, schedule: ScheduleDefinition): Promise<ScheduleRecord> {
  await tx.query(
    `UPDATE schedules SET name = $3, cron = $4, timezone = $5, interval_seconds = $6, run = $7, overlap = $8,
       catchup_window_seconds = $9, paused = $10, metadata = $11, revision = revision + 1, updated_at = now()
     WHERE id = $1 AND project_id = $2`,
    [
      id,
      projectId,
      schedule.name,
      schedule.cron,
      schedule.timezone,
      schedule.intervalSeconds,
      JSON.stringify(schedule.run),
      schedule.overlap,
      schedule.catchupWindowSeconds,
      schedule.paused,
      schedule.metadata,
    ],
  );
  return (await findSchedule(tx, projectId, id))!;
}

/** Marks the schedule deleted; its row stays until its Temporal Schedule is gone (`forgetSchedule`). */
export async function deleteSchedule(tx: Queryable, projectId: string, id: string): Promise<boolean> {
  const { rowCount } = await tx.query(
    'UPDATE schedules SET deleted_at = now(), revision = revision + 1, updated_at = now() WHERE id = $1 AND project_id = $2 AND deleted_at IS NULL',
    [id, projectId],
  );
  return (rowCount ?? 0) > 0;
}

/** Deletes the schedules of an agent or a network being deleted, in its transaction: a schedule never outlives what it runs. */
export async function deleteSchedulesOf(
  tx: Queryable,
  projectId: string,
  target: { agentId: string } | { networkId: string },
): Promise<string[]> {
  const [column, value] = 'agentId' in target ? ['agent_id', target.agentId] : ['network_id', target.networkId];
  const { rows } = await tx.query<{ id: string }>(
    `UPDATE schedules SET deleted_at = now(), revision = revision + 1, updated_at = now()
     WHERE project_id = $1 AND ${column} = $2 AND deleted_at IS NULL RETURNING id`,
    [projectId, value],
  );
  return rows.map((r) => r.id);
}

/** The schedule as it stands, deleted or not, for writing it to Temporal. */
export async function scheduleById(db: Queryable, id: string): Promise<ScheduleRecord | null> {
  const { rows } = await db.query<ScheduleRecord>(`SELECT ${COLUMNS} FROM schedules s WHERE s.id = $1`, [id]);
  return rows[0] ?? null;
}

/** Temporal holds `revision` of the schedule now; a deleted schedule's row goes once Temporal's is gone. */
export async function recordScheduleSynced(db: Queryable, id: string, revision: number): Promise<void> {
  await db.query('UPDATE schedules SET synced_revision = $2 WHERE id = $1 AND revision = $2 AND deleted_at IS NULL', [id, revision]);
  await db.query('DELETE FROM schedules WHERE id = $1 AND revision = $2 AND deleted_at IS NOT NULL', [id, revision]);
}

/**
 * Schedules whose Temporal side is behind (changed, or deleted) for longer than `olderThanSeconds`: taken in turns
 * across projects (each project's oldest first, then each one's second, …), so that one project's schedules that
 * Temporal keeps refusing cannot hold back another's.
 */
export async function schedulesBehind(db: Queryable, olderThanSeconds: number, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM (
       SELECT id, updated_at, row_number() OVER (PARTITION BY project_id ORDER BY updated_at, id) AS turn
       FROM schedules WHERE (synced_revision IS DISTINCT FROM revision OR deleted_at IS NOT NULL)
         AND updated_at < now() - make_interval(secs => $1)
     ) behind
     ORDER BY turn, updated_at, id LIMIT $2`,
    [olderThanSeconds, limit],
  );
  return rows.map((r) => r.id);
}

/** Why the latest firing made no run, or null once one has. */
export async function recordScheduleError(db: Queryable, id: string, error: ScheduleError | null): Promise<void> {
  await db.query('UPDATE schedules SET last_error = $2 WHERE id = $1', [id, error === null ? null : JSON.stringify(error)]);
}

export interface ScheduledRunRecord {
  id: string;
  schedule_id: string;
  status: RunStatus;
  pending_approvals: number;
  scheduled_at: Date;
  created_at: Date;
}

/** The latest `perSchedule` runs of each schedule, newest first. */
export async function recentRunsOfSchedules(
  db: Queryable,
  scheduleIds: string[],
  perSchedule: number,
): Promise<Map<string, ScheduledRunRecord[]>> {
  const recent = new Map<string, ScheduledRunRecord[]>(scheduleIds.map((id) => [id, []]));
  if (scheduleIds.length === 0) return recent;
  const { rows } = await db.query<ScheduledRunRecord>(
    `SELECT r.id, r.schedule_id, r.status, r.pending_approvals, r.scheduled_at, r.created_at
     FROM unnest($1::text[]) s(id) CROSS JOIN LATERAL (
       SELECT id, schedule_id, status, pending_approvals, scheduled_at, created_at FROM runs
       WHERE schedule_id = s.id ORDER BY scheduled_at DESC LIMIT $2
     ) r`,
    [scheduleIds, perSchedule],
  );
  for (const row of rows) recent.get(row.schedule_id)!.push(row);
  return recent;
}

/** The run a schedule made for a time, if it made one. */
export async function runOfFiring(db: Queryable, scheduleId: string, scheduledAt: Date): Promise<string | null> {
  const { rows } = await db.query<{ id: string }>('SELECT id FROM runs WHERE schedule_id = $1 AND scheduled_at = $2', [
    scheduleId,
    scheduledAt,
  ]);
  return rows[0]?.id ?? null;
}
