/**
 * `agentplane echo-model` as a user runs it, with the platform pointed at it through OPENAI_BASE_URL:
 * runs through the real API, Temporal, worker and PostgreSQL answer with the user's words.
 */
import assert from 'node:assert/strict';
import { freePort } from '../../cli/embedded.js';
import { newTenant, startTestApi, type Tenant, type TestApi } from '../support/api.js';
import { createAgent } from '../support/agents.js';
import { eventually } from '../support/eventually.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { isolatedNamespace } from '../support/services.js';
import { SseReader } from '../support/sse.js';

/** Starts `agentplane echo-model` with `args`; resolves with the process and the base URL it printed. */
async function startEchoModel(args: string[]): Promise<{ process: CliProcess; url: string }> {
  const started = runCli('echo-model', {}, { args });
  const url = await eventually(
    () => {
      if (started.child.exitCode !== null) throw new Error(`echo-model exited early:\n${started.output()}`);
      const match = /serving at (http:\/\/\S+\/v1);/.exec(started.output());
      assert.ok(match, 'no startup line yet');
      return match[1]!;
    },
    { timeoutMs: 60_000, intervalMs: 100, message: 'agentplane echo-model did not start' },
  );
  return { process: started, url };
}

describe('agentplane echo-model', function () {
  this.timeout(120_000);
  let echo: { process: CliProcess; url: string };
  let api: TestApi;
  let tenant: Tenant;

  before(async () => {
    const port = await freePort();
    // Slow enough that a run is still streaming when it is cancelled, fast enough for the other tests.
    echo = await startEchoModel(['--port', String(port), '--word-ms', '300']);
    assert.equal(echo.url, `http://127.0.0.1:${port}/v1`);
    api = await startTestApi({ namespace: await isolatedNamespace('echo-model'), modelEnv: { OPENAI_BASE_URL: echo.url } });
    tenant = await newTenant(api, 'echo-model');
  });

  after(async () => {
    await api?.stop();
    if (echo) {
      echo.process.child.kill('SIGINT');
      const { code } = await echo.process.exited;
      assert.equal(code, 0, echo.process.output());
    }
  });

  it('is listed among the platform models as "echo"', async () => {
    const models = await tenant.admin.get('/v1/models');
    assert.equal(models.status, 200);
    assert.ok(
      models.body.data.some((m: { id: string }) => m.id === 'echo'),
      JSON.stringify(models.body),
    );
  });

  it('completes a run with the last user message echoed back, at no cost', async () => {
    const agent = await createAgent(tenant.admin, { model: 'echo' });
    const run = await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Hello from the echo model.' });
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal(run.body.status, 'completed');
    assert.equal(run.body.output.text, 'Hello from the echo model.');
    assert.equal(run.body.resolved_model, 'echo');
    assert.deepEqual(run.body.usage, { input_tokens: 7, output_tokens: 5, cached_tokens: 0 });
    assert.equal(run.body.cost, '0');
  });

  it('streams the echo as text deltas that add up to the message', async () => {
    const agent = await createAgent(tenant.admin, { model: 'echo' });
    const stream = await SseReader.open(`${api.url}/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.admin.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'one two three', stream: true }),
    });
    await stream.done;
    const text = stream.events
      .filter((e) => e.event === 'output_text.delta')
      .map((e) => e.data.delta)
      .join('');
    assert.equal(text, 'one two three');
    assert.equal(stream.events.at(-1)!.event, 'run.completed');
  });

  it('stops streaming when the run is cancelled mid-way, and the run ends cancelled', async () => {
    const agent = await createAgent(tenant.admin, { model: 'echo' });
    const words = Array.from({ length: 100 }, (_, i) => `word${i}`).join(' ');
    const started = await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: words, wait: false });
    assert.equal(started.status, 202);
    const stream = await SseReader.open(`${api.url}/v1/runs/${started.body.id}/events`, {
      headers: { authorization: `Bearer ${tenant.admin.key}` },
    });
    await stream.next((e) => e.event === 'output_text.delta');
    const cancelled = await tenant.admin.post(`/v1/runs/${started.body.id}/cancel`, {});
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.status, 'cancelled');
    await eventually(() => assert.match(echo.process.output(), /stream closed by the client after \d+ of 100 words/), {
      message: 'the echo model did not see its stream closed',
    });
  });
});
