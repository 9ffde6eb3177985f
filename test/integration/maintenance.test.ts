import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { ScheduleNotFoundError, ScheduleOverlapPolicy, WorkflowNotFoundError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { newTenant, workerDependenciesOf, startTestApi, workflowBundle, type TestApi } from '../support/api.js';
import { isolatedDatabase, isolatedNamespace } from '../support/services.js';
import { eventually } from '../support/eventually.js';
import { send, signIn } from '../support/console-sessions.js';
import type { Stoppable } from '../../cli/processes.js';
import { serveWorker } from '../../cli/worker-process.js';
import { eventsFor, recordEvent } from '../../records/events.js';
import { newId } from '../../records/ids.js';
import { releaseBlob, stageUpload, sweepDueBlobs } from '../../records/blob-leases.js';
import { DEFAULT_RETENTION, makeDayPartitions } from '../../records/retention.js';
import { runById } from '../../records/runs.js';
import type { AgentDefinition } from '../../records/agents.js';
import { conversationFor } from '../../workflows/runs/conversation.js';
import type { BlobStore } from '../../records/blobs/store.js';
import { createWorker } from '../../workflows/worker.js';
import { extractionWorkflowId } from '../../workflows/extraction/client.js';
import {
  createMaintenanceActivities,
  MISSED_STARTS_PER_ROUND,
  type MaintenanceActivities,
} from '../../workflows/maintenance/activities.js';
import { runWorkflowId } from '../../workflows/runs/client.js';
import { createAgent } from '../support/agents.js';
import { MAINTENANCE_SCHEDULE_ID } from '../../workflows/maintenance/client.js';
import type { maintenanceWorkflow } from '../../workflows/maintenance/workflow.js';

describe('maintenance', function () {
  this.timeout(120_000);
  let api: TestApi;
  let namespace: string;
  let activities: MaintenanceActivities;
  /** Runs one duty as the worker would, with the worker's client in its context. */
  const run = (duty: () => Promise<number>) =>
    new MockActivityEnvironment(undefined, { client: api.services.temporal }).run<[], number, typeof duty>(duty);

  before(async () => {
    namespace = await isolatedNamespace('maintenance');
    // A database of its own: every suite's worker runs maintenance rounds, which would otherwise take the records
    // made here for this suite's duties (a lost start, a due blob) before its own duties and rounds could.
    const { db } = await isolatedDatabase('agentplane_maintenance');
    api = await startTestApi({ worker: false, namespace, db });
    activities = createMaintenanceActivities(api.services);
  });

  after(async () => api?.stop());

  /** As if the API had died between committing the record and starting its workflow: no workflow, no record of a start. */
  async function loseStart(table: 'runs' | 'files', id: string, workflowId: string): Promise<void> {
    await api.services.temporal.workflow.getHandle(workflowId).terminate('simulating a start that never happened');
    await api.services.db.query(`UPDATE ${table} SET workflow_started_at = NULL WHERE id = $1`, [id]);
  }

  /** Ends the workflows a test left waiting for a worker, so later rounds and workers here do not take them up. */
  async function endWaiting(workflowIds: string[]): Promise<void> {
    for (let i = 0; i < workflowIds.length; i += 20) {
      await Promise.all(
        workflowIds.slice(i, i + 20).map((id) =>
          api.services.temporal.workflow
            .getHandle(id)
            .terminate('test over')
            .catch((err) => {
              if (!(err instanceof WorkflowNotFoundError)) throw err;
            }),
        ),
      );
    }
  }

  describe('duties', () => {
    it('starts extraction for a file whose start was missed once it is a minute old, and it reaches processed once', async () => {
      const tenant = await newTenant(api, 'maintenance');
      const upload = await tenant.admin.upload({
        file: { data: Buffer.from('missed\fstart'), filename: 'missed.txt' },
        purpose: 'context',
      });
      const workflowId = extractionWorkflowId(upload.body.id);
      await loseStart('files', upload.body.id, workflowId);

      await run(activities.restartMissedExtractions);
      assert.equal(
        (await api.services.temporal.workflow.getHandle(workflowId).describe()).status.name,
        'TERMINATED',
        'a young file is left alone',
      );

      await api.services.db.query(`UPDATE files SET created_at = now() - interval '2 minutes' WHERE id = $1`, [upload.body.id]);
      await run(activities.restartMissedExtractions);
      assert.equal((await api.services.temporal.workflow.getHandle(workflowId).describe()).status.name, 'RUNNING');

      const { worker, connection } = await createWorker({
        ...workerDependenciesOf(api.services),
        temporalAddress: api.temporalAddress,
        namespace,
        workflowBundle: await workflowBundle(),
      });
      const running = worker.run();
      try {
        const file = await tenant.admin.settledFile(upload.body.id);
        assert.equal(file.status, 'processed');
        assert.equal(file.extracted.pages, 2);
      } finally {
        worker.shutdown();
        await running;
        await connection.close();
      }
      assert.equal((await eventsFor(api.services.db, tenant.projectId, 'file.processed', upload.body.id)).length, 1);
    });

    it('removes the console sessions past their end, signed out or expired, counting them, and keeps the live ones', async () => {
      const tenant = await newTenant(api, 'maintenance sessions');
      const key = tenant.admin.key!;
      const [expired, ended, live] = [await signIn(api, key), await signIn(api, key), await signIn(api, key)];
      await api.services.db.query(`UPDATE console_sessions SET expires_at = now() - interval '1 second' WHERE id = $1`, [
        expired.session.id,
      ]);
      assert.equal(
        (await send(api, 'DELETE', '/v1/sessions/current', { cookie: ended.cookie, origin: api.url, csrf: ended.csrf })).status,
        204,
      );

      assert.equal(await run(activities.removeFinishedConsoleSessions), 2);

      const { rows } = await api.services.db.query<{ id: string }>('SELECT id FROM console_sessions');
      assert.deepEqual(
        rows.map((r) => r.id),
        [live.session.id],
      );
      assert.equal(await run(activities.removeFinishedConsoleSessions), 0, 'a second round finds nothing left to remove');
    });

    it('recovers another project’s lost run start while one project has more than a round’s worth of runs waiting with their workflows', async () => {
      const busy = await newTenant(api, 'maintenance-busy-runs');
      const quiet = await newTenant(api, 'maintenance-quiet-runs');
      const busyAgent = await createAgent(busy.admin);
      // No worker polls this namespace: each run waits, queued, with its workflow started.
      const waiting: string[] = [];
      while (waiting.length <= MISSED_STARTS_PER_ROUND) {
        const answers = await Promise.all(
          Array.from({ length: 10 }, () => busy.admin.post(`/v1/agents/${busyAgent.id}/run`, { input: 'wait', wait: false })),
        );
        for (const answer of answers) assert.equal(answer.status, 202, JSON.stringify(answer.body));
        waiting.push(...answers.map((answer) => answer.body.id as string));
      }
      const quietAgent = await createAgent(quiet.admin);
      const lost = await quiet.admin.post(`/v1/agents/${quietAgent.id}/run`, { input: 'lost', wait: false });
      await loseStart('runs', lost.body.id, runWorkflowId(lost.body.id));
      // The waiting runs are the older ones.
      await api.services.db.query(`UPDATE runs SET created_at = now() - interval '10 minutes' WHERE project_id = $1`, [busy.projectId]);
      await api.services.db.query(`UPDATE runs SET created_at = now() - interval '1 minute' WHERE id = $1`, [lost.body.id]);
      try {
        await run(activities.restartMissedRuns);

        assert.equal((await api.services.temporal.workflow.getHandle(runWorkflowId(lost.body.id)).describe()).status.name, 'RUNNING');
        const { rows } = await api.services.db.query('SELECT workflow_started_at IS NOT NULL AS recorded FROM runs WHERE id = $1', [
          lost.body.id,
        ]);
        assert.deepEqual(rows, [{ recorded: true }], 'the start is recorded, so the next round leaves the run alone');
      } finally {
        await endWaiting([...waiting, lost.body.id].map(runWorkflowId));
        await api.services.db.query(`UPDATE runs SET status = 'cancelled' WHERE project_id = ANY($1)`, [[busy.projectId, quiet.projectId]]);
      }
    });

    it('wakes a queued run whose turn came while its wake was lost, and not one still behind another', async () => {
      const tenant = await newTenant(api, 'maintenance-wakes');
      const agent = await createAgent(tenant.admin, { concurrency: 'enqueue' });
      // No worker polls this namespace: both runs stay queued, each with its workflow started.
      const ids: string[] = [];
      for (const input of ['first', 'second']) {
        const answer = await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input, wait: false });
        assert.equal(answer.status, 202, JSON.stringify(answer.body));
        ids.push(answer.body.id as string);
      }
      const [head, behind] = ids as [string, string];
      const admits = async (runId: string) => {
        const { events } = await api.services.temporal.workflow.getHandle(runWorkflowId(runId)).fetchHistory();
        return (events ?? []).filter((event) => event.workflowExecutionSignaledEventAttributes?.signalName === 'admit').length;
      };
      const waitedSince = (interval: string) =>
        api.services.db.query(`UPDATE runs SET workflow_started_at = now() - $2::interval WHERE id = ANY($1)`, [ids, interval]);
      try {
        await run(activities.wakeWaitingRuns);
        assert.deepEqual([await admits(head), await admits(behind)], [0, 0], 'a run that has just started waiting is left to its wake');

        await waitedSince('1 minute');
        await run(activities.wakeWaitingRuns);
        assert.deepEqual([await admits(head), await admits(behind)], [1, 0], 'only the run whose turn has come is woken');

        // The run ahead ends, and the wake it sends is lost.
        await api.services.db.query(`UPDATE runs SET status = 'cancelled' WHERE id = $1`, [head]);
        await run(activities.wakeWaitingRuns);
        assert.equal(await admits(behind), 1, 'the next run is woken once its turn has come');
      } finally {
        await endWaiting(ids.map(runWorkflowId));
        await api.services.db.query(`UPDATE runs SET status = 'cancelled' WHERE id = ANY($1)`, [ids]);
      }
    });

    it('recovers another project’s lost extraction start while one project has more than a round’s worth of files in extraction', async () => {
      const busy = await newTenant(api, 'maintenance-busy-files');
      const quiet = await newTenant(api, 'maintenance-quiet-files');
      const extracting: string[] = [];
      while (extracting.length <= MISSED_STARTS_PER_ROUND) {
        const answers = await Promise.all(
          Array.from({ length: 10 }, (_, i) =>
            busy.admin.upload({ file: { data: Buffer.from(`long ${extracting.length + i}`), filename: 'long.txt' }, purpose: 'context' }),
          ),
        );
        for (const answer of answers) assert.equal(answer.status, 200, JSON.stringify(answer.body));
        extracting.push(...answers.map((answer) => answer.body.id as string));
      }
      const lost = await quiet.admin.upload({ file: { data: Buffer.from('lost'), filename: 'lost.txt' }, purpose: 'context' });
      await loseStart('files', lost.body.id, extractionWorkflowId(lost.body.id));
      await api.services.db.query(`UPDATE files SET created_at = now() - interval '10 minutes' WHERE project_id = $1`, [busy.projectId]);
      await api.services.db.query(`UPDATE files SET created_at = now() - interval '2 minutes' WHERE id = $1`, [lost.body.id]);
      try {
        await run(activities.restartMissedExtractions);

        assert.equal(
          (await api.services.temporal.workflow.getHandle(extractionWorkflowId(lost.body.id)).describe()).status.name,
          'RUNNING',
        );
      } finally {
        await endWaiting([...extracting, lost.body.id].map(extractionWorkflowId));
        await api.services.db.query(`UPDATE files SET status = 'failed' WHERE project_id = ANY($1)`, [[busy.projectId, quiet.projectId]]);
      }
    });

    it('drops the days of the run-event log past their retention and the webhook deliveries that ended past theirs, keeping the rest', async () => {
      const tenant = await newTenant(api, 'maintenance-retention');
      const agent = await createAgent(tenant.admin, {});
      const runIds: string[] = [];
      for (const input of ['long ago', 'lately', 'today']) {
        const started = await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input, wait: false });
        assert.equal(started.status, 202, JSON.stringify(started.body));
        runIds.push(started.body.id);
      }
      const [old, recent, today] = runIds as [string, string, string];
      await endWaiting(runIds.map(runWorkflowId));
      // As if each had run that many days ago: its days' partitions made, its events moved into them.
      const ranDaysAgo = async (id: string, daysAgo: number) => {
        const day = new Date(Date.now() - daysAgo * 86_400_000);
        await makeDayPartitions(api.services.db, 'run_events', day, day);
        await api.services.db.query(
          `UPDATE runs SET status = 'completed', created_at = now() - make_interval(days => $2), completed_at = now() - make_interval(days => $2)
           WHERE id = $1`,
          [id, daysAgo],
        );
        await api.services.db.query(`UPDATE run_events SET created_at = now() - make_interval(days => $2) WHERE run_id = $1`, [
          id,
          daysAgo,
        ]);
      };
      await ranDaysAgo(old, 32);
      await ranDaysAgo(recent, 29);
      const eventsOf = async (id: string) =>
        (await api.services.db.query('SELECT seq FROM run_events WHERE run_id = $1', [id])).rowCount ?? 0;
      for (const id of runIds) assert.ok((await eventsOf(id)) > 0, `run ${id} logged nothing`);
      const partitionOf = (daysAgo: number) =>
        `run_events_p${new Date(Date.now() - daysAgo * 86_400_000).toISOString().slice(0, 10).replace(/-/g, '')}`;
      const { rows: placed } = await api.services.db.query<{ partition: string }>(
        'SELECT DISTINCT tableoid::regclass::text AS partition FROM run_events WHERE run_id = $1',
        [old],
      );
      assert.deepEqual(
        placed.map((row) => row.partition),
        [partitionOf(32)],
      );

      const endpoint = await tenant.admin.post('/v1/webhooks', { url: 'https://hooks.example.com/retention', event_types: ['*'] });
      assert.equal(endpoint.status, 201, JSON.stringify(endpoint.body));
      // Disabled: the events below are fanned out to no one, and nothing is sent anywhere.
      const disabled = await tenant.admin.patch(`/v1/webhooks/${endpoint.body.id}`, { status: 'disabled' });
      assert.equal(disabled.status, 200, JSON.stringify(disabled.body));
      const delivery = async (status: string, daysAgo: number) => {
        const event = await recordEvent(api.services.db, tenant.projectId, 'file.deleted', { object: 'file', id: newId('file') });
        const id = newId('whd');
        // Attempted and started already, so that no dispatcher takes it up.
        await api.services.db.query(
          `INSERT INTO webhook_deliveries (id, project_id, endpoint_id, event_id, status, attempts, started_at, completed_at, created_at)
           VALUES ($1, $2, $3, $4, $5, 1, now(), CASE WHEN $5 = 'pending' THEN NULL ELSE now() - make_interval(days => $6) END,
                   now() - make_interval(days => $6))`,
          [id, tenant.projectId, endpoint.body.id, event, status, daysAgo],
        );
        return id;
      };
      const expiring = [await delivery('succeeded', 31), await delivery('failed', 45)];
      const keeping = [await delivery('succeeded', 29), await delivery('pending', 40)];

      assert.ok((await run(activities.expireRunEventLogs)) >= 1);
      assert.ok((await run(activities.expireWebhookDeliveries)) >= 2);

      assert.equal(await eventsOf(old), 0);
      assert.equal((await api.services.db.query('SELECT to_regclass($1) AS found', [partitionOf(32)])).rows[0]!.found, null);
      assert.ok((await eventsOf(recent)) > 0, 'the log of a run within the retention went');
      assert.ok((await eventsOf(today)) > 0, 'the log of a run of today went');
      for (const id of runIds) assert.equal((await tenant.admin.get(`/v1/runs/${id}`)).status, 200);
      const { rows } = await api.services.db.query<{ id: string }>('SELECT id FROM webhook_deliveries WHERE id = ANY($1)', [
        [...expiring, ...keeping],
      ]);
      assert.deepEqual(rows.map((r) => r.id).sort(), [...keeping].sort());
      // The stream of a run whose log expired ends at once, with nothing to replay.
      const stream = await fetch(`${api.url}/v1/runs/${old}/events`, { headers: { authorization: `Bearer ${tenant.admin.key}` } });
      assert.equal(stream.status, 200);
      assert.equal((await stream.text()).replace(/^: .*\n\n/gm, ''), '');
    });

    it('drops the days of the usage ledger past their retention, their cost still reported from the rollups; a call the default partition took moves to its day, counted once', async () => {
      const tenant = await newTenant(api, 'maintenance-ledger');
      const DAY = 86_400;
      const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
      const charge = (daysAgo: number, cost: string) =>
        api.services.db.query(
          `INSERT INTO usage_records (id, project_id, source, model, provider, price_version, input_tokens, output_tokens, cached_tokens, cost, created_at)
           VALUES ($1, $2, 'judge', 'gpt-4.1-mini', 'openai', 'test', 10, 1, 0, $3, to_timestamp($4))`,
          [newId('usage'), tenant.projectId, cost, today - daysAgo * DAY + 3600],
        );
      const longAgo = new Date((today - 95 * DAY) * 1000);
      await makeDayPartitions(api.services.db, 'usage_records', longAgo, longAgo);
      await charge(95, '0.25');
      await charge(95, '0.5');
      // No partition for 40 days ago: the default takes it.
      await charge(40, '0.125');
      const report = async () => {
        const response = await tenant.admin.get(
          `/v1/analytics/costs?start_time=${today - 100 * DAY}&end_time=${today}&bucket_width=1d&limit=100`,
        );
        assert.equal(response.status, 200, JSON.stringify(response.body));
        return (response.body.data as { start_time: number; results: { amount: { value: string }; num_model_requests: number }[] }[])
          .filter((bucket) => bucket.results.length > 0)
          .map((bucket) => [(today - bucket.start_time) / DAY, bucket.results[0]!.amount.value, bucket.results[0]!.num_model_requests]);
      };
      const before = await report();
      assert.deepEqual(before, [
        [95, '0.75', 2],
        [40, '0.125', 1],
      ]);
      const rowsOf = async (table: string) =>
        Number((await api.services.db.query(`SELECT count(*) AS n FROM ${table} WHERE project_id = $1`, [tenant.projectId])).rows[0]!.n);
      assert.equal(await rowsOf('usage_records_default'), 1);

      const fortyDaysAgo = new Date((today - 40 * DAY) * 1000);
      assert.equal(await makeDayPartitions(api.services.db, 'usage_records', fortyDaysAgo, fortyDaysAgo), 1);
      assert.equal(await rowsOf('usage_records_default'), 0);
      assert.equal(await rowsOf(`usage_records_p${fortyDaysAgo.toISOString().slice(0, 10).replace(/-/g, '')}`), 1);
      assert.deepEqual(await report(), before);

      assert.ok((await run(activities.expireUsageRecords)) >= 1);
      assert.equal(await rowsOf('usage_records'), 1, 'the call of 40 days ago, within the 90 days kept, went; or the ones before stayed');
      assert.deepEqual(await report(), before);
      // What only the expired calls could answer is refused, not answered short.
      const unaligned = await tenant.admin.get(
        `/v1/analytics/costs?start_time=${today - 100 * DAY + 60}&end_time=${today}&bucket_width=1d`,
      );
      assert.equal(unaligned.status, 400, JSON.stringify(unaligned.body));
      assert.equal(unaligned.body.error.code, 'range_expired');
      assert.equal(unaligned.body.error.param, 'start_time');
      const repriced = await tenant.admin.post('/v1/analytics/costs/reprice', { start_time: today - 100 * DAY, end_time: today });
      assert.equal(repriced.status, 400, JSON.stringify(repriced.body));
      assert.equal(repriced.body.error.code, 'range_expired');
      // The suite's other reports of the past are not this test's to refuse.
      await api.services.db.query(`DELETE FROM retention_horizons WHERE table_name = 'usage_records'`);
    });

    it("clears the steps' messages and tool calls of runs that ended past their retention, keeping the runs, their totals and a continuation's view of them", async () => {
      const tenant = await newTenant(api, 'maintenance-payloads');
      const agent = await createAgent(tenant.admin, {});
      const runIds: string[] = [];
      for (const input of ['Capital of France?', 'Capital of Spain?']) {
        const started = await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input, wait: false });
        assert.equal(started.status, 202, JSON.stringify(started.body));
        runIds.push(started.body.id);
      }
      const [old, recent] = runIds as [string, string];
      await endWaiting(runIds.map(runWorkflowId));
      // Each as if it had run: a model call asking for a tool, the tool's result, then the answer.
      const ran = async (id: string, daysAgo: number, answer: string) => {
        const call = { id: 'call_1', name: 'lookup', arguments: '{"country":"France"}' };
        await api.services.db.query(
          `INSERT INTO run_steps (run_id, index, type, status, model, tool_call, message, input_tokens, output_tokens, cost, completed_at) VALUES
             ($1, 0, 'model_call', 'completed', 'gpt-4.1-mini', NULL, $2, 10, 2, 0.001, now()),
             ($1, 1, 'tool_call', 'completed', NULL, $3, $4, 0, 0, 0, now()),
             ($1, 2, 'model_call', 'completed', 'gpt-4.1-mini', NULL, $5, 12, 3, 0.002, now())`,
          [
            id,
            { role: 'assistant', content: '', tool_calls: [call] },
            call,
            { role: 'tool', content: 'The capital is on the Seine.', tool_call_id: 'call_1', name: 'lookup' },
            { role: 'assistant', content: answer },
          ],
        );
        await api.services.db.query(
          `UPDATE runs SET status = 'completed', output_text = $2, cost = 0.003, started_at = now() - make_interval(days => $3),
             completed_at = now() - make_interval(days => $3) WHERE id = $1`,
          [id, answer, daysAgo],
        );
      };
      await ran(old, 91, 'Paris.');
      await ran(recent, 89, 'Madrid.');
      const before = (await tenant.admin.get(`/v1/runs/${old}`)).body;

      assert.ok((await run(activities.expireStepPayloads)) >= 1);
      const after = (await tenant.admin.get(`/v1/runs/${old}`)).body;
      assert.deepEqual(
        after.steps.map((step: Record<string, unknown>) => [step.type, step.payload_expired, step.output, step.tool_call, step.tool_calls]),
        [
          ['model_call', true, undefined, undefined, undefined],
          ['tool_call', true, undefined, undefined, undefined],
          ['model_call', true, undefined, undefined, undefined],
        ],
      );
      const kept = (run: any) => ({
        input: run.input,
        output: run.output,
        cost: run.cost,
        steps: run.steps.map((step: any) => [step.index, step.status, step.usage, step.cost, step.started_at, step.completed_at]),
      });
      assert.deepEqual(kept(after), kept(before));
      const untouched = (await tenant.admin.get(`/v1/runs/${recent}`)).body;
      assert.deepEqual(
        untouched.steps.map((step: Record<string, unknown>) => [step.payload_expired, step.output ?? null]),
        [
          [undefined, ''],
          [undefined, 'The capital is on the Seine.'],
          [undefined, 'Madrid.'],
        ],
      );

      // A run that continues it sees its input and its answer, the steps between them gone.
      const next = await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'And its river?', previous_run_id: old, wait: false });
      assert.equal(next.status, 202, JSON.stringify(next.body));
      await endWaiting([runWorkflowId(next.body.id)]);
      const conversation = await conversationFor(
        api.services.db,
        (await runById(api.services.db, next.body.id))!,
        { instructions: 'Answer briefly.', memory: { enabled: false } } as AgentDefinition,
        [],
        { vision: false, window: 100_000, outputAllowance: 1_000, toolTokens: 0 },
      );
      assert.deepEqual(conversation, [
        { role: 'system', content: 'Answer briefly.' },
        { role: 'user', content: 'Capital of France?' },
        { role: 'assistant', content: 'Paris.' },
        { role: 'user', content: 'And its river?' },
      ]);
    });

    it("deletes the graph model's answers kept for an extraction's retries a week after the file's extraction ended, not while it goes on", async () => {
      const tenant = await newTenant(api, 'maintenance-leftovers');
      const files: string[] = [];
      for (const name of ['ended.txt', 'going.txt']) {
        const upload = await tenant.admin.upload({
          file: { data: Buffer.from(`A passage of ${name}.`), filename: name },
          purpose: 'context',
        });
        assert.equal(upload.status, 200, JSON.stringify(upload.body));
        files.push(upload.body.id);
      }
      const [ended, going] = files as [string, string];
      await endWaiting(files.map(extractionWorkflowId));
      await api.services.db.query(`UPDATE files SET status = 'processed' WHERE id = $1`, [ended]);
      const answer = (fileId: string, hash: string, daysAgo: number) =>
        api.services.db.query(
          `INSERT INTO graph_model_answers (file_id, passage_hash, model, relations, created_at)
           VALUES ($1, $2, 'gpt-4.1-mini', '[]', now() - make_interval(days => $3))`,
          [fileId, hash, daysAgo],
        );
      await answer(ended, 'old', 8);
      await answer(ended, 'recent', 6);
      await answer(going, 'old', 8);

      assert.ok((await run(activities.expireExtractionLeftovers)) >= 1);
      const { rows } = await api.services.db.query<{ file_id: string; passage_hash: string }>(
        'SELECT file_id, passage_hash FROM graph_model_answers WHERE file_id = ANY($1)',
        [files],
      );
      assert.deepEqual(
        rows.map((row) => [row.file_id, row.passage_hash]).sort(),
        [
          [ended, 'recent'],
          [going, 'old'],
        ].sort(),
      );
      await api.services.db.query(`UPDATE files SET status = 'failed' WHERE id = $1`, [going]);
    });

    it('exports each day of the audit log past its retention to the blob store as JSON lines, then deletes it; without a retention keeps it', async () => {
      const tenant = await newTenant(api, 'maintenance-audit');
      // Three entries, dated 400 days ago (the log refuses changes, so they are written so).
      const day = new Date(Date.now() - 400 * 86_400_000).toISOString().slice(0, 10);
      const ids = [newId('audit'), newId('audit'), newId('audit')];
      for (const [i, id] of ids.entries())
        await api.services.db.query(
          `INSERT INTO audit_logs (id, project_id, action, target_type, status, request_id, created_at)
           VALUES ($1, $2, 'agent.create', 'agent', 201, $3, $4::date + make_interval(hours => $5))`,
          [id, tenant.projectId, `req_${i}`, day, i + 1],
        );
      const kept = async () =>
        (await api.services.db.query('SELECT id FROM audit_logs WHERE id = ANY($1) ORDER BY created_at', [ids])).rows.map((row) => row.id);

      assert.equal(await run(activities.expireAuditLogs), 0);
      assert.deepEqual(await kept(), ids);

      const expiring = createMaintenanceActivities({ ...api.services, retention: { ...DEFAULT_RETENTION, auditLogsDays: 365 } });
      assert.ok((await run(expiring.expireAuditLogs)) >= 3);
      assert.deepEqual(await kept(), []);
      const exported = await api.services.blobs.get(`audit-logs/${day}.jsonl`);
      const lines = Buffer.concat(await exported.toArray())
        .toString()
        .trimEnd()
        .split('\n')
        .map((line) => JSON.parse(line));
      assert.deepEqual(
        lines.filter((entry) => ids.includes(entry.id)).map((entry) => [entry.id, entry.project_id, entry.action, entry.request_id]),
        ids.map((id, i) => [id, tenant.projectId, 'agent.create', `req_${i}`]),
      );
      const { rows } = await api.services.db.query('SELECT entries FROM audit_log_exports WHERE day = $1::date', [day]);
      assert.equal(Number(rows[0]!.entries), lines.length);
    });

    it('removes the blobs whose deletion is due, and keeps those still leased', async () => {
      const due = 'files/maintenance/due';
      const leased = 'files/maintenance/leased';
      await api.services.blobs.put(due, Readable.from([Buffer.from('due')]));
      await api.services.blobs.put(leased, Readable.from([Buffer.from('leased')]));
      await releaseBlob(api.services.db, due);
      await stageUpload(api.services.db, leased);

      await run(activities.removeDueBlobs);

      assert.equal(await api.services.blobs.exists(due), false);
      assert.equal(await api.services.blobs.exists(leased), true);
      const { rows } = await api.services.db.query('SELECT blob_key FROM blob_deletions WHERE blob_key = ANY($1)', [[due, leased]]);
      assert.deepEqual(rows, [{ blob_key: leased }]);
      await api.services.db.query('DELETE FROM blob_deletions WHERE blob_key = $1', [leased]);
      await api.services.blobs.delete(leased);
    });

    it('lets two sweeps run side by side and removes each due blob once', async () => {
      const keys = Array.from({ length: 250 }, (_, i) => `files/maintenance/side-by-side-${i}`);
      for (const key of keys) {
        await api.services.blobs.put(key, Readable.from([Buffer.from(key)]));
        await releaseBlob(api.services.db, key);
      }
      // The same store, noting each removal.
      const store = api.services.blobs;
      const removals: string[] = [];
      const noting: BlobStore = {
        put: (key, body) => store.put(key, body),
        get: (key) => store.get(key),
        exists: (key) => store.exists(key),
        check: () => store.check(),
        delete: async (key) => {
          removals.push(key);
          await store.delete(key);
        },
      };

      await Promise.all([sweepDueBlobs(api.services.db, noting), sweepDueBlobs(api.services.db, noting)]);

      const { rows } = await api.services.db.query('SELECT count(*)::int AS left FROM blob_deletions WHERE blob_key = ANY($1)', [keys]);
      assert.equal(rows[0]?.left, 0);
      for (const key of keys) assert.equal(await api.services.blobs.exists(key), false, key);
      assert.equal(new Set(removals).size, removals.length, 'a blob was removed by both sweeps');
    });

    it('clears a backlog of due blobs in one sweep, not a batch per round', async () => {
      const keys = Array.from({ length: 250 }, (_, i) => `files/maintenance/backlog-${i}`);
      // Staged (due in an hour) and then made due all at once: the other tests' workers sweep this database on their
      // schedule, and one sweeping while the backlog was being written would take part of it.
      for (const key of keys) {
        await api.services.blobs.put(key, Readable.from([Buffer.from(key)]));
        await stageUpload(api.services.db, key);
      }
      await api.services.db.query('UPDATE blob_deletions SET due_at = now() WHERE blob_key = ANY($1)', [keys]);

      assert.ok((await run(activities.removeDueBlobs)) >= keys.length);

      const { rows } = await api.services.db.query('SELECT count(*)::int AS left FROM blob_deletions WHERE blob_key = ANY($1)', [keys]);
      assert.equal(rows[0]?.left, 0);
      for (const key of keys) assert.equal(await api.services.blobs.exists(key), false, key);
    });
  });

  describe('the schedule', () => {
    const workers: Stoppable[] = [];
    const schedule = () => api.services.temporal.schedule.getHandle(MAINTENANCE_SCHEDULE_ID);
    const startWorker = async () => workers.push(await serveWorker(api.services, api.temporalAddress, namespace, await workflowBundle()));

    afterEach(async () => {
      for (const worker of workers.splice(0)) await worker.stop();
      await schedule()
        .delete()
        .catch((err) => {
          if (!(err instanceof ScheduleNotFoundError)) throw err;
        });
    });

    it('exists once for the cluster when two workers start, runs a round at once, then every 30 s and never two at once', async () => {
      await Promise.all([startWorker(), startWorker()]);

      const description = await schedule().describe();
      assert.deepEqual(description.spec.intervals, [{ every: 30_000, offset: 0 }]);
      assert.equal(description.policies.overlap, ScheduleOverlapPolicy.SKIP);
      assert.equal(description.action.workflowType, 'maintenanceWorkflow');
      assert.equal(description.info.lastUpdatedAt, undefined, 'the worker that found it current left it alone');
      await eventually(
        async () => {
          const listed: string[] = [];
          for await (const summary of api.services.temporal.schedule.list()) listed.push(summary.scheduleId);
          assert.deepEqual(listed, [MAINTENANCE_SCHEDULE_ID]);
        },
        { message: 'the schedule was not listed' },
      );
      const first = await eventually(
        async () => {
          const [action] = (await schedule().describe()).info.recentActions;
          assert.ok(action, 'no round yet');
          return api.services.temporal.workflow.getHandle<typeof maintenanceWorkflow>(action.action.workflow.workflowId);
        },
        { message: 'the first round did not start' },
      );
      assert.equal(typeof (await first.result()).extractionsRestarted, 'number');
    });

    it('removes a due blob in a round the schedule starts', async () => {
      await Promise.all([startWorker(), startWorker()]);
      // The round the workers start at once ends first: a trigger while a round runs is skipped (overlap SKIP), and
      // the blob would wait for the round after the next 30 s.
      await eventually(
        async () => {
          const [action] = (await schedule().describe()).info.recentActions;
          assert.ok(action, 'no round yet');
          await api.services.temporal.workflow.getHandle<typeof maintenanceWorkflow>(action.action.workflow.workflowId).result();
        },
        { message: 'the first round did not end' },
      );
      const due = 'files/maintenance/scheduled-due';
      await api.services.blobs.put(due, Readable.from([Buffer.from('due')]));
      await releaseBlob(api.services.db, due);

      await schedule().trigger();

      await eventually(async () => assert.equal(await api.services.blobs.exists(due), false), {
        message: 'the scheduled round did not remove the blob',
      });
      const { info } = await schedule().describe();
      for (const { action } of info.recentActions) {
        const round = api.services.temporal.workflow.getHandle<typeof maintenanceWorkflow>(action.workflow.workflowId);
        assert.equal(typeof (await round.result()).blobsRemoved, 'number', 'every round completes');
      }
    });

    it('brings a schedule left by an older release up to this definition at worker start, keeping an operator’s pause', async () => {
      await api.services.temporal.schedule.create({
        scheduleId: MAINTENANCE_SCHEDULE_ID,
        spec: { intervals: [{ every: '5 minutes' }] },
        action: { type: 'startWorkflow', workflowType: 'maintenanceWorkflow', taskQueue: 'agentplane' },
        state: { paused: true, note: 'paused by an operator' },
      });

      await startWorker();

      const description = await schedule().describe();
      assert.deepEqual(description.spec.intervals, [{ every: 30_000, offset: 0 }]);
      assert.equal(description.state.paused, true);
      assert.equal(description.state.note, 'paused by an operator');
    });
  });
});
