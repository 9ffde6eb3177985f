/**
 * A run's `invoke_agent` span leaves the process that ends the run only once that end is committed: an attempt
 * whose commit fails exports nothing, and the retry that then ends the run exports the one span. The API runs in
 * this process with an in-memory exporter; no worker polls its namespace, so the run is ended here by the
 * worker's own activity.
 */
import assert from 'node:assert/strict';
import { context, propagation, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, RandomIdGenerator, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { choosingIdGenerator } from '../../tracing/chosen-ids.js';
import { markTracing } from '../../tracing/context.js';
import { createRunActivities } from '../../workflows/runs/activities.js';
import { createAgent } from '../support/agents.js';
import { newTenant, startTestApi, workerDependenciesOf, type Tenant, type TestApi } from '../support/api.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import { isolatedNamespace } from '../support/services.js';

describe("a run's span", function () {
  this.timeout(60_000);
  const exporter = new InMemorySpanExporter();
  const provider = new NodeTracerProvider({
    idGenerator: choosingIdGenerator(new RandomIdGenerator()),
    spanProcessors: [new SimpleSpanProcessor(exporter)],
  });
  let api: TestApi;
  let openai: OpenAiServer;
  let tenant: Tenant;

  before(async () => {
    // Before the API starts, which traces its requests only when tracing is on.
    provider.register();
    markTracing(true);
    openai = await startOpenAiServer({ models: [] });
    api = await startTestApi({
      worker: false,
      namespace: await isolatedNamespace('run-span'),
      modelEnv: { OPENAI_BASE_URL: openai.url },
    });
    tenant = await newTenant(api, 'run-span');
  });

  after(async () => {
    markTracing(false);
    await api?.stop();
    await openai?.stop();
    await provider.shutdown();
    trace.disable();
    context.disable();
    propagation.disable();
  });

  it('is exported once the run has ended for good: not by an attempt whose commit failed, nor again by a retry', async () => {
    const agent = await createAgent(tenant.admin);
    const created = await tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Hello', wait: false });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const runId: string = created.body.id;
    const db = api.services.db;
    const { rows } = await db.query<{ span_id: string }>(`SELECT trace_context->>'span_id' AS span_id FROM runs WHERE id = $1`, [runId]);
    const runSpanId = rows[0]!.span_id;
    const runSpans = () => exporter.getFinishedSpans().filter((span) => span.name.startsWith('invoke_agent'));
    const endRun = createRunActivities(workerDependenciesOf(api.services)).endRun;

    // The first attempt's transaction fails at its commit, as a lost connection or a failover would fail it.
    await db.query(`CREATE FUNCTION fail_run_span_commit() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN RAISE EXCEPTION 'the commit failed'; END $$`);
    await db.query(`CREATE CONSTRAINT TRIGGER fail_run_span_commit AFTER UPDATE ON runs DEFERRABLE INITIALLY DEFERRED
      FOR EACH ROW WHEN (NEW.id = '${runId}') EXECUTE FUNCTION fail_run_span_commit()`);
    try {
      await assert.rejects(endRun({ runId, status: 'completed' }), /the commit failed/);
    } finally {
      await db.query('DROP TRIGGER fail_run_span_commit ON runs');
      await db.query('DROP FUNCTION fail_run_span_commit()');
    }
    assert.equal((await tenant.admin.get(`/v1/runs/${runId}`)).body.status, 'queued');
    assert.deepEqual(runSpans(), []);

    // The retry ends the run and exports its span; a retry after that commit finds the run ended.
    await endRun({ runId, status: 'completed' });
    await endRun({ runId, status: 'completed' });
    assert.equal((await tenant.admin.get(`/v1/runs/${runId}`)).body.status, 'completed');
    assert.deepEqual(
      runSpans().map((span) => [span.spanContext().spanId, span.attributes['agentplane.run.status']]),
      [[runSpanId, 'completed']],
    );
  });
});
