/**
 * Schedules through the public API: runs made every second or two by a real Temporal Schedule and a real worker,
 * paused and resumed, changed, skipped while the previous run is going, and a schedule created while Temporal is
 * out of reach, written to Temporal by the maintenance round once it is back.
 */
import assert from 'node:assert/strict';
import { Client, ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import { serveApi } from '../../cli/api-process.js';
import type { Stoppable } from '../../cli/processes.js';
import { temporalConnection } from '../../workflows/temporal-connection.js';
import { MAINTENANCE_SCHEDULE_ID } from '../../workflows/maintenance/client.js';
import { temporalScheduleId } from '../../workflows/schedules/ids.js';
import { newTenant } from '../support/api.js';
import { ApiClient } from '../support/client.js';
import { assertMarkedDeprecated } from '../support/deprecated-update.js';
import { eventually } from '../support/eventually.js';
import { startPausableProxy } from '../support/pausable-proxy.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { createDb } from '../../records/db.js';
import { deleteAgent, findAgent } from '../../records/agents.js';
import { deleteSchedulesOf, schedulesBehind } from '../../records/schedules.js';
import { isolatedDatabase, testLog } from '../support/services.js';

type Messages = { role: string; content: string }[];

/** The model answers with the last user message it was sent, so a run's output shows which input it had. */
const echo = (body: Record<string, unknown>) => ({ text: [(body.messages as Messages).filter((m) => m.role === 'user').at(-1)!.content] });

describe('schedules', function () {
  this.timeout(60_000);
  let stack: RunsStack;

  before(async () => {
    // A database of its own: every suite's worker runs maintenance rounds, and one of theirs would write a schedule
    // left behind here to their own Temporal namespace, where this suite's worker never sees it fire.
    const { db } = await isolatedDatabase('agentplane_schedules');
    stack = await startRunsStack('schedules', {}, { db });
    stack.openai.setFallback(echo);
  });

  after(async () => {
    await stack?.stop();
  });

  const runsOf = async (client: ApiClient, scheduleId: string) => {
    const page = await client.get(`/v1/runs?schedule_id=${scheduleId}&limit=100`);
    assert.equal(page.status, 200, JSON.stringify(page.body));
    return page.body.data as any[];
  };

  const outputOf = async (client: ApiClient, runId: string) => (await client.get(`/v1/runs/${runId}`)).body.output.text as string;

  /** Ends each schedule's runs still going, so that the next test's counts are its own. */
  const cancelRuns = async (client: ApiClient, scheduleId: string) => {
    for (const run of await runsOf(client, scheduleId))
      if (run.status === 'queued' || run.status === 'in_progress') await client.post(`/v1/runs/${run.id}/cancel`, {});
  };

  it('answers 400 for a bad cron, time zone or timing, 404 for an agent not of the project, and 403 without the scopes', async () => {
    const { admin } = stack.tenant;
    const agent = await createAgent(admin);
    const run = { input: 'Go.' };
    const refused = async (body: Record<string, unknown>, status: number, code: string) => {
      const answer = await admin.post('/v1/schedules', { agent_id: agent.id, run, ...body });
      assert.equal(answer.status, status, JSON.stringify(answer.body));
      assert.equal(answer.body.error.code, code, JSON.stringify(answer.body));
    };
    await refused({ cron: '0 9 * *' }, 400, 'invalid_cron');
    await refused({ cron: '61 * * * *' }, 400, 'invalid_cron');
    await refused({ cron: '0 9 L * *' }, 400, 'invalid_cron');
    // Days no month has: a schedule that would never run (these months' 31st answered 500 once).
    await refused({ cron: '0 0 31 4,6,9,11 *' }, 400, 'invalid_cron');
    await refused({ cron: '0 0 30 feb *' }, 400, 'invalid_cron');
    await refused({ cron: '0 9 * * 1-5', timezone: 'Mars/Olympus' }, 400, 'invalid_timezone');
    await refused({ cron: '0 9 * * *', interval_seconds: 60 }, 400, 'invalid_parameter');
    await refused({}, 400, 'missing_parameter');
    await refused({ interval_seconds: 60, timezone: 'Europe/Paris' }, 400, 'invalid_parameter');
    await refused({ interval_seconds: 60, run: { input: [{ role: 'assistant', content: 'Hi.' }] } }, 400, 'invalid_parameter');
    await refused({ interval_seconds: 60, run: { input: 'Go.', model: 'no-such-model' } }, 400, 'model_not_found');
    await refused({ interval_seconds: 60, agent_id: 'agent_nosuch' }, 404, 'resource_not_found');
    const both = await admin.post('/v1/schedules', { agent_id: agent.id, network_id: 'net_x', interval_seconds: 60, run });
    assert.equal(both.status, 400, JSON.stringify(both.body));

    const other = await newTenant(stack.api, 'schedules-other');
    const foreign = await other.admin.post('/v1/schedules', { agent_id: agent.id, interval_seconds: 60, run });
    assert.equal(foreign.status, 404, JSON.stringify(foreign.body));
    const reader = await stack.tenant.keyWith('schedules:read');
    const notAllowed = await reader.post('/v1/schedules', { agent_id: agent.id, interval_seconds: 60, run });
    assert.equal(notAllowed.status, 403, JSON.stringify(notAllowed.body));

    const daily = await admin.post('/v1/schedules', {
      agent_id: agent.id,
      cron: '0 9 * * 1-5',
      timezone: 'Europe/Paris',
      run,
      name: 'weekday digest',
    });
    assert.equal(daily.status, 201, JSON.stringify(daily.body));
    const [first] = daily.body.next_run_times;
    // 09:00 in Paris is 07:00 or 08:00 UTC, on a weekday.
    const at = new Date(first * 1000);
    assert.ok([7, 8].includes(at.getUTCHours()) && at.getUTCMinutes() === 0, at.toISOString());
    assert.ok(at.getUTCDay() >= 1 && at.getUTCDay() <= 5, at.toISOString());
    // The times shown are the Temporal Schedule's own, daylight saving and a day that must match twice included.
    const fridays = await admin.post('/v1/schedules', { agent_id: agent.id, cron: '30 9 13 * fri', timezone: 'America/New_York', run });
    for (const shown of [daily.body, fridays.body]) {
      const { info } = await stack.api.services.temporal.schedule.getHandle(temporalScheduleId(shown.id)).describe();
      assert.deepEqual(
        shown.next_run_times,
        info.nextActionTimes.slice(0, 5).map((t) => Math.floor(t.getTime() / 1000)),
      );
    }
    assert.equal((await admin.delete(`/v1/schedules/${fridays.body.id}`)).status, 200);
    assert.equal((await reader.get(`/v1/schedules/${daily.body.id}`)).status, 200);
    assert.equal((await other.admin.get(`/v1/schedules/${daily.body.id}`)).status, 404);
    assert.equal((await other.admin.delete(`/v1/schedules/${daily.body.id}`)).status, 404);
    const listed = await reader.get('/v1/schedules?limit=1');
    assert.equal(listed.body.data[0].id, daily.body.id);
    assert.equal((await admin.delete(`/v1/schedules/${daily.body.id}`)).status, 200);
    assert.equal((await admin.get(`/v1/schedules/${daily.body.id}`)).status, 404);
    const audited = await admin.get(`/v1/audit-logs?target_id=${daily.body.id}`);
    assert.deepEqual(
      audited.body.data.map((e: { action: string }) => e.action),
      ['schedule.delete', 'schedule.create'],
    );
  });

  it("takes a time zone in any case, kept as the database spells it, and days of the week as the cron convention reads them, Temporal's times the same", async () => {
    const { admin } = stack.tenant;
    const agent = await createAgent(admin);
    const given: [cron: string, timezone: string, spelt: string][] = [
      // Temporal refused these two as they were given, and read the third without Sunday.
      ['0 9 * * MON-SUN', 'europe/london', 'Europe/London'],
      ['30 6 * * fri-sun/2', 'ASIA/KOLKATA', 'Asia/Kolkata'],
      ['15 18 * * 1-7', 'us/eastern', 'US/Eastern'],
    ];
    for (const [cron, timezone, spelt] of given) {
      const created = await admin.post('/v1/schedules', { agent_id: agent.id, cron, timezone, run: { input: 'Go.' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.deepEqual([created.body.cron, created.body.timezone], [cron, spelt]);
      const { info } = await stack.api.services.temporal.schedule.getHandle(temporalScheduleId(created.body.id)).describe();
      assert.deepEqual(
        created.body.next_run_times,
        info.nextActionTimes.slice(0, 5).map((t) => Math.floor(t.getTime() / 1000)),
        `${cron} in ${timezone}`,
      );
      assert.equal((await admin.delete(`/v1/schedules/${created.body.id}`)).status, 200);
    }
    // A week of `mon-sun` at 09:00 in London is seven days in a row.
    const weekly = await admin.post('/v1/schedules', {
      agent_id: agent.id,
      cron: '0 9 * * mon-sun',
      timezone: 'Europe/London',
      run: { input: 'Go.' },
    });
    const days = weekly.body.next_run_times.map((t: number) => new Date(t * 1000).getUTCDay());
    assert.equal(new Set(days).size, 5, days.join());
    assert.equal((await admin.delete(`/v1/schedules/${weekly.body.id}`)).status, 200);
  });

  it("writes to Temporal the schedules left behind in turns across projects, so that one project's backlog holds back no other's", async () => {
    const { db } = stack.api.services;
    const other = await newTenant(stack.api, 'schedules-behind');
    const yearly = { cron: '0 0 1 1 *', paused: true, run: { input: 'Go.' } };
    const make = async (client: ApiClient) => {
      const agent = await createAgent(client);
      const made = await client.post('/v1/schedules', { agent_id: agent.id, ...yearly });
      assert.equal(made.status, 201, JSON.stringify(made.body));
      return made.body.id as string;
    };
    const crowded = [await make(stack.tenant.admin), await make(stack.tenant.admin), await make(stack.tenant.admin)];
    const lone = await make(other.admin);
    // As if Temporal had missed each change: the crowded project's long before the other's.
    const behind = [...crowded, lone];
    for (const [i, id] of behind.entries())
      await db.query(
        `UPDATE schedules SET synced_revision = NULL, updated_at = timestamptz '2000-01-01' + make_interval(mins => $2) WHERE id = $1`,
        [id, i],
      );
    const taken = await schedulesBehind(db, 0, 100);
    assert.deepEqual(
      taken.filter((id) => behind.includes(id)),
      [crowded[0], lone, crowded[1], crowded[2]],
    );
    for (const id of crowded) assert.equal((await stack.tenant.admin.delete(`/v1/schedules/${id}`)).status, 200);
    assert.equal((await other.admin.delete(`/v1/schedules/${lone}`)).status, 200);
  });

  it('leaves no schedule behind its agent, one created while the agent was being deleted included', async () => {
    const { admin, projectId } = stack.tenant;
    const agent = await createAgent(admin);
    const locker = createDb(stack.api.services.db.connectionString, { max: 1, log: testLog });
    const deleting = await locker.connect();
    try {
      // As DELETE /v1/agents/{id} does, up to its commit: the agent held and deleted, and its schedules with it.
      await deleting.query('BEGIN');
      assert.ok(await findAgent(deleting, projectId, agent.id, { lock: true }));
      assert.ok(await deleteAgent(deleting, projectId, agent.id));
      await deleteSchedulesOf(deleting, projectId, { agentId: agent.id });
      let answered = false;
      const creating = admin.post('/v1/schedules', { agent_id: agent.id, interval_seconds: 3600, run: { input: 'Go.' } }).finally(() => {
        answered = true;
      });
      // The creation waits for the deletion, as it must, or is answered without waiting.
      await eventually(async () => {
        const { rows } = await stack.api.services.db.query(
          "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%FOR SHARE%'",
        );
        assert.ok(answered || rows.length > 0, 'the creation neither waited nor was answered');
      });
      await deleting.query('COMMIT');
      const created = await creating;
      assert.equal(created.status, 404, JSON.stringify(created.body));
      assert.deepEqual([created.body.error.code, created.body.error.param], ['resource_not_found', 'agent_id']);
      const schedules = (await admin.get('/v1/schedules?limit=100')).body.data as { agent_id: string }[];
      assert.deepEqual(
        schedules.filter((s) => s.agent_id === agent.id),
        [],
        'a schedule outlived its agent',
      );
    } finally {
      await deleting.query('ROLLBACK').catch(() => undefined);
      deleting.release();
      await locker.end();
    }
  });

  it('runs every interval with the schedule id on each run; pausing stops the runs, and resuming with a new input runs that', async () => {
    const { admin } = stack.tenant;
    const agent = await createAgent(admin);
    const created = await admin.post('/v1/schedules', { agent_id: agent.id, interval_seconds: 1, run: { input: 'first' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const schedule = created.body;
    const [a, b] = schedule.next_run_times;
    assert.equal(b - a, 1);

    const [made] = await eventually(
      async () => {
        const done = (await runsOf(admin, schedule.id)).filter((r) => r.status === 'completed');
        assert.ok(done.length > 0, 'no scheduled run has completed');
        return done;
      },
      { message: 'the schedule made no run' },
    );
    assert.equal(made.schedule_id, schedule.id);
    assert.equal(made.agent_id, agent.id);
    assert.equal(await outputOf(admin, made.id), 'first');
    const shown = (await admin.get(`/v1/schedules/${schedule.id}`)).body;
    assert.ok(
      shown.recent_runs.some((r: { run_id: string }) => r.run_id === made.id),
      JSON.stringify(shown.recent_runs),
    );

    const paused = await admin.patch(`/v1/schedules/${schedule.id}`, { paused: true });
    assert.equal(paused.status, 200, JSON.stringify(paused.body));
    assert.deepEqual(paused.body.next_run_times, []);
    const handle = stack.api.services.temporal.schedule.getHandle(temporalScheduleId(schedule.id));
    assert.equal((await handle.describe()).state.paused, true);
    const before = (await runsOf(admin, schedule.id)).length;
    // A time made by hand while paused (Temporal takes it) makes no run. Its workflow is named by the second it is
    // taken in: one made in the second of the last scheduled time is that time's, and dropped, so it is made again.
    const earlier = new Set((await handle.describe()).info.recentActions.map((a) => a.action.workflow.workflowId));
    const workflowId = await eventually(async () => {
      await handle.trigger(ScheduleOverlapPolicy.ALLOW_ALL);
      const taken = (await handle.describe()).info.recentActions.find((a) => !earlier.has(a.action.workflow.workflowId));
      assert.ok(taken, 'the time was not taken');
      return taken.action.workflow.workflowId;
    });
    assert.deepEqual(await stack.api.services.temporal.workflow.getHandle(workflowId).result(), { runId: null });
    assert.equal((await runsOf(admin, schedule.id)).length, before);

    // POST, the update verb before PATCH, still changes a schedule, and says on its answer that it is deprecated.
    const resumed = await admin.post(`/v1/schedules/${schedule.id}`, { paused: false, run: { input: 'second' } });
    assert.equal(resumed.status, 200, JSON.stringify(resumed.body));
    await assertMarkedDeprecated(admin.baseUrl, `/v1/schedules/${schedule.id}`, resumed);
    await eventually(
      async () => {
        const runs = (await runsOf(admin, schedule.id)).filter((r) => r.status === 'completed');
        assert.ok(runs.length > before, 'no run since resuming');
        assert.equal(await outputOf(admin, runs[0].id), 'second');
      },
      { message: 'the resumed schedule made no run with its new input' },
    );
    assert.equal((await admin.delete(`/v1/schedules/${schedule.id}`)).status, 200);
    await eventually(async () => assert.equal((await admin.get(`/v1/runs?schedule_id=${schedule.id}&status=queued`)).body.data.length, 0));
  });

  it('skips the times that come while the previous run is still going, with overlap skip', async () => {
    const { admin } = stack.tenant;
    const agent = await createAgent(admin, { model: 'claude-haiku-4-5' });
    stack.anthropic.setFallback({ text: ['Thinking'], hang: true });
    const created = await admin.post('/v1/schedules', {
      agent_id: agent.id,
      interval_seconds: 1,
      overlap: 'skip',
      run: { input: 'Take your time.' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const handle = stack.api.services.temporal.schedule.getHandle(temporalScheduleId(created.body.id));
    await eventually(async () => assert.ok((await handle.describe()).info.numActionsSkippedOverlap >= 2, 'no time skipped yet'), {
      message: 'the Temporal Schedule skipped no time',
    });
    const runs = await runsOf(admin, created.body.id);
    assert.equal(runs.length, 1, JSON.stringify(runs.map((r) => r.status)));
    assert.equal(runs[0].status, 'in_progress');
    assert.equal((await admin.delete(`/v1/schedules/${created.body.id}`)).status, 200);
    await cancelRuns(admin, created.body.id);
  });

  it('bounds what one project may ask of the Temporal every project shares: 60 interval starts a minute, 100 schedules', async () => {
    // A project of its own, so that the counts are this test's alone.
    const { admin } = await newTenant(stack.api, 'schedules-bounded');
    const agent = await createAgent(admin);
    const make = (fields: Record<string, unknown>) =>
      admin.post('/v1/schedules', { agent_id: agent.id, run: { input: 'tick' }, ...fields });
    const refusedAs = (answer: { status: number; body: any }, code: string, param: string | null) => {
      assert.equal(answer.status, 409, JSON.stringify(answer.body));
      assert.deepEqual([answer.body.error.code, answer.body.error.param], [code, param]);
    };
    // Paused schedules start nothing and take no room; one every second takes all of it.
    const every = (await make({ interval_seconds: 1, paused: true })).body;
    const other = (await make({ interval_seconds: 1, paused: true })).body;
    assert.equal((await admin.patch(`/v1/schedules/${every.id}`, { paused: false })).status, 200);
    const resumed = await admin.patch(`/v1/schedules/${other.id}`, { paused: false });
    refusedAs(resumed, 'schedules_too_frequent', 'paused');
    assert.match(
      resumed.body.error.message,
      /would start 120 runs a minute, more than the 60 allowed: pause or delete one of the others first\.$/,
    );
    refusedAs(await make({ interval_seconds: 3600 }), 'schedules_too_frequent', 'interval_seconds');
    // Half the room left: the refusal names the shortest interval that fits.
    assert.equal((await admin.patch(`/v1/schedules/${every.id}`, { interval_seconds: 2 })).status, 200);
    const tooOften = await admin.patch(`/v1/schedules/${other.id}`, { paused: false });
    refusedAs(tooOften, 'schedules_too_frequent', 'paused');
    assert.match(tooOften.body.error.message, /give `interval_seconds` of at least 2,/);
    assert.equal((await admin.patch(`/v1/schedules/${other.id}`, { paused: false, interval_seconds: 2 })).status, 200);
    // A project over the limit (made so before it applied) may still change what does not start more.
    assert.equal((await admin.patch(`/v1/schedules/${other.id}`, { name: 'renamed' })).status, 200);
    for (const id of [every.id, other.id]) assert.equal((await admin.patch(`/v1/schedules/${id}`, { paused: true })).status, 200);

    // At most 100 in a project, paused or not; two asking for the last place at once, one gets it.
    const yearly = { cron: '0 0 1 1 *', paused: true };
    for (let made = 2; made < 98; made += 8) {
      const answers = await Promise.all(Array.from({ length: Math.min(8, 98 - made) }, () => make(yearly)));
      for (const answer of answers) assert.equal(answer.status, 201, JSON.stringify(answer.body));
    }
    assert.equal((await make(yearly)).status, 201);
    const lastPlace = await Promise.all([make(yearly), make(yearly)]);
    assert.deepEqual(lastPlace.map((a) => a.status).sort(), [201, 409], JSON.stringify(lastPlace.map((a) => a.body)));
    const full = await make(yearly);
    refusedAs(full, 'too_many_schedules', null);
    assert.equal(full.body.error.message, 'A project has at most 100 schedules; delete one first.');
    assert.equal((await admin.delete(`/v1/schedules/${every.id}`)).status, 200);
    assert.equal((await make(yearly)).status, 201);
    await cancelRuns(admin, every.id);
    await cancelRuns(admin, other.id);
  });

  it('accepts a schedule while Temporal is out of reach, and the maintenance round writes it to Temporal once it is back', async function () {
    // The test's time covers its waits below.
    this.timeout(150_000);
    const proxy = await startPausableProxy(stack.api.temporalAddress);
    const connection = temporalConnection(proxy.address);
    const namespace = stack.api.services.temporal.options.namespace;
    const served: Stoppable & { url: string } = await serveApi(
      { ...stack.api.services, temporal: new Client({ connection, namespace }) },
      0,
      '127.0.0.1',
    );
    try {
      const client = new ApiClient(served.url, stack.tenant.admin.key);
      const agent = await createAgent(client);
      proxy.pause();
      const created = await client.post('/v1/schedules', { agent_id: agent.id, interval_seconds: 2, run: { input: 'caught up' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const handle = stack.api.services.temporal.schedule.getHandle(temporalScheduleId(created.body.id));
      await assert.rejects(handle.describe(), ScheduleNotFoundError);
      proxy.resume();

      const maintenance = stack.api.services.temporal.schedule.getHandle(MAINTENANCE_SCHEDULE_ID);
      const [run] = await eventually(
        async () => {
          await maintenance.trigger();
          const done = (await runsOf(client, created.body.id)).filter((r) => r.status === 'completed');
          assert.ok(done.length > 0, 'no scheduled run yet');
          return done;
        },
        // A round does every maintenance duty over the suite's whole database: on a busy machine, some seconds each.
        { timeoutMs: 90_000, intervalMs: 1_000, message: 'the schedule never reached Temporal' },
      );
      assert.equal(await outputOf(client, run.id), 'caught up');
      assert.equal((await client.delete(`/v1/schedules/${created.body.id}`)).status, 200);
      await eventually(() => assert.rejects(handle.describe(), ScheduleNotFoundError));
    } finally {
      await served.stop();
      await connection.close();
      await proxy.stop();
    }
  });
});
