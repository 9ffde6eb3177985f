/**
 * Determinism: the histories recorded in test/fixtures/histories replay against the current workflow
 * code, so a change that would break workflows already running fails here. Histories of runs made now
 * replay too. Every file of the folder is replayed, and every workflow the worker runs must have one. After
 * a deliberate change (made safe with `patched()` once released, see docs/architecture.md), record them
 * again: `RECORD_HISTORIES=1 npx mocha dist/test/integration/workflow-replay.test.js`.
 *
 * The files hold the protobufjs object form of a History (enums by name, 64-bit integers and bytes as
 * strings): the SDK's own JSON converters fail here ("type must be a Type") because npm installs two
 * copies of protobufjs 8 for @temporalio/common and @temporalio/proto.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, ScheduleNotFoundError, WorkflowNotFoundError } from '@temporalio/client';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { newTenant, quietTemporalRuntime, startTestApi, workflowBundle, type Tenant, type TestApi } from '../support/api.js';
import { isolatedNamespace } from '../support/services.js';
import { eventually } from '../support/eventually.js';
import type { Stoppable } from '../../cli/processes.js';
import { serveWorker } from '../../cli/worker-process.js';
import { extractionWorkflowId } from '../../workflows/extraction/client.js';
import { MAINTENANCE_SCHEDULE_ID } from '../../workflows/maintenance/client.js';
import { runWorkflowId } from '../../workflows/runs/client.js';
import { networkRunWorkflowId } from '../../workflows/networks/client.js';
import { backfillWorkflowId } from '../../workflows/quality/client.js';
import { runJudgeWorkflowId } from '../../workflows/quality/ids.js';
import { memoryWorkflowId } from '../../workflows/memory/ids.js';
import { deliveryWorkflowId } from '../../workflows/webhooks/client.js';
import * as workflows from '../../workflows/index.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { temporalScheduleId } from '../../workflows/schedules/ids.js';
import { startToolServer } from '../support/http-tool-server.js';
import { startWebhookReceiver } from '../support/webhook-receiver.js';
import { startMcpServer } from '../support/mcp-server.js';
import { experimentWorkflowId } from '../../workflows/experiments/client.js';
import { transaction } from '../../records/db.js';
import { addItems, createDataset, findDataset } from '../../records/datasets.js';
import { DEFAULT_FAIR_SHARE } from '../../workflows/project-shares.js';
import { scannedPagesPdf } from '../support/pdf-fixtures.js';

const historiesDir = fileURLToPath(
  new URL(import.meta.url.includes('/dist/') ? '../../../test/fixtures/histories/' : '../fixtures/histories/', import.meta.url),
);
const recorded = readdirSync(historiesDir)
  .filter((name) => name.endsWith('.json'))
  .sort();

const { History } = proto.temporal.api.history.v1;
type History = proto.temporal.api.history.v1.History;

const readRecorded = (name: string): History => History.fromObject(JSON.parse(readFileSync(join(historiesDir, name), 'utf8')));

/** The workflow type a history is of, named by its first event. */
const workflowTypeOf = (history: History): string => history.events[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? '';

async function replay(history: History): Promise<void> {
  await Worker.runReplayHistory({ workflowBundle: await workflowBundle() }, history);
}

/**
 * Waits for a workflow to end (a run's record may be final a task before its workflow is), replays its
 * history, and with RECORD_HISTORIES=1 keeps it as a fixture.
 */
async function replayAndKeep(api: TestApi, workflowId: string, fixture: string, client: Client = api.services.temporal): Promise<void> {
  const handle = client.workflow.getHandle(workflowId);
  await handle.result();
  const history = History.fromObject(await handle.fetchHistory());
  await replay(history);
  if (process.env.RECORD_HISTORIES === '1') {
    const json = History.toObject(history, { enums: String, longs: String, bytes: String });
    writeFileSync(join(historiesDir, fixture), `${JSON.stringify(json, null, 2)}\n`);
  }
}

describe('workflow replay', function () {
  this.timeout(120_000);
  before(() => quietTemporalRuntime());

  it('holds a recorded history of every workflow the worker runs', () => {
    const types = new Set(recorded.map((name) => workflowTypeOf(readRecorded(name))));
    assert.deepEqual(
      Object.keys(workflows).filter((type) => !types.has(type)),
      [],
      'workflows with no recorded history',
    );
  });

  for (const name of recorded) {
    it(`replays the recorded history ${name} with the current workflow code`, async () => {
      await replay(readRecorded(name));
    });
  }

  describe('of runs made now', () => {
    let api: TestApi;
    let worker: Stoppable;
    let tenant: Tenant;
    let processedId: string;
    let blobMissingId: string;
    let slicedId: string;

    before(async () => {
      // Slices of a second: a scan of a few pages is read in more than one.
      api = await startTestApi({
        worker: false,
        namespace: await isolatedNamespace('replay'),
        fairShare: { ...DEFAULT_FAIR_SHARE, extractionSliceSeconds: 1 },
      });
      tenant = await newTenant(api, 'replay');
      processedId = await upload('first page\fsecond page');
      blobMissingId = await upload('bytes lost before extraction');
      slicedId = await upload(Buffer.from(await scannedPagesPdf(8)), 'scan.pdf');
      const { rows } = await api.services.db.query<{ blob_key: string }>('SELECT blob_key FROM files WHERE id = $1', [blobMissingId]);
      await api.services.blobs.delete(rows[0]!.blob_key);
      worker = await serveWorker(api.services, api.temporalAddress, 'replay', await workflowBundle());
    });

    after(async () => {
      await worker?.stop();
      await api?.services.temporal.schedule
        .getHandle(MAINTENANCE_SCHEDULE_ID)
        .delete()
        .catch((err) => {
          if (!(err instanceof ScheduleNotFoundError)) throw err;
        });
      await api?.stop();
    });

    async function upload(data: string | Buffer, filename = 'notes.txt'): Promise<string> {
      const uploaded = await tenant.admin.upload({ file: { data: Buffer.from(data), filename }, purpose: 'context' });
      assert.equal(uploaded.status, 200);
      return uploaded.body.id;
    }

    const replayRun = (workflowId: string, fixture: string) => replayAndKeep(api, workflowId, fixture);

    /**
     * The client of the namespace that holds a delivery's workflow, if any does: every worker's dispatcher
     * serves the database the suites share, so the shared worker's (namespace `default`) may have started it.
     */
    async function holderOf(workflowId: string): Promise<Client | null> {
      const shared = new Client({ connection: api.services.temporal.connection, namespace: 'default' });
      for (const client of [api.services.temporal, shared]) {
        const found = await client.workflow
          .getHandle(workflowId)
          .describe()
          .then(
            () => true,
            (err: unknown) => {
              if (err instanceof WorkflowNotFoundError) return false;
              throw err;
            },
          );
        if (found) return client;
      }
      return null;
    }

    it('replays an extraction that reached processed', async () => {
      assert.equal((await tenant.admin.settledFile(processedId)).status, 'processed');
      await replayRun(extractionWorkflowId(processedId), 'extract-file-processed.json');
    });

    it('replays an extraction read in slices, its content stage asked for again until it was all stored', async () => {
      assert.equal((await tenant.admin.settledFile(slicedId, 120_000)).status, 'processed');
      const workflowId = extractionWorkflowId(slicedId);
      await replayRun(workflowId, 'extract-file-sliced.json');
      const { events } = await api.services.temporal.workflow.getHandle(workflowId).fetchHistory();
      const slices = (events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'extractFileContent');
      assert.ok(slices.length > 1, `the content stage ran in ${slices.length} slice`);
    });

    it('replays an extraction whose bytes were missing, which marked the file failed', async () => {
      const file = await tenant.admin.settledFile(blobMissingId);
      assert.equal(file.status, 'failed');
      assert.equal(file.last_error.code, 'extraction_failed');
      await replayRun(extractionWorkflowId(blobMissingId), 'extract-file-blob-missing.json');
    });

    it('replays a maintenance round', async () => {
      const schedule = api.services.temporal.schedule.getHandle(MAINTENANCE_SCHEDULE_ID);
      await schedule.trigger();
      const workflowId = await eventually(
        async () => {
          const [action] = (await schedule.describe()).info.recentActions;
          assert.ok(action, 'no round started yet');
          return action.action.workflow.workflowId;
        },
        { message: 'the schedule started no round' },
      );
      await api.services.temporal.workflow.getHandle(workflowId).result();
      await replayRun(workflowId, 'maintenance-round.json');
    });

    it('replays the retries of a webhook delivery that failed its first attempt: one that then succeeded, one that failed them all', async () => {
      const receiver = await startWebhookReceiver();
      try {
        receiver.answer('/flaky', [500]);
        receiver.answer('/down', { always: 500 });
        const endpoints = await Promise.all(
          ['/up', '/flaky', '/down'].map(async (path) => {
            const created = await tenant.admin.post('/v1/webhooks', { url: receiver.url + path, event_types: ['file.deleted'] });
            assert.equal(created.status, 201, JSON.stringify(created.body));
            return created.body.id as string;
          }),
        );
        const fileId = await upload('short-lived');
        assert.equal((await tenant.admin.delete(`/v1/files/${fileId}`)).status, 200);
        const [atOnce, retried, failed] = await Promise.all(
          endpoints.map((endpointId, i) =>
            eventually(
              async () => {
                const [delivery] = (await tenant.admin.get(`/v1/webhooks/${endpointId}/deliveries`)).body.data;
                assert.equal(delivery?.status, i < 2 ? 'succeeded' : 'failed');
                return delivery.id as string;
              },
              { timeoutMs: 30_000, message: 'the deliveries did not end' },
            ),
          ),
        );
        // Delivered by its first attempt: no workflow.
        assert.equal(await holderOf(deliveryWorkflowId(atOnce!)), null);
        for (const [deliveryId, fixture] of [
          [retried!, 'webhook-retries-succeeded.json'],
          [failed!, 'webhook-retries-failed.json'],
        ] as const) {
          const holder = await eventually(async () => {
            const found = await holderOf(deliveryWorkflowId(deliveryId));
            assert.ok(found, `no workflow of ${deliveryId}`);
            return found;
          });
          await replayAndKeep(api, deliveryWorkflowId(deliveryId), fixture, holder);
        }
      } finally {
        await receiver.close();
      }
    });
  });

  describe('of agent runs made now', () => {
    let stack: RunsStack;

    before(async () => {
      stack = await startRunsStack('replay-runs');
    });

    after(async () => {
      await stack?.stop();
    });

    it('replays a run that called a tool and then answered', async () => {
      const tools = await startToolServer();
      try {
        const agent = await createAgent(stack.tenant.admin, { tools: [{ type: 'http', name: 'echo', url: `${tools.url}/echo` }] });
        stack.openai.enqueue({ tool_calls: [{ name: 'echo', arguments: '{"say":"hi"}' }], usage: { input: 3, output: 2 } });
        stack.openai.enqueue({ text: ['done'], usage: { input: 4, output: 1 } });
        const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Echo hi.' });
        assert.equal(run.body.status, 'completed');
        await replayAndKeep(stack.api, runWorkflowId(run.body.id), 'agent-run-tool-call.json');
      } finally {
        await tools.close();
      }
    });

    it('replays a run whose tool call waited for approval, then ran', async () => {
      const tools = await startToolServer();
      try {
        const agent = await createAgent(stack.tenant.admin, {
          tools: [{ type: 'http', name: 'echo', url: `${tools.url}/echo`, approval: { mode: 'always' } }],
        });
        stack.openai.enqueue({ tool_calls: [{ name: 'echo', arguments: '{"say":"hi"}' }], usage: { input: 3, output: 2 } });
        stack.openai.enqueue({ text: ['done'], usage: { input: 4, output: 1 } });
        const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Echo hi.' });
        assert.equal(run.body.status, 'requires_action');
        const [approval] = (await stack.tenant.admin.get(`/v1/approvals?run_id=${run.body.id}`)).body.data;
        assert.equal((await stack.tenant.admin.post(`/v1/approvals/${approval.id}`, { decision: 'approve' })).status, 200);
        await replayAndKeep(stack.api, runWorkflowId(run.body.id), 'agent-run-approval.json');
      } finally {
        await tools.close();
      }
    });

    it('replays a run whose start asked an MCP server for its tools, in an activity of its own', async () => {
      const mcp = await startMcpServer();
      try {
        const agent = await createAgent(stack.tenant.admin, {
          tools: [{ type: 'mcp', server_label: 'calc', server_url: mcp.url, allowed_tools: ['add'] }],
        });
        stack.openai.enqueue({ text: ['ready'], usage: { input: 1, output: 1 } });
        const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Add nothing.' });
        assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
        assert.ok(mcp.methods.includes('tools/list'), 'the MCP server was not asked for its tools');
        await replayAndKeep(stack.api, runWorkflowId(run.body.id), 'agent-run-mcp-start.json');
      } finally {
        await mcp.close();
      }
    });

    it('replays an experiment whose replayed run called a tool it had no recorded answer for, and that run', async () => {
      const agent = await createAgent(stack.tenant.admin, { tools: [{ type: 'http', name: 'echo', url: 'http://127.0.0.1:9/echo' }] });
      const datasetId = await transaction(stack.api.services.db, async (tx) => {
        const created = await createDataset(tx, stack.tenant.projectId, { name: 'replay', description: '', metadata: {}, scorers: [] });
        const locked = (await findDataset(tx, stack.tenant.projectId, created.id, { lock: true }))!;
        await addItems(tx, locked, [{ input: [{ role: 'user', content: 'Echo hi.' }], fileIds: [], metadata: {}, toolCalls: [] }]);
        return created.id;
      });
      stack.openai.enqueue({ tool_calls: [{ name: 'echo', arguments: '{"say":"hi"}' }], usage: { input: 3, output: 2 } });
      const experiment = await stack.tenant.admin.post('/v1/experiments', { dataset_id: datasetId, agent_id: agent.id });
      assert.equal(experiment.status, 201, JSON.stringify(experiment.body));
      await replayAndKeep(stack.api, experimentWorkflowId(experiment.body.id), 'experiment-replay-miss.json');
      const [item] = (await stack.tenant.admin.get(`/v1/experiments/${experiment.body.id}/items`)).body.data;
      assert.equal(item.error?.code, 'replay_miss', JSON.stringify(item));
      await replayAndKeep(stack.api, runWorkflowId(item.run_id), 'agent-run-replay-miss.json');
    });

    it('replays a supervisor network run with its hop', async () => {
      const writer = await createAgent(stack.tenant.admin, { name: 'writer' });
      const net = await stack.tenant.admin.post('/v1/networks', {
        name: 'sup',
        members: [writer.id],
        router: { type: 'supervisor', instructions: 'Route.' },
      });
      stack.openai.enqueue({
        tool_calls: [{ name: 'route', arguments: JSON.stringify({ next: writer.id, reason: 'writing' }) }],
        usage: { input: 1, output: 1 },
      });
      stack.openai.enqueue({ text: ['written'], usage: { input: 1, output: 1 } });
      stack.openai.enqueue({
        tool_calls: [{ name: 'route', arguments: JSON.stringify({ next: 'finish', reason: 'done' }) }],
        usage: { input: 1, output: 1 },
      });
      const run = await stack.tenant.admin.post(`/v1/networks/${net.body.id}/run`, { input: 'Write.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      await replayAndKeep(stack.api, networkRunWorkflowId(run.body.id), 'network-run-supervisor.json');
    });

    it('replays a handoff network run and the hop that handed off', async () => {
      const triage = await createAgent(stack.tenant.admin, { name: 'triage' });
      const expert = await createAgent(stack.tenant.admin, { name: 'expert' });
      const net = await stack.tenant.admin.post('/v1/networks', {
        name: 'handoff',
        members: [triage.id, expert.id],
        router: { type: 'handoff' },
      });
      stack.openai.enqueue({
        tool_calls: [{ name: 'handoff', arguments: JSON.stringify({ to: expert.id, reason: 'expertise' }) }],
        usage: { input: 1, output: 1 },
      });
      stack.openai.enqueue({ text: ['answered'], usage: { input: 1, output: 1 } });
      const run = await stack.tenant.admin.post(`/v1/networks/${net.body.id}/run`, { input: 'Help.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      await replayAndKeep(stack.api, networkRunWorkflowId(run.body.id), 'network-run-handoff.json');
      // The hop that handed off: an agent run that ended on its handoff call.
      await replay(
        History.fromObject(
          await stack.api.services.temporal.workflow.getHandle(runWorkflowId(run.body.hops[0].child_run_id)).fetchHistory(),
        ),
      );
    });

    it('replays a run cancelled during its model call, and the queued run it woke', async () => {
      const agent = await createAgent(stack.tenant.admin, { concurrency: 'enqueue' });
      const seen = stack.openai.requests.length;
      stack.openai.enqueue({ text: ['…'], hang: true });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Wait.', wait: false });
      await eventually(() => assert.ok(stack.openai.requests.length > seen), { message: 'the model was not called' });
      const queued = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Then me.', wait: false });
      assert.equal(queued.body.status, 'queued');
      stack.openai.enqueue({ text: ['my turn'], usage: { input: 1, output: 1 } });
      const cancelled = await stack.tenant.admin.post(`/v1/runs/${run.body.id}/cancel`, {});
      assert.equal(cancelled.body.status, 'cancelled');
      await replayAndKeep(stack.api, runWorkflowId(run.body.id), 'agent-run-cancelled.json');
      await replayAndKeep(stack.api, runWorkflowId(queued.body.id), 'agent-run-queued.json');
      assert.equal((await stack.tenant.admin.get(`/v1/runs/${queued.body.id}`)).body.status, 'completed');
    });

    it('replays the time of a schedule that made a run and waited for it to end', async () => {
      const agent = await createAgent(stack.tenant.admin);
      stack.openai.enqueue({ text: ['on time'], usage: { input: 1, output: 1 } });
      // Once a year: the one time that runs is the one asked for now.
      const created = await stack.tenant.admin.post('/v1/schedules', { agent_id: agent.id, cron: '0 0 1 1 *', run: { input: 'Now.' } });
      assert.equal(created.status, 201, JSON.stringify(created.body));
      const schedule = stack.api.services.temporal.schedule.getHandle(temporalScheduleId(created.body.id));
      await schedule.trigger();
      const workflowId = await eventually(
        async () => {
          const [action] = (await schedule.describe()).info.recentActions;
          assert.ok(action, 'no time taken yet');
          return action.action.workflow.workflowId;
        },
        { message: 'the schedule took no time' },
      );
      await replayAndKeep(stack.api, workflowId, 'scheduled-run.json');
      assert.equal((await stack.tenant.admin.delete(`/v1/schedules/${created.body.id}`)).status, 200);
    });
  });

  describe('of judged runs and backfills made now', () => {
    let stack: RunsStack;

    before(async () => {
      stack = await startRunsStack('replay-quality', { AGENTPLANE_JUDGE_MODEL: 'gpt-4.1-nano' });
      stack.openai.setFallback({
        model: 'gpt-4.1-nano',
        tool_calls: [{ name: 'record_verdict', arguments: '{"score":1,"rationale":"Right."}' }],
        usage: { input: 1, output: 1 },
      });
    });

    after(async () => {
      await stack?.stop();
    });

    it('replays a run on a thread for a subject, and the memory workflow it started', async () => {
      const agent = await createAgent(stack.tenant.admin, { memory: { enabled: true } });
      const thread = await stack.tenant.admin.post('/v1/threads', { subject_id: 'replayed' });
      stack.openai.enqueue({ text: ['Hello Ada.'], usage: { input: 1, output: 1 } });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'My name is Ada.', thread_id: thread.body.id });
      assert.equal(run.body.status, 'completed');
      await replayAndKeep(stack.api, runWorkflowId(run.body.id), 'agent-run-memory.json');
      await replayAndKeep(stack.api, memoryWorkflowId(run.body.id), 'memory.json');
    });

    it('replays a run the judge scored, the judge run it started, and a backfill', async () => {
      const agent = await createAgent(stack.tenant.admin);
      stack.openai.enqueue({ model: 'gpt-4.1-mini', text: ['judged'], usage: { input: 1, output: 1 } });
      const since = Math.floor(Date.now() / 1000) - 60;
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Judge me.' });
      assert.equal(run.body.status, 'completed');
      await stack.api.services.temporal.workflow.getHandle(runWorkflowId(run.body.id)).result();
      await replayAndKeep(stack.api, runWorkflowId(run.body.id), 'agent-run-judged.json');
      await replayAndKeep(stack.api, runJudgeWorkflowId(run.body.id), 'run-judge.json');
      const backfill = await stack.tenant.admin.post('/v1/analytics/quality/backfill', {
        start_time: since,
        end_time: since + 3600,
        scorers: ['completion', 'judge'],
      });
      assert.equal(backfill.status, 202);
      await stack.api.services.temporal.workflow.getHandle(backfillWorkflowId(backfill.body.id)).result();
      await replayAndKeep(stack.api, backfillWorkflowId(backfill.body.id), 'quality-backfill.json');
    });
  });
});
