import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { serveWorker } from '../../cli/worker-process.js';
import { controllerClient, newTenant, workflowBundle, type Tenant } from '../support/api.js';
import type { DeclaredWorkerPool } from '../../api/routes/networks/worker-pool.js';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';
import { networkRunWorkflowId } from '../../workflows/networks/client.js';
import { insertNetwork } from '../../records/networks.js';
import { ensureControllerKey } from '../../records/controller-key.js';
import { runWorkflowId } from '../../workflows/runs/client.js';

const FROM_KUBERNETES = { 'agentplane-managed-by': 'kubernetes' };

function resource(kind: 'Agent' | 'AgentNetwork', name: string) {
  return { kind, namespace: 'support', name, uid: randomUUID() };
}

describe('records a Kubernetes resource manages', function () {
  this.timeout(120_000);
  let stack: RunsStack;

  before(async () => {
    stack = await startRunsStack('managed-records');
  });

  after(async () => {
    await stack?.stop();
  });

  it('say which resource manages them; the others say null', async () => {
    const managed = resource('Agent', 'researcher');
    const created = await stack.tenant.admin.post('/v1/agents', {
      name: 'researcher',
      model: 'auto',
      managed_by: 'kubernetes',
      managed_resource: managed,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.managed_by, 'kubernetes');
    assert.deepEqual(created.body.managed_resource, managed);
    const plain = await createAgent(stack.tenant.admin);
    assert.equal(plain.managed_by, null);
    assert.equal(plain.managed_resource, null);
  });

  it('are listed by managed_by and by the resource uid', async () => {
    const managed = resource('Agent', 'lister');
    const created = await stack.tenant.admin.post('/v1/agents', {
      name: 'lister',
      model: 'auto',
      managed_by: 'kubernetes',
      managed_resource: managed,
    });
    const plain = await createAgent(stack.tenant.admin);
    const byUid = await stack.tenant.admin.get(`/v1/agents?managed_uid=${managed.uid}`);
    assert.deepEqual(
      byUid.body.data.map((a: { id: string }) => a.id),
      [created.body.id],
    );
    const all = await stack.tenant.admin.get('/v1/agents?managed_by=kubernetes&limit=100');
    assert.ok(all.body.data.some((a: { id: string }) => a.id === created.body.id));
    assert.ok(all.body.data.every((a: { managed_by: string }) => a.managed_by === 'kubernetes'));
    const none = await stack.tenant.admin.get('/v1/agents?managed_by=none&limit=100');
    assert.ok(none.body.data.some((a: { id: string }) => a.id === plain.id));
    assert.ok(none.body.data.every((a: { managed_by: null }) => a.managed_by === null));
  });

  it('refuse an update or a deletion through the API with 409, naming the resource to edit instead', async () => {
    const managed = resource('Agent', 'writer');
    const { body: agent } = await stack.tenant.admin.post('/v1/agents', {
      name: 'writer',
      model: 'auto',
      managed_by: 'kubernetes',
      managed_resource: managed,
    });
    const updated = await stack.tenant.admin.patch(`/v1/agents/${agent.id}`, { instructions: 'Be brief.' });
    assert.equal(updated.status, 409);
    assert.equal(updated.body.error.code, 'managed_by_kubernetes');
    assert.match(
      updated.body.error.message,
      /managed by Kubernetes: edit the Agent support\/writer instead \(kubectl edit agents\.agentplane\.io\/writer -n support\)/,
    );
    const deleted = await stack.tenant.admin.delete(`/v1/agents/${agent.id}`);
    assert.equal(deleted.status, 409);
    assert.equal(deleted.body.error.code, 'managed_by_kubernetes');
    const unchanged = await stack.tenant.admin.get(`/v1/agents/${agent.id}`);
    assert.equal(unchanged.body.version, 1);
    const audit = await stack.tenant.admin.get('/v1/audit-logs?limit=5');
    assert.equal(audit.body.data[0].action, 'agent.delete');
    assert.deepEqual(audit.body.data[0].outcome, { status: 409, error_code: 'managed_by_kubernetes' });
  });

  it('take changes and deletions from their controller', async () => {
    const managed = resource('Agent', 'controlled');
    const { body: agent } = await stack.tenant.admin.post('/v1/agents', {
      name: 'controlled',
      model: 'auto',
      managed_by: 'kubernetes',
      managed_resource: managed,
    });
    const updated = await stack.tenant.admin.patch(`/v1/agents/${agent.id}`, { instructions: 'Be brief.' }, FROM_KUBERNETES);
    assert.equal(updated.status, 200);
    assert.equal(updated.body.version, 2);
    assert.deepEqual(updated.body.managed_resource, managed);
    const deleted = await stack.tenant.admin.request('DELETE', `/v1/agents/${agent.id}`, { headers: FROM_KUBERNETES });
    assert.equal(deleted.status, 200);
  });

  it('are one per resource: a second create for the same uid answers 409 naming the first', async () => {
    const managed = resource('Agent', 'twice');
    const first = await stack.tenant.admin.post('/v1/agents', {
      name: 'twice',
      model: 'auto',
      managed_by: 'kubernetes',
      managed_resource: managed,
    });
    const second = await stack.tenant.admin.post('/v1/agents', {
      name: 'twice',
      model: 'auto',
      managed_by: 'kubernetes',
      managed_resource: managed,
    });
    assert.equal(second.status, 409);
    assert.equal(second.body.error.code, 'managed_resource_exists');
    assert.match(second.body.error.message, new RegExp(first.body.id));
    const listed = await stack.tenant.admin.get(`/v1/agents?managed_uid=${managed.uid}`);
    assert.equal(listed.body.data.length, 1);
  });

  it('need managed_by and managed_resource together', async () => {
    const alone = await stack.tenant.admin.post('/v1/agents', { name: 'x', model: 'auto', managed_by: 'kubernetes' });
    assert.equal(alone.status, 400);
    const withoutBy = await stack.tenant.admin.post('/v1/agents', { name: 'x', model: 'auto', managed_resource: resource('Agent', 'x') });
    assert.equal(withoutBy.status, 400);
  });

  it('guard networks the same way', async () => {
    const member = await createAgent(stack.tenant.admin);
    const managed = resource('AgentNetwork', 'desk');
    const created = await stack.tenant.admin.post('/v1/networks', {
      name: 'desk',
      members: [member.id],
      router: { type: 'sequential' },
      managed_by: 'kubernetes',
      managed_resource: managed,
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.managed_by, 'kubernetes');
    const refused = await stack.tenant.admin.patch(`/v1/networks/${created.body.id}`, { max_hops: 3 });
    assert.equal(refused.status, 409);
    assert.match(refused.body.error.message, /kubectl edit agentnetworks\.agentplane\.io\/desk -n support/);
    assert.equal((await stack.tenant.admin.delete(`/v1/networks/${created.body.id}`)).status, 409);
    const listed = await stack.tenant.admin.get(`/v1/networks?managed_uid=${managed.uid}`);
    assert.deepEqual(
      listed.body.data.map((n: { id: string }) => n.id),
      [created.body.id],
    );
    const deleted = await stack.tenant.admin.request('DELETE', `/v1/networks/${created.body.id}`, { headers: FROM_KUBERNETES });
    assert.equal(deleted.status, 200);
  });
});

describe("a network's worker pool", function () {
  this.timeout(120_000);
  let stack: RunsStack;
  let other: Tenant;
  const namespace = 'worker-pool';
  // The operator's pools (AGENTPLANE_WORKER_POOLS): one for this suite's tenant, one for another project.
  const workerPools: DeclaredWorkerPool[] = [];

  before(async () => {
    stack = await startRunsStack(namespace, {}, { workerPools });
    other = await newTenant(stack.api, 'worker-pool-other');
    workerPools.push({ queue: 'support-pool', projectId: stack.tenant.projectId }, { queue: 'other-pool', projectId: other.projectId });
  });

  after(async () => {
    await stack?.stop();
  });

  it("runs the network's runs and every hop of them on its own task queue, and only there", async () => {
    const a = await createAgent(stack.tenant.admin, { model: 'local-llama' });
    const b = await createAgent(stack.tenant.admin, { model: 'local-llama' });
    const created = await stack.tenant.admin.post('/v1/networks', {
      name: 'pooled',
      members: [a.id, b.id],
      router: { type: 'sequential' },
      worker_pool: 'support-pool',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.worker_pool, 'support-pool');

    stack.openai.enqueue({ text: ['first'], usage: { input: 1, output: 1 } });
    stack.openai.enqueue({ text: ['second'], usage: { input: 1, output: 1 } });
    const started = await stack.tenant.admin.post(`/v1/networks/${created.body.id}/run`, { input: 'hello', wait: false });
    assert.equal(started.status, 202);
    const handle = stack.api.services.temporal.workflow.getHandle(networkRunWorkflowId(started.body.id));
    assert.equal((await handle.describe()).taskQueue, 'support-pool');

    const pool = await serveWorker(stack.api.services, stack.api.temporalAddress, namespace, await workflowBundle(), 'support-pool');
    try {
      const run = await runSatisfying(
        stack.tenant.admin,
        started.body.id,
        (r) => r.status === 'completed',
        'the pooled network run completed',
      );
      assert.equal(run.hops.length, 2);
      for (const hop of run.hops) {
        const child = await stack.api.services.temporal.workflow.getHandle(runWorkflowId(hop.child_run_id)).describe();
        assert.equal(child.taskQueue, 'support-pool');
      }
    } finally {
      await pool.stop();
    }
  });

  it("has the pool's workers refuse another project's run, even of a network stored naming the pool, before any model call", async () => {
    const member = await createAgent(other.admin, { model: 'local-llama' });
    // Stored without the API's check, as a network written before it may be.
    const network = await insertNetwork(stack.api.services.db, other.projectId, {
      name: 'stowaway',
      description: null,
      memory: { enabled: false },
      members: [member.id],
      router: { type: 'sequential' },
      max_cost_usd: null,
      max_hops: 10,
      concurrency: 'allow',
      metadata: {},
      worker_pool: 'support-pool',
    });
    const modelCalls = stack.openai.requests.length;
    stack.openai.enqueue({ text: ['should never be asked'], usage: { input: 1, output: 1 } });
    const started = await other.admin.post(`/v1/networks/${network.id}/run`, { input: 'hello', wait: false });
    assert.equal(started.status, 202);
    const pool = await serveWorker(
      stack.api.services,
      stack.api.temporalAddress,
      namespace,
      await workflowBundle(),
      'support-pool',
      undefined,
      stack.tenant.projectId,
    );
    try {
      const handle = stack.api.services.temporal.workflow.getHandle(networkRunWorkflowId(started.body.id));
      // The refusal is the failure's cause, or its cause's (an activity's failure within the workflow's).
      await assert.rejects(handle.result(), (err: Error) => /runs the runs of .* only; run .* is not one of them/.test(causeMessages(err)));
    } finally {
      await pool.stop();
    }
    assert.equal(stack.openai.requests.length, modelCalls, 'the pool called a model for another project');
    assert.notEqual((await other.admin.get(`/v1/runs/${started.body.id}`)).body.status, 'completed');
    stack.openai.setFallback(null);
  });

  it("answers 400 unknown_worker_pool for another project's pool, the controller's pools or a pool nobody runs, and stores nothing", async () => {
    const a = await createAgent(stack.tenant.admin);
    for (const queue of ['other-pool', 'network.team-b.payments', 'nobody-polls-this']) {
      const refused = await stack.tenant.admin.post('/v1/networks', {
        name: 'elsewhere',
        members: [a.id],
        router: { type: 'sequential' },
        worker_pool: queue,
      });
      assert.equal(refused.status, 400, queue);
      assert.equal(refused.body.error.code, 'unknown_worker_pool', queue);
      assert.equal(refused.body.error.param, 'worker_pool', queue);
      assert.match(refused.body.error.message, new RegExp(`No worker pool '${queue.replace(/\./g, '\\.')}' runs for this project`));
    }
    const listed = await stack.tenant.admin.get('/v1/networks?limit=100');
    assert.ok(!listed.body.data.some((n: { name: string }) => n.name === 'elsewhere'), 'a refused network was stored');

    const network = await stack.tenant.admin.post('/v1/networks', { name: 'shared', members: [a.id], router: { type: 'sequential' } });
    const misspelt = await stack.tenant.admin.patch(`/v1/networks/${network.body.id}`, { worker_pool: 'Other_Pool' });
    assert.equal(misspelt.status, 400);
    assert.match(misspelt.body.error.message, /^`worker_pool` is not valid: Lowercase letters, digits, `\.` and `-`/);
    const moved = await stack.tenant.admin.patch(`/v1/networks/${network.body.id}`, { worker_pool: 'other-pool' });
    assert.equal(moved.status, 400);
    assert.equal(moved.body.error.code, 'unknown_worker_pool');
    const unchanged = await stack.tenant.admin.get(`/v1/networks/${network.body.id}`);
    assert.equal(unchanged.body.version, 1);
    assert.equal(unchanged.body.worker_pool, null);
  });

  it("takes the queue of a pool the Kubernetes controller runs from the controller's key only", async () => {
    const controller = await controllerClient(stack.api);
    const member = await createAgent(controller);
    const created = await controller.post('/v1/networks', {
      name: 'payments',
      members: [member.id],
      router: { type: 'sequential' },
      worker_pool: 'network.team-b.payments',
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.equal(created.body.worker_pool, 'network.team-b.payments');
    const declared = await controller.post('/v1/networks', {
      name: 'not-ours',
      members: [member.id],
      router: { type: 'sequential' },
      worker_pool: 'support-pool',
    });
    assert.equal(declared.status, 400, 'the controller named a pool that runs for another project');
  });

  it("registers the controller's key with the agents and schedules scopes only, and refuses a secret that is already another key's", async () => {
    const controller = await controllerClient(stack.api);
    assert.equal((await controller.get('/v1/agents?limit=1')).status, 200);
    const minted = await controller.post('/v1/api-keys', { name: 'escalation', scopes: ['admin'] });
    assert.equal(minted.status, 403);
    const agent = await createAgent(controller);
    assert.equal((await controller.post(`/v1/agents/${agent.id}/run`, { input: 'hi', wait: false })).status, 403);
    await assert.rejects(
      ensureControllerKey(stack.api.services.db, stack.tenant.admin.key!),
      /AGENTPLANE_CONTROLLER_KEY is already the secret of the API key key_/,
    );
  });

  it('refuses a task queue name that is not one', async () => {
    const a = await createAgent(stack.tenant.admin);
    const refused = await stack.tenant.admin.post('/v1/networks', {
      name: 'bad',
      members: [a.id],
      router: { type: 'sequential' },
      worker_pool: 'Not A Queue',
    });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.param, 'worker_pool');
  });
});

/** The messages of an error and of every cause under it, one per line. */
function causeMessages(err: unknown): string {
  const messages: string[] = [];
  for (let at = err; at instanceof Error; at = at.cause) messages.push(at.message);
  return messages.join('\n');
}
