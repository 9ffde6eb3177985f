/**
 * /v1/schedules: an agent or a network run at cron times or every so many seconds. Each change commits the
 * record (with its audit entry) and then writes the Temporal Schedule; one Temporal misses (it is down) is
 * written by the maintenance round, so an accepted change is never lost.
 */
import Router from '@koa/router';
import type { Middleware } from 'koa';
import type { ApiContext, ApiDeps, ApiState, Caller } from '../../context.js';
import type { Queryable } from '../../../records/db.js';
import { callerOf } from '../../context.js';
import { requireAnyScope, requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation, type Input } from '../../validation.js';
import { ConflictError, InvalidRequestError, NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { createOnce } from '../../idempotency.js';
import {
  deleteSchedule,
  findSchedule,
  insertSchedule,
  listSchedules,
  MAX_INTERVAL_STARTS_PER_MINUTE,
  MAX_SCHEDULES_PER_PROJECT,
  recentRunsOfSchedules,
  scheduleLoadOf,
  startsPerMinuteOf,
  updateSchedule,
  type ScheduleDefinition,
  type ScheduleRecord,
} from '../../../records/schedules.js';
import { presentDeletedSchedule, presentSchedule, SHOWN_TIMES } from '../../../presenters/schedule.js';
import { presentList } from '../../../presenters/list.js';
import { syncSchedule } from '../../../workflows/schedules/client.js';
import { cronProblem, timezoneNamed } from '../../../records/schedule-times.js';
import { holdAgent } from '../../../records/agents.js';
import { holdNetwork } from '../../../records/networks.js';
import { checkRunRequest } from '../runs/admission.js';
import { refuseUnmanagedChange } from '../managed.js';
import { deprecatedUpdateByPost, SCHEDULES_PATCH_SINCE } from '../../middleware/deprecated-update.js';

const DEFAULT_CATCHUP_WINDOW_SECONDS = 60;
// The longest `interval_seconds` the document allows: a year.
const MAX_INTERVAL_SECONDS = 31_536_000;

type Timing = Pick<ScheduleDefinition, 'cron' | 'timezone' | 'intervalSeconds'>;

/** Exactly one of `cron` (with its time zone) and `interval_seconds`, each checked as Temporal will read it. */
function timingOf(body: { cron?: string; timezone?: string; interval_seconds?: number }, current?: Timing): Timing {
  if (body.cron !== undefined && body.interval_seconds !== undefined) {
    throw InvalidRequestError('invalid_schedule', 'Give `cron` or `interval_seconds`, not both.', 'cron');
  }
  if (body.cron === undefined && body.interval_seconds === undefined && !current) {
    throw InvalidRequestError('invalid_schedule', 'Give `cron` (with `timezone`) or `interval_seconds`: when the schedule runs.', 'cron');
  }
  if (current && body.cron === undefined && body.interval_seconds === undefined && body.timezone === undefined) return current;
  if (body.interval_seconds !== undefined) {
    if (body.timezone !== undefined) {
      throw InvalidRequestError(
        'invalid_schedule',
        '`timezone` goes with `cron`; `interval_seconds` counts from the Unix epoch.',
        'timezone',
      );
    }
    return { cron: null, timezone: 'UTC', intervalSeconds: body.interval_seconds };
  }
  const cron = body.cron ?? current?.cron ?? null;
  if (cron === null)
    throw InvalidRequestError('invalid_schedule', '`timezone` goes with `cron`; this schedule runs every `interval_seconds`.', 'timezone');
  const problem = cronProblem(cron);
  if (problem !== null) throw InvalidRequestError('invalid_cron', `\`cron\` is not a schedule: ${problem}`, 'cron');
  const given = body.timezone ?? (body.cron !== undefined ? 'UTC' : current!.timezone);
  // Kept as the time zone database spells it, which is how Temporal looks it up.
  const timezone = timezoneNamed(given);
  if (timezone === null) {
    throw InvalidRequestError(
      'invalid_timezone',
      `\`timezone\` ${JSON.stringify(given)} is not an IANA time zone name (such as Europe/Paris).`,
      'timezone',
    );
  }
  return { cron: cron.trim(), timezone, intervalSeconds: null };
}

/** The target named, exactly one: an agent or a network of the project. */
function targetOf(body: Input<'createSchedule'>['body']): { kind: 'agent' | 'network'; id: string } {
  if ((body.agent_id === undefined) === (body.network_id === undefined)) {
    throw InvalidRequestError('invalid_schedule', 'Give `agent_id` or `network_id`: what the schedule runs.', 'agent_id');
  }
  return body.agent_id !== undefined ? { kind: 'agent', id: body.agent_id } : { kind: 'network', id: body.network_id! };
}

/** The run request checked as the run endpoints check one, against the schedule's target as it is now. */
async function checkScheduledRun(deps: ApiDeps, caller: Caller, schedule: Pick<ScheduleDefinition, 'agentId' | 'networkId' | 'run'>) {
  const kind = schedule.agentId !== null ? 'agent' : 'network';
  await checkRunRequest(deps, caller, kind, (schedule.agentId ?? schedule.networkId)!, schedule.run, {
    targetParam: `${kind}_id`,
    under: 'run.',
  });
}

/**
 * Refuses a schedule the project has no room for: a new one past the most a project holds, or one that would make
 * the project's interval schedules start more runs a minute than allowed (a change that starts no more than the
 * schedule did before is let through, so that a project over the limit can still rename or pause).
 */
async function refuseOverProjectLoad(
  tx: Queryable,
  projectId: string,
  wanted: Pick<ScheduleDefinition, 'intervalSeconds' | 'paused'>,
  current: ScheduleRecord | null,
): Promise<void> {
  const others = await scheduleLoadOf(tx, projectId, current?.id ?? null);
  if (!current && others.count >= MAX_SCHEDULES_PER_PROJECT) {
    throw ConflictError('too_many_schedules', `A project has at most ${MAX_SCHEDULES_PER_PROJECT} schedules; delete one first.`);
  }
  const starts = startsPerMinuteOf(wanted);
  const before = current ? startsPerMinuteOf({ intervalSeconds: current.interval_seconds, paused: current.paused }) : 0;
  // A small allowance for the sum of fractions (60 schedules every 60 s start 60 a minute, not a little more).
  if (starts <= before || others.startsPerMinute + starts <= MAX_INTERVAL_STARTS_PER_MINUTE + 1e-9) return;
  const room = MAX_INTERVAL_STARTS_PER_MINUTE - others.startsPerMinute;
  const shortest = room > 60 / MAX_INTERVAL_SECONDS ? Math.ceil(60 / room - 1e-9) : null;
  throw ConflictError(
    'schedules_too_frequent',
    `The project's interval schedules that are not paused would start ${formatStarts(others.startsPerMinute + starts)} runs a minute, ` +
      `more than the ${MAX_INTERVAL_STARTS_PER_MINUTE} allowed: ` +
      (shortest === null
        ? 'pause or delete one of the others first.'
        : `give \`interval_seconds\` of at least ${shortest}, or pause or delete one of the others.`),
    current && wanted.intervalSeconds === current.interval_seconds ? 'paused' : 'interval_seconds',
  );
}

const formatStarts = (perMinute: number) => (Math.round(perMinute * 100) / 100).toLocaleString('en-US');

/** Writes the Temporal Schedule now; if Temporal does not answer, the maintenance round writes it later. */
export async function writeToTemporal(ctx: ApiContext, deps: ApiDeps, scheduleIds: string[]): Promise<void> {
  for (const id of scheduleIds) {
    await syncSchedule(deps.db, deps.temporal, id).catch((err) =>
      ctx.state.log.warn({ err, schedule_id: id }, 'the Temporal Schedule was not written; the maintenance round will write it'),
    );
  }
}

async function present(deps: ApiDeps, schedules: ScheduleRecord[]) {
  const recent = await recentRunsOfSchedules(
    deps.db,
    schedules.map((s) => s.id),
    SHOWN_TIMES,
  );
  return schedules.map((s) => presentSchedule(s, recent.get(s.id) ?? []));
}

export function scheduleRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  // Making or changing a schedule makes runs: it needs the run scope too, but for the Kubernetes controller's key,
  // which writes the schedules resources declare (Kubernetes' RBAC granted those) and runs nothing itself.
  const runScope: Middleware<ApiState> = (ctx, next) => (callerOf(ctx).controller ? next() : requireScope('agents:run')(ctx, next));
  const writes = [requireScope('schedules:write'), runScope] as const;
  const reads = requireAnyScope('schedules:read', 'schedules:write');

  router.post(
    '/v1/schedules',
    audited(deps.db, 'schedule.create', 'schedule'),
    ...writes,
    operation('createSchedule', async (ctx, { body }) => {
      const caller = callerOf(ctx);
      const target = targetOf(body);
      const definition: ScheduleDefinition = {
        name: body.name ?? null,
        agentId: target.kind === 'agent' ? target.id : null,
        networkId: target.kind === 'network' ? target.id : null,
        ...timingOf(body),
        run: body.run,
        overlap: body.overlap ?? 'skip',
        catchupWindowSeconds: body.catchup_window_seconds ?? DEFAULT_CATCHUP_WINDOW_SECONDS,
        paused: body.paused ?? false,
        metadata: body.metadata ?? {},
      };
      await checkScheduledRun(deps, caller, definition);
      const { created, replayed } = await createOnce(ctx, deps, body, async (tx) => {
        // Checked above but not held, a target deleted since would leave a schedule that outlives it.
        const held = await (target.kind === 'agent' ? holdAgent : holdNetwork)(tx, caller.projectId, target.id);
        if (!held) throw NotFoundError(target.kind, target.id, `${target.kind}_id`);
        // After the target's lock, as every writer of schedules takes the project's last.
        await refuseOverProjectLoad(tx, caller.projectId, definition, null);
        const schedule = await insertSchedule(tx, caller.projectId, caller.apiKeyId, definition, body.managed_resource ?? null);
        return { status: 201, body: presentSchedule(schedule, []) };
      });
      if (!replayed) await writeToTemporal(ctx, deps, [created.body.id]);
      respond(ctx, created);
    }),
  );

  router.get(
    '/v1/schedules',
    reads,
    operation('listSchedules', async (ctx, { query }) => {
      const filter = { managedBy: query.managed_by, managedUid: query.managed_uid };
      const page = await listSchedules(deps.db, callerOf(ctx).projectId, pageRequestOf(query), filter);
      const shown = new Map((await present(deps, page.rows)).map((s) => [s.id, s]));
      ctx.body = presentList(page, (s) => shown.get(s.id)!);
    }),
  );

  router.get(
    '/v1/schedules/:id',
    reads,
    operation('getSchedule', async (ctx, { path: { id } }) => {
      const schedule = await findSchedule(deps.db, callerOf(ctx).projectId, id);
      if (!schedule) throw NotFoundError('schedule', id);
      ctx.body = (await present(deps, [schedule]))[0];
    }),
  );

  // PATCH is the update verb; POST answers the same for clients written before it, marked deprecated.
  const update = [
    audited(deps.db, 'schedule.update', 'schedule'),
    ...writes,
    operation('updateSchedule', async (ctx, { path: { id }, body }) => {
      const caller = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const current = await findSchedule(tx, caller.projectId, id, { lock: true });
        if (!current) throw NotFoundError('schedule', id);
        refuseUnmanagedChange(ctx, current, 'Schedule');
        const changed: ScheduleDefinition = {
          name: body.name !== undefined ? body.name : current.name,
          agentId: current.agent_id,
          networkId: current.network_id,
          ...timingOf(body, { cron: current.cron, timezone: current.timezone, intervalSeconds: current.interval_seconds }),
          run: body.run ?? current.run,
          overlap: body.overlap ?? current.overlap,
          catchupWindowSeconds: body.catchup_window_seconds ?? current.catchup_window_seconds,
          paused: body.paused ?? current.paused,
          metadata: body.metadata ?? current.metadata,
        };
        if (body.run !== undefined) await checkScheduledRun(deps, caller, changed);
        await refuseOverProjectLoad(tx, caller.projectId, changed, current);
        const schedule = await updateSchedule(tx, caller.projectId, id, changed);
        return { status: 200, body: (await present(deps, [schedule]))[0]! };
      });
      await writeToTemporal(ctx, deps, [id]);
      respond(ctx, answer);
    }),
  ] as const;
  router.patch('/v1/schedules/:id', ...update);
  router.post('/v1/schedules/:id', deprecatedUpdateByPost(SCHEDULES_PATCH_SINCE), ...update);

  router.delete(
    '/v1/schedules/:id',
    audited(deps.db, 'schedule.delete', 'schedule'),
    requireScope('schedules:write'),
    operation('deleteSchedule', async (ctx, { path: { id } }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const current = await findSchedule(tx, projectId, id, { lock: true });
        if (!current) throw NotFoundError('schedule', id);
        refuseUnmanagedChange(ctx, current, 'Schedule');
        await deleteSchedule(tx, projectId, id);
        return { status: 200, body: presentDeletedSchedule(id) };
      });
      await writeToTemporal(ctx, deps, [id]);
      respond(ctx, answer);
    }),
  );
}
