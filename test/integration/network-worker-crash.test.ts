import assert from 'node:assert/strict';
import { newTenant, startTestApi, type Tenant, type TestApi } from '../support/api.js';
import { isolatedNamespace, postgres } from '../support/services.js';
import { eventually } from '../support/eventually.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import { createAgent, runSatisfying } from '../support/agents.js';

describe('a worker killed mid-network', function () {
  this.timeout(180_000);
  let api: TestApi;
  let openai: OpenAiServer;
  let tenant: Tenant;
  let namespace: string;
  const workers: CliProcess[] = [];

  before(async () => {
    namespace = await isolatedNamespace('network-worker-crash');
    openai = await startOpenAiServer({ models: [] });
    api = await startTestApi({ worker: false, namespace, modelEnv: { OPENAI_BASE_URL: openai.url } });
    tenant = await newTenant(api, 'network-worker-crash');
  });

  after(async () => {
    for (const worker of workers) worker.child.kill('SIGKILL');
    await api?.stop();
    await openai?.stop();
  });

  async function startWorker(): Promise<CliProcess> {
    const worker = runCli('worker', {
      DATABASE_URL: (await postgres()).url,
      TEMPORAL_ADDRESS: api.temporalAddress,
      TEMPORAL_NAMESPACE: namespace,
      AGENTPLANE_BLOB_DIR: api.blobDir,
      OPENAI_BASE_URL: openai.url,
    });
    workers.push(worker);
    return worker;
  }

  it('finishes the network run on a new worker with no hop run twice and each model call counted once', async () => {
    const first = await createAgent(tenant.admin, { name: 'first', instructions: 'You go first.' });
    const second = await createAgent(tenant.admin, { name: 'second', instructions: 'You go second.' });
    const network = await tenant.admin.post('/v1/networks', {
      name: 'pair',
      members: [first.id, second.id],
      router: { type: 'sequential' },
    });
    openai.enqueue({ text: ['alpha'], usage: { input: 1000, output: 100 } });
    openai.enqueue({ text: ['be'], hang: true });

    const doomed = await startWorker();
    const run = await tenant.admin.post(`/v1/networks/${network.body.id}/run`, { input: 'Go.', wait: false });
    await eventually(() => assert.equal(openai.requests.length, 2, doomed.output()), {
      timeoutMs: 60_000,
      message: 'the second hop never called its model',
    });
    doomed.child.kill('SIGKILL');
    assert.equal((await doomed.exited).signal, 'SIGKILL');

    openai.enqueue({ text: ['beta'], usage: { input: 2000, output: 200 } });
    const replacement = await startWorker();
    const done = await runSatisfying(
      tenant.admin,
      run.body.id,
      (r) => r.status === 'completed',
      `the network run did not finish: ${replacement.output()}`,
      120_000,
    );

    assert.equal(done.output.text, 'beta');
    assert.deepEqual(
      done.hops.map((h: { agent_id: string }) => h.agent_id),
      [first.id, second.id],
    );
    const { rows } = await api.services.db.query('SELECT count(*)::int AS hops FROM runs WHERE parent_run_id = $1', [run.body.id]);
    assert.equal(rows[0]?.hops, 2, 'each hop started once');
    const firstCalls = openai.requests.filter((r) => JSON.stringify(r).includes('You go first.'));
    assert.equal(firstCalls.length, 1, 'the finished hop was not run again');
    // Only completed calls count: alpha (1000 in, 100 out) and beta (2000 in, 200 out); the call cut off by the kill does not.
    assert.deepEqual(done.usage, { input_tokens: 3000, output_tokens: 300, cached_tokens: 0 });
    // gpt-4.1-mini at $0.40 in and $1.60 out per million: 560 + 1,120 millionths.
    assert.equal(done.cost, '0.00168');
  });
});
