/**
 * Trace export, read back from a real OTLP backend (Jaeger v2): an `agentplane api` and two `agentplane worker`
 * processes with OTEL_EXPORTER_OTLP_ENDPOINT set run an agent with an HTTP tool, a network and an upload; each
 * request is one trace across the processes, its spans named and attributed by the GenAI conventions, with no
 * prompt or output text in them unless the operator opts in.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../cli/embedded.js';
import { newSecret } from '../../records/api-keys.js';
import { createDb } from '../../records/db.js';
import { migrate } from '../../records/migrate.js';
import { newTenant, type Tenant } from '../support/api.js';
import { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { startJaeger, tagOf, traceById, tracesOf, type JaegerServer, type JaegerSpan, type JaegerTrace } from '../support/jaeger.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import { ordering, promptedReplies } from '../support/model-servers/prompted.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { isolatedNamespace, postgres, temporal, testLog } from '../support/services.js';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.js';

// Words of the prompt that must not reach a span unless content capture is on.
const SECRET = 'the-prompt-says-swordfish';

const parentOf = (span: JaegerSpan) => span.references.find((ref) => ref.refType === 'CHILD_OF')?.spanID;
const named = (trace: JaegerTrace, pattern: RegExp) => trace.spans.filter((span) => pattern.test(span.operationName));
const serviceOf = (trace: JaegerTrace, span: JaegerSpan) => trace.processes[span.processID]?.serviceName;
const eventsOf = (span: JaegerSpan, name: string) =>
  span.logs.filter((log) => log.fields.some((f) => f.key === 'event' && f.value === name));
const fieldOf = (log: JaegerSpan['logs'][number], key: string) => log.fields.find((f) => f.key === key)?.value;

describe('trace export over OTLP', function () {
  this.timeout(120_000);
  const processes: CliProcess[] = [];
  let jaeger: JaegerServer;
  let openai: OpenAiServer;
  let tools: TestToolServer;
  let receiver: WebhookReceiver;
  let tenant: Tenant;
  let blobDir: string;
  let agentId: string;

  /** The trace with `id` once it holds spans matching every pattern. */
  const traceHolding = (id: string, ...patterns: RegExp[]) =>
    eventually(
      async () => {
        const trace = await traceById(jaeger, id);
        assert.ok(trace, `no trace ${id} yet`);
        for (const pattern of patterns) assert.ok(named(trace, pattern).length > 0, `no ${pattern} span yet`);
        return trace;
      },
      { timeoutMs: 20_000, intervalMs: 200, message: 'the trace did not arrive whole' },
    );

  before(async () => {
    const [pg, tp] = await Promise.all([postgres(), temporal()]);
    jaeger = await startJaeger();
    const admin = createDb(pg.url, { max: 1, log: testLog });
    await admin.query('DROP DATABASE IF EXISTS agentplane_tracing');
    await admin.query('CREATE DATABASE agentplane_tracing');
    await admin.end();
    const databaseUrl = pg.url.replace(/\/agentplane$/, '/agentplane_tracing');
    const db = createDb(databaseUrl, { max: 1, log: testLog });
    await migrate(db).finally(() => db.end());
    openai = await startOpenAiServer({ models: [] });
    openai.setFallback(promptedReplies({ text: ['Done.'], usage: { input: 12, output: 3 } }));
    tools = await startToolServer();
    receiver = await startWebhookReceiver();
    blobDir = await mkdtemp(join(tmpdir(), 'agentplane-tracing-'));
    const port = await freePort();
    const env = {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: tp.address,
      TEMPORAL_NAMESPACE: await isolatedNamespace('tracing'),
      AGENTPLANE_BLOB_DIR: blobDir,
      AGENTPLANE_ADMIN_KEY: newSecret(),
      OPENAI_BASE_URL: openai.url,
      AGENTPLANE_TOOLS_ALLOW_PRIVATE: 'true',
      AGENTPLANE_WEBHOOK_ALLOW_PRIVATE: 'true',
      OTEL_EXPORTER_OTLP_ENDPOINT: jaeger.otlpEndpoint,
      // Batches leave every 100 ms, so that the test reads them back soon.
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    const api = runCli('api', { ...env, PORT: String(port), HOST: '127.0.0.1' });
    processes.push(api, runCli('worker', env), runCli('worker', env));
    await eventually(
      async () => {
        assert.equal(api.child.exitCode, null, api.output());
        assert.equal((await fetch(`http://127.0.0.1:${port}/readyz`)).status, 200);
      },
      { timeoutMs: 60_000, message: 'the API did not become ready' },
    );
    const root = new ApiClient(`http://127.0.0.1:${port}`, env.AGENTPLANE_ADMIN_KEY);
    tenant = await newTenant({ url: root.baseUrl, root }, 'tracing');
    const agent = await tenant.admin.post('/v1/agents', {
      name: 'tracer',
      model: 'gpt-4.1-mini',
      instructions: 'Use your tool.',
      // Unavailable at the first attempt: the tool call is retried, in the same trace.
      tools: [{ type: 'http', name: 'probe', url: `${tools.url}/unavailable/1` }],
    });
    assert.equal(agent.status, 201, JSON.stringify(agent.body));
    agentId = agent.body.id;
    const hook = await tenant.admin.post('/v1/webhooks', { url: `${receiver.url}/hook`, event_types: ['run.completed', 'file.processed'] });
    assert.equal(hook.status, 201, JSON.stringify(hook.body));
  });

  after(async () => {
    for (const process of processes) {
      if (process.child.exitCode === null && process.child.signalCode === null) process.child.kill('SIGTERM');
      await process.exited;
    }
    await tools?.close();
    await receiver?.close();
    await openai?.stop();
    await jaeger?.stop();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  it("continues the caller's traceparent through the run, its model and tool calls and its webhook, attributed by the GenAI conventions", async () => {
    const traceId = randomBytes(16).toString('hex');
    const callerSpan = randomBytes(8).toString('hex');
    const run = await tenant.admin.post(
      `/v1/agents/${agentId}/run`,
      { input: ordering({ call: { name: 'probe', arguments: { note: SECRET } } }) },
      { traceparent: `00-${traceId}-${callerSpan}-01` },
    );
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal(run.body.status, 'completed');

    const trace = await traceHolding(
      traceId,
      /^POST \/v1\/agents\/:id\/run$/,
      /^invoke_agent tracer$/,
      /^execute_tool probe$/,
      /^deliver_webhook run\.completed$/,
    );
    const [request] = named(trace, /^POST \/v1\/agents\/:id\/run$/);
    assert.equal(parentOf(request!), callerSpan);
    assert.equal(serviceOf(trace, request!), 'agentplane-api');
    assert.equal(tagOf(request!, 'http.response.status_code'), 200);

    const [agentSpan] = named(trace, /^invoke_agent /);
    assert.equal(parentOf(agentSpan!), request!.spanID);
    assert.equal(tagOf(agentSpan!, 'gen_ai.operation.name'), 'invoke_agent');
    assert.equal(tagOf(agentSpan!, 'gen_ai.agent.id'), agentId);
    assert.equal(tagOf(agentSpan!, 'gen_ai.agent.name'), 'tracer');
    assert.equal(tagOf(agentSpan!, 'gen_ai.request.model'), 'gpt-4.1-mini');
    assert.equal(tagOf(agentSpan!, 'gen_ai.usage.input_tokens'), run.body.usage.input_tokens);
    assert.equal(tagOf(agentSpan!, 'gen_ai.usage.output_tokens'), run.body.usage.output_tokens);
    assert.equal(tagOf(agentSpan!, 'agentplane.cost.usd'), Number(run.body.cost));
    assert.ok(Number(tagOf(agentSpan!, 'agentplane.cost.usd')) > 0);
    assert.equal(tagOf(agentSpan!, 'agentplane.run.id'), run.body.id);
    // The run lasts from its creation to its end, across the API and the workers.
    assert.ok(agentSpan!.startTime >= request!.startTime);
    const evaluations = eventsOf(agentSpan!, 'gen_ai.evaluation.result');
    assert.ok(evaluations.length > 0, 'no quality score on the run span');
    for (const evaluation of evaluations) {
      assert.equal(typeof fieldOf(evaluation, 'gen_ai.evaluation.name'), 'string');
      assert.equal(typeof fieldOf(evaluation, 'gen_ai.evaluation.score.value'), 'number');
    }

    const chats = named(trace, /^chat /);
    assert.equal(chats.length, 2, 'one chat span per model call');
    for (const chat of chats) {
      assert.equal(parentOf(chat), agentSpan!.spanID);
      assert.equal(serviceOf(trace, chat), 'agentplane-worker');
      assert.equal(tagOf(chat, 'gen_ai.operation.name'), 'chat');
      assert.equal(tagOf(chat, 'gen_ai.provider.name'), 'openai');
      assert.equal(chat.operationName, `chat ${tagOf(chat, 'gen_ai.request.model')}`);
      assert.equal(typeof tagOf(chat, 'gen_ai.response.model'), 'string');
      assert.equal(tagOf(chat, 'gen_ai.usage.input_tokens'), 20);
      assert.ok(Number(tagOf(chat, 'agentplane.cost.usd')) > 0);
    }
    assert.deepEqual(chats.map((chat) => tagOf(chat, 'gen_ai.usage.output_tokens')).sort(), [10, 2]);

    // Two attempts at the one tool call, each a span of the run's; each request carried its own.
    const attempts = named(trace, /^execute_tool /).sort((a, b) => a.startTime - b.startTime);
    assert.equal(attempts.length, 2, 'one execute_tool span per attempt');
    const callId = run.body.steps.find((step: { type: string }) => step.type === 'tool_call')?.tool_call?.id;
    assert.ok(callId);
    for (const attempt of attempts) {
      assert.equal(parentOf(attempt), agentSpan!.spanID);
      assert.equal(tagOf(attempt, 'gen_ai.operation.name'), 'execute_tool');
      assert.equal(tagOf(attempt, 'gen_ai.tool.name'), 'probe');
      assert.equal(tagOf(attempt, 'gen_ai.tool.call.id'), callId);
    }
    assert.equal(tagOf(attempts[0]!, 'otel.status_code'), 'ERROR');
    assert.deepEqual(
      tools.traceparents,
      attempts.map((attempt) => `00-${traceId}-${attempt.spanID}-01`),
    );

    const [delivery] = named(trace, /^deliver_webhook run\.completed$/);
    assert.equal(parentOf(delivery!), agentSpan!.spanID);
    assert.equal(tagOf(delivery!, 'http.response.status_code'), 204);
    const received = receiver.to('/hook').find((hook) => JSON.parse(hook.body).data.id === run.body.id);
    assert.equal(received?.headers.traceparent, `00-${traceId}-${delivery!.spanID}-01`);

    // The prompt, the tool's arguments and the answer stay out of the spans by default.
    const everything = JSON.stringify(trace);
    assert.ok(!everything.includes(SECRET), 'the prompt reached a span');
    assert.ok(!everything.includes('after tools'), 'the output reached a span');
    assert.ok(!everything.includes('gen_ai.input.messages'));
  });

  it("traces a network run as the network's invoke_agent span with a child invoke_agent span per hop", async () => {
    const members: string[] = [];
    for (const name of ['planner', 'writer']) {
      const member = await tenant.admin.post('/v1/agents', { name, model: 'gpt-4.1-mini', instructions: 'Answer.' });
      members.push(member.body.id);
    }
    const network = await tenant.admin.post('/v1/networks', { name: 'team', members, router: { type: 'sequential' } });
    assert.equal(network.status, 201, JSON.stringify(network.body));
    const run = await tenant.admin.post(`/v1/networks/${network.body.id}/run`, { input: 'Plan the trip.' });
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal(run.body.status, 'completed');

    // No traceparent came: the API's span is the root of the trace.
    const trace = await eventually(
      async () => {
        const found = (await tracesOf(jaeger, 'agentplane-worker', 'invoke_agent team')).find((t) =>
          t.spans.some((span) => tagOf(span, 'agentplane.run.id') === run.body.id),
        );
        assert.ok(found, 'no trace of the network run yet');
        assert.equal(named(found, /^invoke_agent (planner|writer)$/).length, 2, 'not every hop yet');
        assert.equal(named(found, /^POST \/v1\/networks\/:id\/run$/).length, 1, 'no API span yet');
        return found;
      },
      { timeoutMs: 20_000, intervalMs: 200, message: 'the network trace did not arrive' },
    );
    const [request] = named(trace, /^POST \/v1\/networks\/:id\/run$/);
    assert.equal(parentOf(request!), undefined);
    const [networkSpan] = named(trace, /^invoke_agent team$/);
    assert.equal(parentOf(networkSpan!), request!.spanID);
    assert.equal(tagOf(networkSpan!, 'gen_ai.agent.id'), network.body.id);
    const hops = named(trace, /^invoke_agent (planner|writer)$/);
    assert.deepEqual(hops.map((hop) => tagOf(hop, 'agentplane.hop.index')).sort(), [0, 1]);
    for (const hop of hops) {
      assert.equal(parentOf(hop), networkSpan!.spanID);
      assert.ok(members.includes(tagOf(hop, 'gen_ai.agent.id') as string));
      const chats = trace.spans.filter((span) => /^chat /.test(span.operationName) && parentOf(span) === hop.spanID);
      assert.equal(chats.length, 1, `one chat span under hop ${hop.operationName}`);
    }
  });

  it('traces an upload through its extraction stages to its file.processed webhook', async () => {
    const upload = await tenant.admin.upload({ file: { data: Buffer.from('alpha\fbeta'), filename: 'notes.txt' }, purpose: 'attachment' });
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    const file = await tenant.admin.settledFile(upload.body.id);
    assert.equal(file.status, 'processed');
    const trace = await eventually(
      async () => {
        const found = (await tracesOf(jaeger, 'agentplane-worker', 'extract_file content')).find((t) =>
          t.spans.some((span) => tagOf(span, 'agentplane.file.id') === file.id),
        );
        assert.ok(found, 'no trace of the upload yet');
        assert.ok(named(found, /^deliver_webhook file\.processed$/).length > 0, 'no delivery yet');
        assert.ok(named(found, /^POST \/v1\/files$/).length > 0, 'no API span yet');
        return found;
      },
      { timeoutMs: 20_000, intervalMs: 200, message: 'the upload trace did not arrive' },
    );
    const [request] = named(trace, /^POST \/v1\/files$/);
    const stages = named(trace, /^extract_file /);
    assert.deepEqual(stages.map((stage) => tagOf(stage, 'agentplane.extraction.stage')).sort(), ['complete', 'content']);
    for (const stage of stages) assert.equal(parentOf(stage), request!.spanID);
    const [delivery] = named(trace, /^deliver_webhook file\.processed$/);
    assert.equal(parentOf(delivery!), stages.find((stage) => tagOf(stage, 'agentplane.extraction.stage') === 'complete')!.spanID);
    const received = receiver.to('/hook').find((hook) => JSON.parse(hook.body).data.id === file.id);
    assert.equal(received?.headers.traceparent, `00-${trace.traceID}-${delivery!.spanID}-01`);
  });
});
