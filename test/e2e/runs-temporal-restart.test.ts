/**
 * Runs and experiments while Temporal restarts, while the worker cannot reach it, or when the worker is killed:
 * `agentplane api` and `agentplane worker` as processes of their own, on a Temporal server of their own that keeps
 * its state in a file across the restart. The worker reaches Temporal through a proxy that a test can cut, as a
 * network partition would.
 */
import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { freePort, startPostgres, startTemporal, type RunningPostgres, type RunningService } from '../../cli/embedded.js';
import { newSecret } from '../../records/api-keys.js';
import { createDb } from '../../records/db.js';
import { migrate } from '../../records/migrate.js';
import { runSatisfying } from '../support/agents.js';
import { ApiClient } from '../support/client.js';
import { sumOf } from '../support/decimals.js';
import { eventually, withinDeadline } from '../support/eventually.js';
import { startAnthropicServer } from '../support/model-servers/anthropic.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import type { ModelServer } from '../support/model-servers/scripted-server.js';
import { startPausableProxy, type PausableProxy } from '../support/pausable-proxy.js';
import { lineSaid, runCli, type CliProcess } from '../support/processes.js';
import { scratch, testLog } from '../support/services.js';
import { SseReader } from '../support/sse.js';

type SentMessage = { role: string; content: unknown };

const SHUTDOWN_GRACE_SECONDS = 4;

