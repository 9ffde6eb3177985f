/**
 * Runs while PostgreSQL restarts: `agentplane api` and `agentplane worker` as processes of their own on a
 * PostgreSQL of their own, with a model reply (an agent's or a network supervisor's) or a tool result
 * arriving while the database is down, and a model call retried while it is down.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as pause } from 'node:timers/promises';
import { freePort, startPostgres, type RunningPostgres } from '../../cli/embedded.js';
import { newSecret } from '../../records/api-keys.js';
import { createDb } from '../../records/db.js';
import { migrate } from '../../records/migrate.js';
import { runSatisfying } from '../support/agents.js';
import { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { isolatedNamespace, scratch, temporal, testLog } from '../support/services.js';
import { SseReader, type SseEvent } from '../support/sse.js';

// How long PostgreSQL stays down: long enough for the worker to have in hand what was released during the
// outage and fail to record it (a failed write takes milliseconds), or to make the attempt due during it.
const OUTAGE_MS = 4_000;
// A client asking about the run during the outage pauses this long between its questions.
const PACE_MS = 100;

type SentMessage = { role: string; content: unknown };

describe('agentplane api and worker running agents while PostgreSQL restarts', function () {
  this.timeout(300_000);
  const processes: CliProcess[] = [];
  let database: RunningPostgres;
  let openai: OpenAiServer;
  let tools: TestToolServer;
  let api: CliProcess;
  let worker: CliProcess;
  let client: ApiClient;

  before(async () => {
    // A PostgreSQL of its own: stopping it leaves the other suites' database alone.
    database = await startPostgres(join(await scratch, 'runs-postgres-restart'), { durable: false });
    const db = createDb(database.url, { max: 1, log: testLog });
    await migrate(db).finally(() => db.end());
    const blobDir = join(await scratch, 'runs-postgres-restart-blobs');
    await mkdir(blobDir, { recursive: true });
    openai = await startOpenAiServer({ models: ['local-llama'] });
    tools = await startToolServer();
    const env = {
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: (await temporal()).address,
      TEMPORAL_NAMESPACE: await isolatedNamespace('runs-postgres-restart'),
      AGENTPLANE_BLOB_DIR: blobDir,
      AGENTPLANE_ADMIN_KEY: newSecret(),
      AGENTPLANE_TOOLS_ALLOW_PRIVATE: 'true',
      OPENAI_BASE_URL: openai.url,
    };
    const port = await freePort();
    api = runCli('api', { ...env, PORT: String(port), HOST: '127.0.0.1' });
    worker = runCli('worker', env);
    processes.push(api, worker);
    client = new ApiClient(`http://127.0.0.1:${port}`, env.AGENTPLANE_ADMIN_KEY);
    await eventually(
      async () => {
        assert.equal(api.child.exitCode, null, api.output());
        assert.equal((await client.get('/readyz')).status, 200);
      },
      { timeoutMs: 60_000, message: 'the api did not become ready' },
    );
  });

  after(async () => {
    for (const process of processes) {
      process.child.kill('SIGTERM');
      await process.exited;
    }
    await database?.stop();
    await Promise.all([openai?.stop(), tools?.close()]);
  });

  afterEach(() => {
    assert.equal(api.child.exitCode, null, api.output());
    assert.equal(worker.child.exitCode, null, worker.output());
  });

  async function createAgent(fields: Record<string, unknown> = {}): Promise<{ id: string }> {
    const created = await client.post('/v1/agents', { name: 'tides', model: 'gpt-4.1-mini', instructions: 'Answer briefly.', ...fields });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body;
  }

  async function startRun(agentId: string, input: string): Promise<string> {
    const created = await client.post(`/v1/agents/${agentId}/run`, { input, wait: false });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    return created.body.id;
  }

  function followEvents(runId: string, lastEventId?: string): Promise<SseReader> {
    return SseReader.open(`${client.baseUrl}/v1/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${client.key}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    });
  }

  /**
   * Stops PostgreSQL, lets `during` happen, and keeps it down for OUTAGE_MS, asking the API about the run
   * all along (paced, as a client would): every answer is 503 dependency_unavailable with Retry-After.
   */
  async function outage(runId: string, during: () => void): Promise<void> {
    await database.stop();
    during();
    const until = Date.now() + OUTAGE_MS;
    let asked = 0;
    while (Date.now() < until) {
      for (const path of [`/v1/runs/${runId}`, `/v1/runs/${runId}/events`, '/readyz']) {
        const answer = await client.get(path);
        assert.equal(answer.status, 503, `${path} answered ${answer.status} while PostgreSQL was down`);
        assert.ok(Number(answer.headers.get('retry-after')) > 0, `${path} answered 503 without Retry-After`);
        if (path !== '/readyz') assert.equal(answer.body.error.code, 'dependency_unavailable');
        asked += 1;
      }
      await pause(PACE_MS);
    }
    assert.ok(asked >= 3, 'the API was asked during the outage');
    await database.start();
  }

  function ended(runId: string): Promise<any> {
    return runSatisfying(
      client,
      runId,
      (r) => r.status !== 'queued' && r.status !== 'in_progress',
      `run ${runId} did not end: ${worker.output()}`,
      120_000,
    );
  }

  it('records a model reply that ends while PostgreSQL is down once it is back: the model is asked once, and the event stream resumes where it broke off', async () => {
    const agent = await createAgent();
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const seen = openai.requests.length;
    openai.enqueue({ text: ['High tide ', 'is at ', 'noon.'], pause: { chunks: 1, until: released }, usage: { input: 1000, output: 100 } });
    const runId = await startRun(agent.id, 'When is high tide?');
    const stream = await followEvents(runId);
    await stream.next((e) => e.event === 'output_text.delta', 60_000);

    await outage(runId, release);

    // The stream broke off with the database; a client resumes it from the last event it received.
    await stream.done;
    const lastSeen = stream.events.at(-1)!.id!;
    const resumed = await eventually(
      async () => {
        const reader = await followEvents(runId, lastSeen);
        assert.equal(reader.response.status, 200);
        return reader;
      },
      { message: 'the event stream could not be resumed' },
    );
    await resumed.next((e) => e.event === 'run.completed', 60_000);
    await resumed.done;

    const events: SseEvent[] = [...stream.events, ...resumed.events];
    assert.deepEqual(
      events.map((e) => Number(e.id)),
      events.map((_, i) => i + 1),
      'every event once, in order',
    );
    const run = await ended(runId);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.equal(run.output.text, 'High tide is at noon.');
    const deltas = events
      .filter((e) => e.event === 'output_text.delta')
      .map((e) => e.data.delta)
      .join('');
    assert.equal(deltas, 'High tide is at noon.');
    assert.deepEqual(
      events.filter((e) => e.event === 'step.started').map((e) => e.data.attempt),
      [1],
    );
    assert.equal(openai.requests.length - seen, 1, 'the model was asked once');
    assert.deepEqual(run.usage, { input_tokens: 1000, output_tokens: 100, cached_tokens: 0 });
    assert.equal(run.cost, '0.00056');
  });

  it('records a tool result that arrives while PostgreSQL is down once it is back: the tool is called once and the model given its answer', async () => {
    const agent = await createAgent({
      tools: [
        {
          type: 'http',
          name: 'lookup',
          url: `${tools.url}/held`,
          method: 'POST',
          parameters: { type: 'object', properties: { q: { type: 'string' } } },
        },
      ],
    });
    const seen = openai.requests.length;
    openai.enqueue({ tool_calls: [{ name: 'lookup', arguments: '{"q":"tides"}' }], usage: { input: 100, output: 10 } });
    openai.enqueue({ text: ['Noon.'], usage: { input: 200, output: 20 } });
    const runId = await startRun(agent.id, 'When is high tide?');
    await eventually(() => assert.ok(tools.received.includes('/held'), 'the tool was not called'), {
      timeoutMs: 60_000,
      message: 'the tool was not called',
    });

    let answered = 0;
    await outage(runId, () => {
      answered = tools.releaseHeld();
    });
    assert.equal(answered, 1);

    const run = await ended(runId);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.equal(tools.received.filter((path) => path === '/held').length, 1, 'the tool was called once');
    assert.equal(run.steps[1].is_error, false, run.steps[1].output);
    assert.match(run.steps[1].output, /tides/);
    const sent = openai.requests[seen + 1] as { messages: SentMessage[] };
    assert.match(String(sent.messages.find((m) => m.role === 'tool')?.content), /tides/);
    assert.deepEqual(run.usage, { input_tokens: 300, output_tokens: 30, cached_tokens: 0 });
  });

  it("records a network supervisor's choice that arrives while PostgreSQL is down once it is back: the supervisor is asked once, and the network run completes", async () => {
    const writer = await createAgent({ name: 'writer' });
    const created = await client.post('/v1/networks', {
      name: 'desk',
      members: [writer.id],
      router: { type: 'supervisor', instructions: 'Plan the work.', model: 'gpt-4.1-nano' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const seen = openai.requests.length;
    openai.enqueue({
      model: 'gpt-4.1-nano',
      text: ['Routing.'],
      pause: { chunks: 1, until: released },
      tool_calls: [{ name: 'route', arguments: JSON.stringify({ next: writer.id, reason: 'Only writing is needed.' }) }],
      usage: { input: 500, output: 50 },
    });
    openai.enqueue({ model: 'gpt-4.1-mini', text: ['Noon.'], usage: { input: 100, output: 10 } });
    openai.enqueue({
      model: 'gpt-4.1-nano',
      tool_calls: [{ name: 'route', arguments: JSON.stringify({ next: 'finish', reason: 'Answered.' }) }],
      usage: { input: 600, output: 20 },
    });
    const started = await client.post(`/v1/networks/${created.body.id}/run`, { input: 'When is high tide?', wait: false });
    assert.equal(started.status, 202, JSON.stringify(started.body));
    const runId: string = started.body.id;
    await eventually(() => assert.ok(openai.requests.length > seen, 'the supervisor was not asked'), {
      timeoutMs: 60_000,
      message: 'the supervisor was not asked',
    });

    await outage(runId, release);

    const run = await ended(runId);
    assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.equal(run.output.text, 'Noon.');
    assert.deepEqual(
      run.hops.map((h: { agent_id: string; decision: unknown }) => [h.agent_id, h.decision]),
      [[writer.id, { router: 'supervisor', reason: 'Only writing is needed.' }]],
    );
    assert.deepEqual(
      run.steps.map((s: { type: string; status: string }) => [s.type, s.status]),
      [
        ['model_call', 'completed'],
        ['model_call', 'completed'],
      ],
    );
    assert.deepEqual(
      openai.requests.slice(seen).map((r) => r.model),
      ['gpt-4.1-nano', 'gpt-4.1-mini', 'gpt-4.1-nano'],
      'each model asked once',
    );
  });

  it('lets a model call retried while PostgreSQL is down wait for it: an auto run stays on the model it was routed to', async () => {
    const agent = await createAgent({ model: 'auto' });
    const seen = openai.requests.length;
    openai.enqueue({ model: 'local-llama', status: 503, retry_after: 3 });
    openai.enqueue({ model: 'local-llama', text: ['Noon.'], usage: { input: 100, output: 10 } });
    openai.setFallback({ text: ['Another model answered.'] });
    try {
      const runId = await startRun(agent.id, 'When is high tide?');
      await eventually(() => assert.ok(openai.requests.length > seen, 'the model was not called'), {
        timeoutMs: 60_000,
        message: 'the model was not called',
      });
      // The provider asked for 3 s; the call's next attempt falls inside the outage.
      await outage(runId, () => undefined);

      const run = await ended(runId);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(run.output.text, 'Noon.');
      assert.equal(run.resolved_model, 'local-llama');
      assert.doesNotMatch(run.routing_reason, /Fell back/);
      assert.deepEqual(
        run.steps.map((s: { type: string; status: string }) => [s.type, s.status]),
        [['model_call', 'completed']],
      );
      assert.deepEqual(
        openai.requests.slice(seen).map((r) => r.model),
        ['local-llama', 'local-llama'],
      );
    } finally {
      openai.setFallback(null);
    }
  });
});
