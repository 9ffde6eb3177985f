/**
 * Runs through failures: a worker killed mid-call, model providers and tools that fail for a while, for
 * good, or go away and come back. The worker is an `agentplane worker` process of its own, so that killing
 * it kills a real process; the API runs in this one.
 */
import assert from 'node:assert/strict';
import { freePort } from '../../cli/embedded.js';
import { newTenant, startTestApi, type Tenant, type TestApi } from '../support/api.js';
import { createAgent, runSatisfying } from '../support/agents.js';
import { eventually, withinDeadline } from '../support/eventually.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { startAnthropicServer } from '../support/model-servers/anthropic.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import type { ModelServer } from '../support/model-servers/scripted-server.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { isolatedNamespace, postgres } from '../support/services.js';
import { SseReader, type SseEvent } from '../support/sse.js';

type SentMessage = { role: string; content: unknown };

const lookupTool = (url: string) => ({
  type: 'http',
  name: 'lookup',
  url,
  method: 'POST',
  parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
});

/** The attempts announced for one step, in the order the event log has them. */
const attemptsOf = (events: SseEvent[], step: number) =>
  events.filter((e) => e.event === 'step.started' && e.data.step === step).map((e) => e.data.attempt);

describe('runs through failures', function () {
  this.timeout(180_000);
  let api: TestApi;
  let namespace: string;
  let tenant: Tenant;
  let openai: OpenAiServer;
  let anthropic: ModelServer;
  let tools: TestToolServer;
  let modelEnv: Record<string, string>;
  let worker: CliProcess;
  const workers: CliProcess[] = [];

  async function startWorker(): Promise<CliProcess> {
    const started = runCli('worker', {
      DATABASE_URL: (await postgres()).url,
      TEMPORAL_ADDRESS: api.temporalAddress,
      TEMPORAL_NAMESPACE: namespace,
      AGENTPLANE_BLOB_DIR: api.blobDir,
      AGENTPLANE_TOOLS_ALLOW_PRIVATE: 'true',
      ...modelEnv,
    });
    workers.push(started);
    return started;
  }

  before(async () => {
    namespace = await isolatedNamespace('runs-durability');
    openai = await startOpenAiServer({ models: [] });
    anthropic = await startAnthropicServer();
    tools = await startToolServer();
    modelEnv = { OPENAI_BASE_URL: openai.url, ANTHROPIC_BASE_URL: anthropic.url, ANTHROPIC_API_KEY: 'sk-ant-test' };
    api = await startTestApi({ worker: false, namespace, modelEnv });
    tenant = await newTenant(api, 'runs-durability');
    worker = await startWorker();
  });

  after(async () => {
    for (const started of workers) started.child.kill('SIGKILL');
    await api?.stop();
    await Promise.all([openai?.stop(), anthropic?.stop(), tools?.close()]);
  });

  async function startRun(agentId: string, input: string): Promise<string> {
    const created = await tenant.admin.post(`/v1/agents/${agentId}/run`, { input, wait: false });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    return created.body.id;
  }

  /** The run's event log from its start (or after `lastEventId`), live, through `through` (this suite's API by default). */
  function followEvents(
    runId: string,
    { lastEventId, through = api }: { lastEventId?: string; through?: TestApi } = {},
  ): Promise<SseReader> {
    return SseReader.open(`${through.url}/v1/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${tenant.admin.key}`, ...(lastEventId ? { 'last-event-id': lastEventId } : {}) },
    });
  }

  /** The run once it has ended, with its whole event log. */
  async function ended(runId: string): Promise<{ run: any; events: SseEvent[] }> {
    const run = await runSatisfying(
      tenant.admin,
      runId,
      (r) => r.status !== 'queued' && r.status !== 'in_progress',
      `run ${runId} did not end: ${worker.output()}`,
      90_000,
    );
    const log = await followEvents(runId);
    await log.done;
    return { run, events: log.events };
  }

  /** The tool results the model was shown in the server's request number `index` (from 0). */
  function toolResultsSent(server: ModelServer, index: number): unknown[] {
    const sent = server.requests[index] as { messages: SentMessage[] };
    return sent.messages.filter((m) => m.role === 'tool').map((m) => m.content);
  }

  describe('a worker killed mid-run', () => {
    it('is replaced by a worker that finishes the run; the completed model call and the tool call are neither redone nor counted twice', async () => {
      const agent = await createAgent(tenant.admin, { tools: [lookupTool(`${tools.url}/echo`)] });
      const seen = openai.requests.length;
      const echoes = tools.received.filter((path) => path === '/echo').length;
      const abortedBefore = openai.abortedCount;
      openai.enqueue({ tool_calls: [{ name: 'lookup', arguments: '{"q":"tides"}' }], usage: { input: 1000, output: 100 } });
      openai.enqueue({ text: ['High tide '], hang: true });
      const runId = await startRun(agent.id, 'When is high tide?');
      const stream = await followEvents(runId);

      // The second model call is streaming its reply when the worker dies.
      await stream.next((e) => e.event === 'output_text.delta' && e.data.step === 2, 60_000);
      worker.child.kill('SIGKILL');
      assert.equal((await worker.exited).signal, 'SIGKILL');
      await eventually(() => assert.equal(openai.abortedCount, abortedBefore + 1), { message: 'the held model request was not closed' });

      openai.enqueue({ text: ['High tide is at noon.'], usage: { input: 2000, output: 200 } });
      worker = await startWorker();
      await stream.next((e) => e.event === 'run.completed', 90_000);
      const { run, events } = await ended(runId);

      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(run.output.text, 'High tide is at noon.');
      assert.deepEqual(
        run.steps.map((s: { type: string; status: string }) => [s.type, s.status]),
        [
          ['model_call', 'completed'],
          ['tool_call', 'completed'],
          ['model_call', 'completed'],
        ],
      );
      // gpt-4.1-mini: $0.40 in and $1.60 out per million tokens.
      assert.deepEqual(run.steps[0].usage, { input_tokens: 1000, output_tokens: 100, cached_tokens: 0 });
      assert.equal(run.steps[0].cost, '0.00056');
      assert.deepEqual(run.steps[2].usage, { input_tokens: 2000, output_tokens: 200, cached_tokens: 0 });
      assert.equal(run.steps[2].cost, '0.00112');
      assert.deepEqual(run.usage, { input_tokens: 3000, output_tokens: 300, cached_tokens: 0 });
      assert.equal(run.cost, '0.00168');

      assert.equal(openai.requests.length - seen, 3, 'the first model call was not asked again');
      assert.equal(tools.received.filter((path) => path === '/echo').length - echoes, 1, 'the tool was called once');
      assert.deepEqual(attemptsOf(events, 0), [1]);
      assert.deepEqual(attemptsOf(events, 2), [1, 2]);
      const completed = events.filter((e) => e.event === 'step.completed').map((e) => e.data.step);
      assert.deepEqual(completed, [0, 1, 2]);
    });
  });

  describe('an approved tool call and a worker killed around it', () => {
    /** A run of an agent whose `pay` tool (at `path`) needs approval, waiting for it: the run, and the approval's id. */
    async function waitingPayment(path: string): Promise<{ runId: string; approvalId: string; key: string }> {
      const agent = await createAgent(tenant.admin, {
        tools: [{ ...lookupTool(`${tools.url}${path}`), name: 'pay', approval: { mode: 'always' } }],
      });
      openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"q":"invoice 7"}' }] });
      openai.enqueue({ text: ['Paid.'] });
      const created = await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Pay invoice 7.' });
      assert.equal(created.body.status, 'requires_action', JSON.stringify(created.body));
      const [approval] = (await tenant.admin.get(`/v1/approvals?run_id=${created.body.id}`)).body.data;
      return { runId: created.body.id, approvalId: approval.id, key: `${created.body.id}-${approval.step}` };
    }

    const requestsOf = (key: string) => tools.keys.filter((sent) => sent === key).length;

    /** The run, completed, with one tool step, completed, for the call. */
    async function completedOnce(runId: string): Promise<void> {
      const { run } = await ended(runId);
      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.deepEqual(
        run.steps.map((s: { type: string; status: string }) => [s.type, s.status]),
        [
          ['model_call', 'completed'],
          ['tool_call', 'completed'],
          ['model_call', 'completed'],
        ],
      );
    }

    async function killWorker(): Promise<void> {
      worker.child.kill('SIGKILL');
      assert.equal((await worker.exited).signal, 'SIGKILL');
    }

    it('decided while no worker runs: the call is sent once, when a worker is back', async () => {
      const { runId, approvalId, key } = await waitingPayment('/echo');
      await killWorker();
      assert.equal((await tenant.admin.post(`/v1/approvals/${approvalId}`, { decision: 'approve' })).status, 200);
      worker = await startWorker();
      await completedOnce(runId);
      assert.equal(requestsOf(key), 1);
    });

    it('killed while the call is in flight: it is sent again with the same Idempotency-Key, and the run records it once', async () => {
      const { runId, approvalId, key } = await waitingPayment('/held');
      assert.equal((await tenant.admin.post(`/v1/approvals/${approvalId}`, { decision: 'approve' })).status, 200);
      await eventually(() => assert.equal(requestsOf(key), 1), { timeoutMs: 30_000, message: 'the approved call never reached the tool' });
      // The replacement starts first, so that it is up by the time the killed worker's attempt times out.
      const replacement = await startWorker();
      await killWorker();
      worker = replacement;
      await eventually(() => assert.equal(requestsOf(key), 2), { timeoutMs: 60_000, message: 'the call was not sent again' });
      tools.releaseHeld();
      await completedOnce(runId);
      assert.equal(requestsOf(key), 2, 'every request for the call carries its key, and no other call carries it');
    });

    it('killed after the tool answered and before the answer was recorded: it is sent again with the same Idempotency-Key, and recorded once', async () => {
      const { db } = await postgres();
      const { runId, approvalId, key } = await waitingPayment('/held');
      assert.equal((await tenant.admin.post(`/v1/approvals/${approvalId}`, { decision: 'approve' })).status, 200);
      await eventually(() => assert.equal(requestsOf(key), 1), { timeoutMs: 30_000, message: 'the approved call never reached the tool' });
      // The run's row held: recording the answer (its event) waits, after the tool has answered.
      const blocker = await db.connect();
      try {
        await blocker.query('BEGIN');
        await blocker.query('SELECT 1 FROM runs WHERE id = $1 FOR UPDATE', [runId]);
        tools.releaseHeld();
        await eventually(
          async () => {
            const { rows } = await db.query(
              `SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE '%UPDATE runs SET event_seq%'`,
            );
            assert.equal(rows[0]?.waiting, 1);
          },
          { timeoutMs: 30_000, message: "the tool's answer was never being recorded" },
        );
        const replacement = await startWorker();
        await killWorker();
        worker = replacement;
        await blocker.query('ROLLBACK');
      } finally {
        blocker.release();
      }
      await eventually(() => assert.equal(requestsOf(key), 2), { timeoutMs: 60_000, message: 'the call was not sent again' });
      tools.releaseHeld();
      await completedOnce(runId);
      assert.equal(requestsOf(key), 2);
    });
  });

  describe('a model provider that fails', () => {
    it('is asked again after a 429 (no sooner than its Retry-After) and after 503s, and the run completes with the call that answered counted once', async () => {
      const agent = await createAgent(tenant.admin);
      const seen = openai.requests.length;
      openai.enqueue({ status: 429, retry_after: 2 });
      openai.enqueue({ status: 503 });
      openai.enqueue({ status: 503 });
      openai.enqueue({ text: ['Back again.'], usage: { input: 1000, output: 100 } });
      const { run, events } = await ended(await startRun(agent.id, 'Are you there?'));

      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(run.output.text, 'Back again.');
      assert.equal(openai.requests.length - seen, 4);
      const [rateLimited, next] = openai.arrivals.slice(seen);
      assert.ok(next! - rateLimited! >= 2_000, `asked again ${next! - rateLimited!} ms after a 429 with Retry-After: 2`);
      assert.deepEqual(
        run.steps.map((s: { type: string; status: string }) => [s.type, s.status]),
        [['model_call', 'completed']],
      );
      assert.deepEqual(attemptsOf(events, 0), [1, 2, 3, 4]);
      assert.deepEqual(run.usage, { input_tokens: 1000, output_tokens: 100, cached_tokens: 0 });
      assert.equal(run.cost, '0.00056');
    });

    it('is asked again after Anthropic answers 529 overloaded, and the run completes', async () => {
      const agent = await createAgent(tenant.admin, { model: 'claude-haiku-4-5' });
      const seen = anthropic.requests.length;
      anthropic.enqueue({ status: 529 });
      anthropic.enqueue({ text: ['Less busy now.'], usage: { input: 1000, output: 100 } });
      const { run } = await ended(await startRun(agent.id, 'Busy?'));

      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(run.output.text, 'Less busy now.');
      assert.equal(anthropic.requests.length - seen, 2);
      assert.deepEqual(run.usage, { input_tokens: 1000, output_tokens: 100, cached_tokens: 0 });
    });

    it('is not asked again after a 400: one request, and the run fails with model_rejected', async () => {
      const agent = await createAgent(tenant.admin);
      const seen = openai.requests.length;
      openai.enqueue({ status: 400 });
      openai.setFallback({ text: ['A second request was made.'] });
      try {
        const { run, events } = await ended(await startRun(agent.id, 'Something the provider refuses.'));

        assert.equal(run.status, 'failed');
        assert.equal(run.error.code, 'model_rejected');
        assert.match(run.error.message, /400/);
        assert.equal(openai.requests.length - seen, 1);
        assert.deepEqual(
          run.steps.map((s: { type: string; status: string }) => [s.type, s.status]),
          [['model_call', 'failed']],
        );
        assert.equal(run.steps[0].error.code, 'model_rejected');
        assert.deepEqual(attemptsOf(events, 0), [1]);
        assert.deepEqual(run.usage, { input_tokens: 0, output_tokens: 0, cached_tokens: 0 });
      } finally {
        openai.setFallback(null);
      }
    });

    it('that is down when the call is made, and comes back on the same address, answers a later attempt and the run completes', async () => {
      const agent = await createAgent(tenant.admin);
      const port = Number(new URL(openai.url).port);
      await openai.stop();
      const runId = await startRun(agent.id, 'Anyone home?');
      const stream = await followEvents(runId);
      await stream.next((e) => e.event === 'step.started' && e.data.attempt === 2, 60_000);

      openai = await startOpenAiServer({ models: [], port });
      openai.enqueue({ text: ['Home again.'], usage: { input: 1000, output: 100 } });
      const { run } = await ended(runId);

      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(run.output.text, 'Home again.');
      assert.equal(openai.requests.length, 1);
      assert.deepEqual(run.usage, { input_tokens: 1000, output_tokens: 100, cached_tokens: 0 });
    });
  });

  describe('a tool that fails', () => {
    it('answering 503 is called again, and the model is given the answer it then sends', async () => {
      const agent = await createAgent(tenant.admin, { tools: [lookupTool(`${tools.url}/unavailable/2`)] });
      const seen = openai.requests.length;
      openai.enqueue({ tool_calls: [{ name: 'lookup', arguments: '{"q":"tides"}' }], usage: { input: 100, output: 10 } });
      openai.enqueue({ text: ['Found it.'], usage: { input: 200, output: 20 } });
      const { run, events } = await ended(await startRun(agent.id, 'Look up the tides.'));

      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(tools.received.filter((path) => path === '/unavailable/2').length, 3);
      assert.equal(run.steps[1].is_error, false);
      assert.match(run.steps[1].output, /tides/);
      assert.deepEqual(attemptsOf(events, 1), [1, 2, 3]);
      const [result] = toolResultsSent(openai, seen + 1);
      assert.match(String(result), /tides/);
      assert.doesNotMatch(String(result), /unavailable on purpose/);
    });

    it('answering 404 is not called again, and the model is shown the error', async () => {
      const agent = await createAgent(tenant.admin, { tools: [lookupTool(`${tools.url}/status/404`)] });
      const seen = openai.requests.length;
      const before = tools.received.filter((path) => path === '/status/404').length;
      openai.enqueue({ tool_calls: [{ name: 'lookup', arguments: '{"q":"tides"}' }], usage: { input: 100, output: 10 } });
      openai.enqueue({ text: ['Not found, sorry.'], usage: { input: 200, output: 20 } });
      const { run, events } = await ended(await startRun(agent.id, 'Look up the tides.'));

      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(tools.received.filter((path) => path === '/status/404').length - before, 1);
      assert.equal(run.steps[1].is_error, true);
      assert.equal(run.steps[1].output, 'HTTP 404: status 404 on purpose');
      assert.deepEqual(attemptsOf(events, 1), [1]);
      assert.deepEqual(toolResultsSent(openai, seen + 1), ['HTTP 404: status 404 on purpose']);
    });

    it('down through every attempt is given up on: the model is shown why, and the run goes on', async () => {
      const nothingListens = await freePort();
      const agent = await createAgent(tenant.admin, { tools: [lookupTool(`http://127.0.0.1:${nothingListens}/lookup`)] });
      const seen = openai.requests.length;
      openai.enqueue({ tool_calls: [{ name: 'lookup', arguments: '{"q":"tides"}' }], usage: { input: 100, output: 10 } });
      openai.enqueue({ text: ['The lookup is down.'], usage: { input: 200, output: 20 } });
      const { run, events } = await ended(await startRun(agent.id, 'Look up the tides.'));

      assert.equal(run.status, 'completed', JSON.stringify(run.error));
      assert.equal(run.output.text, 'The lookup is down.');
      assert.equal(run.steps[1].status, 'completed');
      assert.equal(run.steps[1].is_error, true);
      assert.match(run.steps[1].output, /could not be reached/);
      // Four attempts (the tool calls' retry policy), and no other announced when the tool is given up on.
      assert.deepEqual(attemptsOf(events, 1), [1, 2, 3, 4]);
      const [result] = toolResultsSent(openai, seen + 1);
      assert.match(String(result), /could not be reached/);
      assert.deepEqual(run.usage, { input_tokens: 300, output_tokens: 30, cached_tokens: 0 });
    });
  });

  describe('an API that stops', () => {
    it('ends the event streams of runs still going, so that it stops, and the client resumes the stream through another API', async () => {
      const leaving = await startTestApi({ worker: false, namespace, modelEnv });
      let stopping: Promise<void> | undefined;
      let runId: string | undefined;
      try {
        const agent = await createAgent(tenant.admin);
        openai.enqueue({ text: ['Still ', 'going'], hang: true });
        runId = await startRun(agent.id, 'Keep going.');
        const stream = await followEvents(runId, { through: leaving });
        await stream.next((e) => e.event === 'output_text.delta', 60_000);

        stopping = leaving.stop();
        // It stops at once.
        await withinDeadline(stopping, 30_000, 'the API did not stop while a client followed a run still going');
        await stream.done;

        const cancelled = await tenant.admin.post(`/v1/runs/${runId}/cancel`, {});
        assert.equal(cancelled.body.status, 'cancelled', JSON.stringify(cancelled.body));
        const resumed = await followEvents(runId, { lastEventId: stream.events.at(-1)!.id! });
        await resumed.done;
        const events = [...stream.events, ...resumed.events];
        assert.deepEqual(
          events.map((e) => Number(e.id)),
          events.map((_, i) => i + 1),
          'every event once, in order',
        );
        assert.equal(events.at(-1)!.event, 'run.cancelled');
      } finally {
        // Ends the run (again, answered 409, when the test got that far), and with it any stream still open.
        if (runId) await tenant.admin.post(`/v1/runs/${runId}/cancel`, {});
        await (stopping ?? leaving.stop());
      }
    });
  });
});