describe('agentplane api and worker running agents while Temporal restarts', function () {
  this.timeout(300_000);
  const processes: CliProcess[] = [];
  let database: RunningPostgres;
  let temporal: RunningService & { address: string };
  let temporalFile: string;
  let openai: OpenAiServer;
  /** The experiments' model, apart from the runs' so that neither sees the other's requests. */
  let anthropic: ModelServer;
  let env: Record<string, string>;
  let toTemporal: PausableProxy;
  let api: CliProcess;
  let worker: CliProcess;
  let client: ApiClient;

  before(async () => {
    database = await startPostgres(join(await scratch, 'runs-temporal-restart'), { durable: false });
    const db = createDb(database.url, { max: 1, log: testLog });
    await migrate(db).finally(() => db.end());
    const blobDir = join(await scratch, 'runs-temporal-restart-blobs');
    await mkdir(blobDir, { recursive: true });
    temporalFile = join(await scratch, 'runs-temporal-restart.db');
    temporal = await startTemporal({ dbFile: temporalFile });
    openai = await startOpenAiServer({ models: [] });
    anthropic = await startAnthropicServer();
    toTemporal = await startPausableProxy(temporal.address);
    env = {
      DATABASE_URL: database.url,
      TEMPORAL_ADDRESS: temporal.address,
      AGENTPLANE_BLOB_DIR: blobDir,
      AGENTPLANE_ADMIN_KEY: newSecret(),
      OPENAI_BASE_URL: openai.url,
      ANTHROPIC_BASE_URL: anthropic.url,
      // Short, so that a stop which outlasts it fails the test quickly; production's default is 25 s.
      AGENTPLANE_SHUTDOWN_GRACE_SECONDS: String(SHUTDOWN_GRACE_SECONDS),
    };
    const port = await freePort();
    api = runCli('api', { ...env, PORT: String(port), HOST: '127.0.0.1' });
    worker = runCli('worker', { ...env, TEMPORAL_ADDRESS: toTemporal.address });
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
    await toTemporal?.stop();
    await temporal?.stop();
    await database?.stop();
    await openai?.stop();
    await anthropic?.stop();
  });

  /** The user messages the model was asked with, in order. */
  const askedSoFar = () =>
    openai.requests.map((r) => ((r as { messages: SentMessage[] }).messages.find((m) => m.role === 'user') as SentMessage).content);

  it('finishes a run in flight once Temporal is back, asking the model once; meanwhile runs are read, accepted and started later, and a cancel answers 503 with Retry-After', async () => {
    const created = await client.post('/v1/agents', { name: 'tides', model: 'gpt-4.1-mini', instructions: 'Answer briefly.' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const agentId: string = created.body.id;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    openai.enqueue({ text: ['High tide ', 'is at noon.'], pause: { chunks: 1, until: released }, usage: { input: 1000, output: 100 } });
    const first = await client.post(`/v1/agents/${agentId}/run`, { input: 'When is high tide?', wait: false });
    assert.equal(first.status, 202, JSON.stringify(first.body));
    const stream = await SseReader.open(`${client.baseUrl}/v1/runs/${first.body.id}/events`, {
      headers: { authorization: `Bearer ${client.key}` },
    });
    await stream.next((e) => e.event === 'output_text.delta', 60_000);

    await temporal.stop();
    const readiness = await client.get('/readyz');
    assert.equal(readiness.status, 503);
    assert.equal(readiness.body.checks.temporal, 'unavailable');
    const read = await client.get(`/v1/runs/${first.body.id}`);
    assert.equal(read.status, 200, JSON.stringify(read.body));
    assert.equal(read.body.status, 'in_progress');
    // A run asked for now is accepted, and started once Temporal is back.
    const second = await client.post(`/v1/agents/${agentId}/run`, { input: 'And low tide?', wait: false });
    assert.equal(second.status, 202, JSON.stringify(second.body));
    assert.equal(second.body.status, 'queued');
    const cancel = await client.post(`/v1/runs/${second.body.id}/cancel`, {});
    assert.equal(cancel.status, 503, JSON.stringify(cancel.body));
    assert.equal(cancel.body.error.code, 'dependency_unavailable');
    assert.ok(Number(cancel.headers.get('retry-after')) > 0, 'a 503 says when to retry');
    // The model finishes its reply while Temporal is down.
    release();
    openai.enqueue({ text: ['Low tide is at six.'], usage: { input: 500, output: 50 } });

    temporal = await startTemporal({ dbFile: temporalFile, port: Number(temporal.address.split(':')[1]) });
    const done = await runSatisfying(
      client,
      first.body.id,
      (r) => r.status === 'completed',
      `the run in flight did not complete: ${worker.output()}`,
      120_000,
    );
    assert.equal(done.output.text, 'High tide is at noon.');
    assert.deepEqual(done.usage, { input_tokens: 1000, output_tokens: 100, cached_tokens: 0 });
    const later = await runSatisfying(
      client,
      second.body.id,
      (r) => r.status === 'completed',
      `the run accepted during the outage did not complete: ${worker.output()}`,
      120_000,
    );
    assert.equal(later.output.text, 'Low tide is at six.');

    assert.deepEqual(askedSoFar(), ['When is high tide?', 'And low tide?'], 'each run asked the model once');
    assert.equal(api.child.exitCode, null, api.output());
    assert.equal(worker.child.exitCode, null, worker.output());
  });

  it('cancels the run an interrupt run replaced while Temporal was down once Temporal is back, so the two never go on together', async () => {
    const created = await client.post('/v1/agents', {
      name: 'breakers',
      model: 'gpt-4.1-mini',
      instructions: 'Answer briefly.',
      concurrency: 'interrupt',
      tools: [
        {
          type: 'http',
          name: 'close_beach',
          url: 'https://example.com/close',
          parameters: { type: 'object', properties: { beach: { type: 'string' } }, required: ['beach'] },
          approval: { mode: 'always' },
        },
      ],
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const agentId: string = created.body.id;
    // The run to be replaced waits for a person's approval: in progress, with nothing of it running.
    openai.enqueue({ tool_calls: [{ name: 'close_beach', arguments: '{"beach":"north"}' }], usage: { input: 100, output: 10 } });
    const replaced = await client.post(`/v1/agents/${agentId}/run`, { input: 'Are the breakers too high?', wait: false });
    assert.equal(replaced.status, 202, JSON.stringify(replaced.body));
    await runSatisfying(client, replaced.body.id, (r) => r.status === 'requires_action', 'the run did not wait for approval', 60_000);

    // Its replacement is admitted while Temporal is down: neither the cancellation nor the start reaches it.
    await temporal.stop();
    openai.enqueue({ text: ['Calm now.'], usage: { input: 100, output: 10 } });
    const replacing = await client.post(`/v1/agents/${agentId}/run`, { input: 'And now?', wait: false });
    assert.equal(replacing.status, 202, JSON.stringify(replacing.body));
    assert.equal((await client.get(`/v1/runs/${replaced.body.id}`)).body.status, 'requires_action');
    temporal = await startTemporal({ dbFile: temporalFile, port: Number(temporal.address.split(':')[1]) });

    await runSatisfying(
      client,
      replaced.body.id,
      (r) => r.status === 'cancelled',
      `the replaced run was not interrupted once Temporal was back: ${worker.output()}`,
      120_000,
    );
    const later = await runSatisfying(
      client,
      replacing.body.id,
      (r) => r.status === 'completed',
      `the replacing run did not complete: ${worker.output()}`,
      120_000,
    );
    assert.equal(later.output.text, 'Calm now.');
  });

  it('stops a worker on SIGTERM within its shutdown grace while Temporal is down with a model call in flight, logging why, and the next worker finishes the run', async () => {
    const created = await client.post('/v1/agents', { name: 'swell', model: 'gpt-4.1-mini', instructions: 'Answer briefly.' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    // The first ask is held; the next worker's attempt asks again, since the stopped worker's call ended with it.
    let asks = 0;
    openai.setFallback(() =>
      ++asks === 1
        ? { text: ['The swell ', 'is two metres.'], pause: { chunks: 1, until: released }, usage: { input: 300, output: 30 } }
        : { text: ['The swell is two metres.'], usage: { input: 300, output: 30 } },
    );
    const run = await client.post(`/v1/agents/${created.body.id}/run`, { input: 'How big is the swell?', wait: false });
    assert.equal(run.status, 202, JSON.stringify(run.body));
    const stream = await SseReader.open(`${client.baseUrl}/v1/runs/${run.body.id}/events`, {
      headers: { authorization: `Bearer ${client.key}` },
    });
    await stream.next((e) => e.event === 'output_text.delta', 60_000);

    // Temporal gone, and its address held as an unreachable host's is: the worker's calls to it hang.
    await temporal.stop();
    toTemporal.pause();
    const reason = lineSaid(worker, /shutdown grace of \d+ s ran out/);
    const signalled = Date.now();
    worker.child.kill('SIGTERM');
    const exit = await withinDeadline(
      worker.exited,
      (SHUTDOWN_GRACE_SECONDS + 3) * 1000,
      `the worker had not exited ${SHUTDOWN_GRACE_SECONDS + 3} s after SIGTERM: ${worker.output()}`,
    );
    const took = Date.now() - signalled;
    assert.ok(took < (SHUTDOWN_GRACE_SECONDS + 1) * 1000, `the worker took ${took} ms to exit`);
    // Not drained: the attempt's end could not be told to Temporal, which gives the attempt to another worker.
    assert.deepEqual(exit, { code: 1, signal: null }, worker.output());
    assert.match(await reason, new RegExp(`shutdown grace of ${SHUTDOWN_GRACE_SECONDS} s ran out while the worker was stopping`));

    release();
    toTemporal.resume();
    temporal = await startTemporal({ dbFile: temporalFile, port: Number(temporal.address.split(':')[1]) });
    worker = runCli('worker', { ...env, TEMPORAL_ADDRESS: toTemporal.address });
    processes.push(worker);
    const done = await runSatisfying(
      client,
      run.body.id,
      (r) => r.status === 'completed',
      `the run was not finished by the next worker: ${worker.output()}`,
      120_000,
    );
    assert.equal(done.output.text, 'The swell is two metres.');
    openai.setFallback(null);
  });

  it('keeps a model call going when the worker gives its attempt up for not reaching Temporal, records the reply, and does not ask the model again once Temporal is reachable', async () => {
    const created = await client.post('/v1/agents', { name: 'currents', model: 'gpt-4.1-mini', instructions: 'Answer briefly.' });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const askedBefore = askedSoFar().length;
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    openai.enqueue({ text: ['The current ', 'runs north.'], pause: { chunks: 1, until: released }, usage: { input: 700, output: 70 } });
    openai.enqueue({ text: ['A second answer nobody should have asked for.'], usage: { input: 700, output: 70 } });
    const run = await client.post(`/v1/agents/${created.body.id}/run`, { input: 'Which way does the current run?', wait: false });
    assert.equal(run.status, 202, JSON.stringify(run.body));
    const stream = await SseReader.open(`${client.baseUrl}/v1/runs/${run.body.id}/events`, {
      headers: { authorization: `Bearer ${client.key}` },
    });
    await stream.next((e) => e.event === 'output_text.delta', 60_000);

    // The worker's calls to Temporal now hang: past the heartbeat timeout it gives the attempt up itself.
    const gaveUp = lineSaid(worker, /its call goes on/);
    toTemporal.pause();
    await withinDeadline(gaveUp, 60_000, 'the worker never said that it gave the attempt up and kept its call going');
    release();
    await eventually(
      async () => {
        const read = await client.get(`/v1/runs/${run.body.id}`);
        assert.equal(read.body.steps?.[0]?.status, 'completed', JSON.stringify(read.body));
      },
      { timeoutMs: 30_000, message: 'the reply that came while Temporal was unreachable was not recorded' },
    );
    toTemporal.resume();

    const done = await runSatisfying(
      client,
      run.body.id,
      (r) => r.status === 'completed',
      `the run did not complete: ${worker.output()}`,
      120_000,
    );
    assert.equal(done.output.text, 'The current runs north.');
    assert.deepEqual(done.usage, { input_tokens: 700, output_tokens: 70, cached_tokens: 0 });
    assert.deepEqual(askedSoFar().slice(askedBefore), ['Which way does the current run?'], 'the model was asked once');
    assert.equal(worker.child.exitCode, null, worker.output());
  });
  /**
   * An agent on the experiments' model, and a dataset of `count` questions from `first` on, each expecting its
   * answer: asked "Question n?", the model answers "Answer n.", after `hold` when one is given.
   */
  async function quiz(name: string, first: number, count: number) {
    const agent = await client.post('/v1/agents', { name, model: 'claude-haiku-4-5', instructions: 'Answer briefly.' });
    assert.equal(agent.status, 201, JSON.stringify(agent.body));
    const dataset = await client.post('/v1/datasets', { name });
    assert.equal(dataset.status, 201, JSON.stringify(dataset.body));
    const items = Array.from({ length: count }, (_, i) => ({ input: `Question ${first + i}?`, expected: `Answer ${first + i}.` }));
    const added = await client.post(`/v1/datasets/${dataset.body.id}/items`, { items });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    return { agentId: agent.body.id as string, datasetId: dataset.body.id as string };
  }
  const questionOf = (body: Record<string, unknown>) => Number(/Question (\d+)/.exec(JSON.stringify(body.messages))?.[1]);
  /** Answers every question, each held after its first word while `hold()` says so, until `until` resolves. */
  const answering = (hold: () => boolean, until: Promise<unknown>) =>
    anthropic.setFallback((body) => ({
      text: ['Answer ', `${questionOf(body)}.`],
      usage: { input: 20, output: 4 },
      ...(hold() ? { pause: { chunks: 1, until } } : {}),
    }));
  const itemsOf = async (experimentId: string) => {
    const items = await client.get(`/v1/experiments/${experimentId}/items?limit=100`);
    assert.equal(items.status, 200, JSON.stringify(items.body));
    return items.body.data as {
      status: string;
      run_id: string | null;
      output: string | null;
      scores: { scorer: string; value: number }[];
      cost_usd: string | null;
    }[];
  };
  const runsOf = async (agentId: string) => {
    const runs = await client.get(`/v1/runs?agent_id=${agentId}&limit=100`);
    assert.equal(runs.status, 200, JSON.stringify(runs.body));
    return runs.body.data as { id: string; status: string; cost: string }[];
  };

  it('completes an experiment whose worker was killed mid-way once another worker starts: one run per item, each item ended and scored once', async () => {
    const { agentId, datasetId } = await quiz('quiz', 1, 6);
    let holding = true;
    let release!: () => void;
    answering(() => holding, new Promise<void>((resolve) => (release = resolve)));
    const created = await client.post('/v1/experiments', { dataset_id: datasetId, agent_id: agentId, concurrency: 2 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const experimentId: string = created.body.id;
    await eventually(
      async () => {
        assert.equal(anthropic.requests.length, 2);
        assert.deepEqual(
          (await itemsOf(experimentId)).map((item) => item.status),
          ['running', 'running', 'queued', 'queued', 'queued', 'queued'],
        );
      },
      { timeoutMs: 60_000, message: "the experiment's first two runs did not reach the model" },
    );

    worker.child.kill('SIGKILL');
    await worker.exited;
    holding = false;
    release();
    worker = runCli('worker', { ...env, TEMPORAL_ADDRESS: toTemporal.address });
    processes.push(worker);

    const ended = await eventually(
      async () => {
        const got = await client.get(`/v1/experiments/${experimentId}`);
        assert.equal(got.body.status, 'completed', JSON.stringify(got.body));
        return got.body;
      },
      { timeoutMs: 120_000, intervalMs: 250, message: 'the experiment did not complete after the new worker started' },
    );
    assert.deepEqual(ended.item_counts, { total: 6, queued: 0, running: 0, completed: 6, failed: 0, cancelled: 0 });
    assert.deepEqual(ended.summary.scores, { completion: { mean: 1, count: 6 }, exact_match: { mean: 1, count: 6 } });
    const items = await itemsOf(experimentId);
    assert.deepEqual(
      items.map((item) => [item.status, item.output, item.scores.map((score) => `${score.scorer} ${score.value}`)]),
      items.map((_, i) => ['completed', `Answer ${i + 1}.`, ['completion 1', 'exact_match 1']]),
    );
    // One run per item, each run the item's, each ended once.
    const runs = await runsOf(agentId);
    assert.deepEqual(runs.map((run) => run.id).sort(), items.map((item) => item.run_id).sort());
    assert.deepEqual(
      runs.map((run) => run.status),
      runs.map(() => 'completed'),
    );
    assert.equal(ended.summary.cost_usd, sumOf(items.map((item) => item.cost_usd)));
    assert.equal(ended.summary.cost_usd, sumOf(runs.map((run) => run.cost)));
    // The two calls the killed worker was making were made again, once, by the new one; the others once.
    const asked = [1, 2, 3, 4, 5, 6].map((n) => anthropic.requests.filter((body) => questionOf(body) === n).length);
    assert.deepEqual(asked, [2, 2, 1, 1, 1, 1]);
    assert.equal(worker.child.exitCode, null, worker.output());
  });

  it('answers 503 with Retry-After to a cancel while Temporal is down and changes nothing; cancelled once Temporal is back, no run of it goes on', async () => {
    const { agentId, datasetId } = await quiz('held quiz', 7, 3);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    answering(() => true, released);
    const created = await client.post('/v1/experiments', { dataset_id: datasetId, agent_id: agentId, concurrency: 2 });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const experimentId: string = created.body.id;
    await eventually(
      async () => {
        assert.equal(anthropic.requests.filter((body) => questionOf(body) >= 7).length, 2);
        assert.deepEqual(
          (await itemsOf(experimentId)).map((item) => item.status),
          ['running', 'running', 'queued'],
        );
      },
      { timeoutMs: 60_000, message: "the experiment's runs did not reach the model" },
    );

    await temporal.stop();
    const refused = await client.post(`/v1/experiments/${experimentId}/cancel`, {});
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'dependency_unavailable');
    assert.ok(Number(refused.headers.get('retry-after')) > 0, 'a 503 says when to retry');
    const unchanged = await client.get(`/v1/experiments/${experimentId}`);
    assert.equal(unchanged.body.status, 'running', JSON.stringify(unchanged.body));
    assert.deepEqual(unchanged.body.item_counts, { total: 3, queued: 1, running: 2, completed: 0, failed: 0, cancelled: 0 });

    temporal = await startTemporal({ dbFile: temporalFile, port: Number(temporal.address.split(':')[1]) });
    // The cancel asked again, as the 503 said, is answered once Temporal answers.
    const cancelled = await eventually(
      async () => {
        const answer = await client.post(`/v1/experiments/${experimentId}/cancel`, {});
        assert.equal(answer.status, 200, JSON.stringify(answer.body));
        return answer.body;
      },
      { timeoutMs: 60_000, intervalMs: 500, message: 'the cancel was not answered once Temporal was back' },
    );
    assert.equal(cancelled.status, 'cancelled');
    await eventually(
      async () => {
        assert.deepEqual(
          (await itemsOf(experimentId)).map((item) => [item.status, item.run_id === null]),
          [
            ['cancelled', false],
            ['cancelled', false],
            ['cancelled', true],
          ],
        );
        assert.deepEqual(
          (await runsOf(agentId)).map((run) => run.status),
          ['cancelled', 'cancelled'],
        );
      },
      { timeoutMs: 60_000, message: "the experiment's runs did not end cancelled" },
    );
    const ended = await client.get(`/v1/experiments/${experimentId}`);
    assert.equal(ended.body.status, 'cancelled');
    assert.deepEqual(ended.body.item_counts, { total: 3, queued: 0, running: 0, completed: 0, failed: 0, cancelled: 3 });
    release();
  });
});
