/**
 * A fleet under faults: two `agentplane api` and two `agentplane worker` processes on one PostgreSQL, one
 * Temporal namespace and one MinIO bucket, under runs (waited for, streamed, cancelled) and uploads from two
 * projects. One API and one worker are killed with SIGKILL while runs hold their tool calls, then started
 * again; the test checks what every client and receiver saw.
 */
import assert from 'node:assert/strict';
import { freePort } from '../../cli/embedded.js';
import { newSecret } from '../../records/api-keys.js';
import { createDb } from '../../records/db.js';
import { migrate } from '../../records/migrate.js';
import { newTenant, type Tenant } from '../support/api.js';
import { ApiClient } from '../support/client.js';
import { sumOf } from '../support/decimals.js';
import { eventually } from '../support/eventually.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import { ordering, promptedReplies } from '../support/model-servers/prompted.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { isolatedNamespace, minio, postgres, temporal, testLog } from '../support/services.js';
import { SseReader, type SseEvent } from '../support/sse.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

type SentMessage = { role: string; content: unknown };

const HELD_RUNS_PER_PROJECT = 6;
const STREAMED = 4;

describe('a fleet of two APIs and two workers, one of each killed under load', function () {
  this.timeout(300_000);
  const processes: CliProcess[] = [];
  let env: Record<string, string>;
  let ports: number[];
  let openai: OpenAiServer;
  let tools: TestToolServer;
  let receiver: WebhookReceiver;
  let tenants: Tenant[];

  const startApi = (port: number) => {
    const api = runCli('api', { ...env, PORT: String(port), HOST: '127.0.0.1' });
    processes.push(api);
    return api;
  };
  const startWorker = () => {
    const worker = runCli('worker', env);
    processes.push(worker);
    return worker;
  };
  const ready = (api: CliProcess, port: number) =>
    eventually(
      async () => {
        assert.equal(api.child.exitCode, null, api.output());
        assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
      },
      { timeoutMs: 60_000, message: 'an API did not become ready' },
    );
  /** The tenant's admin key, through API `i`. */
  const through = (tenant: Tenant, i: number) => new ApiClient(`http://127.0.0.1:${ports[i]}`, tenant.admin.key);

  before(async () => {
    const [pg, tp, s3] = await Promise.all([postgres(), temporal(), minio()]);
    const admin = createDb(pg.url, { max: 1, log: testLog });
    await admin.query('CREATE DATABASE agentplane_fleet');
    await admin.end();
    const databaseUrl = pg.url.replace(/\/agentplane$/, '/agentplane_fleet');
    const db = createDb(databaseUrl, { max: 1, log: testLog });
    await migrate(db).finally(() => db.end());
    openai = await startOpenAiServer({ models: [] });
    openai.setFallback(promptedReplies({ text: ['Done.'], usage: { input: 12, output: 3 } }));
    tools = await startToolServer();
    receiver = await startWebhookReceiver();
    env = {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: tp.address,
      TEMPORAL_NAMESPACE: await isolatedNamespace('fleet'),
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: 'agentplane-fleet',
      S3_ACCESS_KEY: s3.accessKey,
      S3_SECRET_KEY: s3.secretKey,
      AGENTPLANE_ADMIN_KEY: newSecret(),
      OPENAI_BASE_URL: openai.url,
      AGENTPLANE_TOOLS_ALLOW_PRIVATE: 'true',
      AGENTPLANE_WEBHOOK_ALLOW_PRIVATE: 'true',
      AGENTPLANE_WEBHOOK_RETRY_INITIAL_MS: '500',
    };
    ports = [await freePort(), await freePort()];
    const apis = ports.map(startApi);
    startWorker();
    startWorker();
    await Promise.all(apis.map((api, i) => ready(api, ports[i]!)));
    const root = new ApiClient(`http://127.0.0.1:${ports[0]}`, env.AGENTPLANE_ADMIN_KEY!);
    tenants = [await newTenant({ url: root.baseUrl, root }, 'fleet-a'), await newTenant({ url: root.baseUrl, root }, 'fleet-b')];
  });

  after(async () => {
    tools?.releaseHeld();
    for (const process of processes) {
      if (process.child.exitCode === null && process.child.signalCode === null) process.child.kill('SIGTERM');
      await process.exited;
    }
    await tools?.close();
    await receiver?.close();
    await openai?.stop();
  });

  it('ends every accepted run and file, asks the model once a step, balances the costs, delivers every event and resumes every stream', async () => {
    const since = Math.floor(Date.now() / 1000 / 3600) * 3600;
    const agents = new Map<Tenant, string>();
    for (const [t, tenant] of tenants.entries()) {
      const agent = await tenant.admin.post('/v1/agents', {
        name: 'fleet',
        model: 'gpt-4.1-mini',
        instructions: 'Use your tool.',
        tools: [{ type: 'http', name: 'probe', url: `${tools.url}/held` }],
      });
      assert.equal(agent.status, 201, JSON.stringify(agent.body));
      agents.set(tenant, agent.body.id);
      const hook = await tenant.admin.post('/v1/webhooks', {
        url: `${receiver.url}/project-${t}`,
        event_types: ['run.completed', 'run.cancelled', 'file.processed'],
      });
      assert.equal(hook.status, 201, JSON.stringify(hook.body));
    }

    // Runs whose tool calls the tool server holds, started through both APIs, and files uploaded.
    const held: { tenant: Tenant; id: string; input: string }[] = [];
    const files: { tenant: Tenant; id: string }[] = [];
    for (const [t, tenant] of tenants.entries()) {
      for (let i = 0; i < HELD_RUNS_PER_PROJECT; i++) {
        const input = ordering({ call: { name: 'probe', arguments: { run: `${t}-${i}` } } });
        const started = await through(tenant, i % 2).post(`/v1/agents/${agents.get(tenant)}/run`, { input, wait: false });
        assert.equal(started.status, 202, JSON.stringify(started.body));
        held.push({ tenant, id: started.body.id, input });
      }
      for (let i = 0; i < 2; i++) {
        const uploaded = await through(tenant, i % 2).upload({
          file: { data: Buffer.from(`Fleet notes ${t}-${i}: the workers share one queue.`), filename: `notes-${i}.txt` },
          purpose: 'context',
        });
        assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
        files.push({ tenant, id: uploaded.body.id });
      }
    }
    await eventually(() => assert.equal(tools.received.filter((path) => path === '/held').length, held.length), {
      timeoutMs: 60_000,
      message: 'the runs did not all reach their tool call',
    });

    // Streams on the API about to be killed, each read up to where it stands.
    const streamed = held.slice(0, STREAMED);
    const seen = new Map<string, SseEvent[]>();
    const readers = await Promise.all(
      streamed.map(async (run) => {
        const reader = await SseReader.open(`http://127.0.0.1:${ports[0]}/v1/runs/${run.id}/events`, {
          headers: { authorization: `Bearer ${run.tenant.admin.key}` },
        });
        await reader.next((e) => e.event === 'run.step.completed' || e.event === 'tool_call.started' || e.id !== null);
        return reader;
      }),
    );

    const [killedApi, killedWorker] = [processes[0]!, processes[2]!];
    killedApi.child.kill('SIGKILL');
    killedWorker.child.kill('SIGKILL');
    await Promise.all([killedApi.exited, killedWorker.exited]);
    for (const [i, reader] of readers.entries()) {
      await reader.done.catch(() => undefined);
      seen.set(streamed[i]!.id, [...reader.events]);
    }

    // Meanwhile, through the surviving API: runs waited for, and runs cancelled.
    const waited = await Promise.all(
      tenants.map(async (tenant, t) => {
        const input = `Waited for while a replica is down, ${t}.`;
        const answered = await through(tenant, 1).post(`/v1/agents/${agents.get(tenant)}/run`, { input });
        assert.equal(answered.status, 200, JSON.stringify(answered.body));
        assert.equal(answered.body.status, 'completed', JSON.stringify(answered.body));
        return { tenant, id: answered.body.id as string, input };
      }),
    );
    const cancelled: { tenant: Tenant; id: string }[] = [];
    for (const tenant of tenants) {
      const started = await through(tenant, 1).post(`/v1/agents/${agents.get(tenant)}/run`, {
        input: ordering({ hang: true }),
        wait: false,
      });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      cancelled.push({ tenant, id: started.body.id });
    }

    // Both back; the streams resume on the surviving API from the last event each saw.
    const restarted = startApi(ports[0]!);
    startWorker();
    await ready(restarted, ports[0]!);
    const resumed = await Promise.all(
      streamed.map(async (run) => {
        const last = seen
          .get(run.id)!
          .filter((e) => e.id !== null)
          .at(-1)?.id;
        return SseReader.open(`http://127.0.0.1:${ports[1]}/v1/runs/${run.id}/events`, {
          headers: { authorization: `Bearer ${run.tenant.admin.key}`, ...(last ? { 'last-event-id': last } : {}) },
        });
      }),
    );

    for (const run of cancelled) {
      await eventually(async () => assert.equal((await run.tenant.admin.get(`/v1/runs/${run.id}`)).body.status, 'in_progress'), {
        timeoutMs: 60_000,
        message: 'a run to cancel did not start',
      });
      const answer = await through(run.tenant, 0).post(`/v1/runs/${run.id}/cancel`, {});
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
    }

    // The tool server answers what it holds, again and again: a call the killed worker made is made again
    // by the other once its heartbeat is missed.
    const runs = await eventually(
      async () => {
        tools.releaseHeld();
        const now = await Promise.all(held.map(async (run) => (await run.tenant.admin.get(`/v1/runs/${run.id}`)).body));
        assert.deepEqual(
          now.filter((r) => r.status !== 'completed').map((r) => `${r.id} ${r.status}`),
          [],
        );
        return now;
      },
      { timeoutMs: 120_000, intervalMs: 500, message: 'the runs holding tool calls did not all complete' },
    );
    for (const run of runs) assert.equal(run.output.text, 'after tools');
    for (const run of cancelled)
      await eventually(async () => assert.equal((await run.tenant.admin.get(`/v1/runs/${run.id}`)).body.status, 'cancelled'), {
        message: 'a cancelled run did not end cancelled',
      });
    for (const file of files)
      await eventually(async () => assert.equal((await file.tenant.admin.get(`/v1/files/${file.id}`)).body.status, 'processed'), {
        timeoutMs: 60_000,
        message: 'an upload was not processed',
      });

    // Each step's model call was made once: the first before the kill, the one after the tool during it.
    const asked = openai.requests.map((r) => (r as { messages: SentMessage[] }).messages);
    const heldIds = new Set(held.map((run) => run.id));
    for (const run of [...held, ...waited]) {
      const ofRun = asked.filter((messages) => messages.find((m) => m.role === 'user')?.content === run.input);
      assert.equal(ofRun.filter((m) => m.at(-1)?.role !== 'tool').length, 1, `the first model call of ${run.id}`);
      assert.equal(
        ofRun.filter((m) => m.at(-1)?.role === 'tool').length,
        heldIds.has(run.id) ? 1 : 0,
        `the call after the tool of ${run.id}`,
      );
    }

    // The cost report equals the runs' costs, to the last decimal.
    for (const tenant of tenants) {
      const mine = await Promise.all(
        [...held, ...waited, ...cancelled]
          .filter((r) => r.tenant === tenant)
          .map(async (r) => (await tenant.admin.get(`/v1/runs/${r.id}`)).body.cost),
      );
      const report = await tenant.admin.get(`/v1/analytics/costs?start_time=${since}&bucket_width=1d&limit=2`);
      assert.equal(report.status, 200, JSON.stringify(report.body));
      const reported = (report.body.data as { results: { amount: { value: string } }[] }[]).flatMap((b) =>
        b.results.map((r) => r.amount.value),
      );
      assert.equal(sumOf(reported), sumOf(mine));
    }

    // Every event reached its endpoint at least once, each delivery carrying the event's id.
    for (const [t, tenant] of tenants.entries()) {
      const expected = [
        ...[...held, ...waited].filter((r) => r.tenant === tenant).map((r) => `run.completed ${r.id}`),
        ...cancelled.filter((r) => r.tenant === tenant).map((r) => `run.cancelled ${r.id}`),
        ...files.filter((f) => f.tenant === tenant).map((f) => `file.processed ${f.id}`),
      ].sort();
      await eventually(
        () => {
          const received = receiver.to(`/project-${t}`);
          const delivered = received.map((w) => JSON.parse(w.body) as { id: string; type: string; data: { id: string } });
          for (const [n, event] of delivered.entries()) assert.equal(received[n]!.headers['webhook-id'], event.id);
          assert.deepEqual([...new Set(delivered.map((e) => `${e.type} ${e.data.id}`))].sort(), expected);
        },
        // A first attempt the killed worker had claimed is made again once its claim expires.
        { timeoutMs: 90_000, intervalMs: 250, message: 'the events were not all delivered' },
      );
    }

    // The streams: what each saw before the kill and after resuming is the run's whole log, once, in order.
    for (const [i, reader] of resumed.entries()) {
      await reader.done;
      const ids = [...seen.get(streamed[i]!.id)!, ...reader.events].filter((e) => e.id !== null).map((e) => Number(e.id));
      assert.deepEqual(
        ids,
        Array.from({ length: ids.length }, (_, n) => ids[0]! + n),
        `the events of ${streamed[i]!.id}`,
      );
      assert.equal(reader.events.at(-1)?.event, 'run.completed');
      const whole = await SseReader.open(`http://127.0.0.1:${ports[1]}/v1/runs/${streamed[i]!.id}/events`, {
        headers: { authorization: `Bearer ${streamed[i]!.tenant.admin.key}` },
      });
      await whole.done;
      assert.deepEqual(
        ids,
        whole.events.filter((e) => e.id !== null).map((e) => Number(e.id)),
      );
    }
  });
});
