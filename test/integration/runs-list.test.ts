import assert from 'node:assert/strict';
import { newTenant } from '../support/api.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';

type Listed = { id: string; status: string; agent_id: string | null; network_id: string | null; parent_run_id: string | null; hops: unknown[] };

describe('the project-wide run list', function () {
  this.timeout(120_000);
  let stack: RunsStack;
  let first: any;
  let second: any;
  let networkRun: any;
  let failed: any;
  let alpha: any;
  let beta: any;
  let net: any;
  const ids = (body: { data: Listed[] }) => body.data.map((r) => r.id);

  before(async () => {
    stack = await startRunsStack('runs-list');
    const admin = stack.tenant.admin;
    alpha = await createAgent(admin, { name: 'alpha' });
    beta = await createAgent(admin, { name: 'beta' });
    stack.openai.enqueue({ text: ['one'], usage: { input: 10, output: 2 } });
    first = (await admin.post(`/v1/agents/${alpha.id}/run`, { input: 'first' })).body;
    stack.openai.enqueue({ text: ['two'], usage: { input: 10, output: 2 } });
    second = (await admin.post(`/v1/agents/${beta.id}/run`, { input: 'second' })).body;
    net = (await admin.post('/v1/networks', { name: 'pair', members: [alpha.id, beta.id], router: { type: 'sequential' } })).body;
    stack.openai.enqueue({ text: ['hop one'], usage: { input: 10, output: 2 } });
    stack.openai.enqueue({ text: ['hop two'], usage: { input: 10, output: 2 } });
    networkRun = (await admin.post(`/v1/networks/${net.id}/run`, { input: 'together' })).body;
    stack.openai.enqueue({ status: 400 });
    failed = (await admin.post(`/v1/agents/${alpha.id}/run`, { input: 'refused' })).body;
    for (const run of [first, second, networkRun]) assert.equal(run.status, 'completed', JSON.stringify(run.error));
    assert.equal(failed.status, 'failed');
  });

  after(async () => {
    await stack?.stop();
  });

  it('lists every run of the project newest first, hops included, each with its steps, hops, usage and cost', async () => {
    const list = await stack.tenant.admin.get('/v1/runs');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.equal(list.body.object, 'list');
    const hopIds = networkRun.hops.map((h: { child_run_id: string }) => h.child_run_id);
    assert.deepEqual(ids(list.body), [failed.id, ...[...hopIds].reverse(), networkRun.id, second.id, first.id]);
    const listedNetworkRun = list.body.data.find((r: Listed) => r.id === networkRun.id);
    assert.equal(listedNetworkRun.hops.length, 2);
    assert.equal(listedNetworkRun.cost, networkRun.cost);
    assert.equal(list.body.data.find((r: Listed) => r.id === first.id).steps.length, 1);
  });

  it('times each step and hop to the millisecond from its run\'s start', async () => {
    const [step] = first.steps;
    assert.equal(typeof step.offset_ms, 'number');
    // The first step waits for nothing but the run's start.
    assert.equal(step.queued_ms, step.offset_ms);
    assert.ok(step.duration_ms >= 0);
    const [hop0, hop1] = networkRun.hops;
    assert.ok(hop1.offset_ms >= hop0.offset_ms + hop0.duration_ms, JSON.stringify(networkRun.hops));
    const child = (await stack.tenant.admin.get(`/v1/runs/${hop1.child_run_id}`)).body;
    assert.equal(child.steps[0].queued_ms, child.steps[0].offset_ms);
  });

  it('pages by keyset with limit, after and before', async () => {
    const all = ids((await stack.tenant.admin.get('/v1/runs?limit=100')).body);
    const page1 = await stack.tenant.admin.get('/v1/runs?limit=2');
    assert.deepEqual(ids(page1.body), all.slice(0, 2));
    assert.equal(page1.body.has_more, true);
    const page2 = await stack.tenant.admin.get(`/v1/runs?limit=2&after=${page1.body.last_id}`);
    assert.deepEqual(ids(page2.body), all.slice(2, 4));
    const back = await stack.tenant.admin.get(`/v1/runs?limit=2&before=${page2.body.first_id}`);
    assert.deepEqual(ids(back.body), all.slice(0, 2));
    const ascending = await stack.tenant.admin.get('/v1/runs?order=asc&limit=100');
    assert.deepEqual(ids(ascending.body), [...all].reverse());
    const both = await stack.tenant.admin.get(`/v1/runs?after=${first.id}&before=${second.id}`);
    assert.equal(both.status, 400);
  });

  it('filters by status (a list), agent, network, parent run and creation time', async () => {
    const get = async (query: string) => {
      const answer = await stack.tenant.admin.get(`/v1/runs?${query}`);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return ids(answer.body);
    };
    const [hop0, hop1] = networkRun.hops.map((h: { child_run_id: string }) => h.child_run_id);
    assert.deepEqual(await get('status=failed'), [failed.id]);
    assert.deepEqual((await get('status=failed,completed')).length, 6);
    assert.deepEqual((await get('status=failed&status=cancelled')), [failed.id]);
    assert.deepEqual(await get('status=queued,in_progress'), []);
    assert.deepEqual(await get(`agent_id=${alpha.id}`), [failed.id, hop0, first.id]);
    assert.deepEqual(await get(`network_id=${net.id}`), [networkRun.id]);
    assert.deepEqual(await get(`parent_run_id=${networkRun.id}`), [hop1, hop0]);
    assert.deepEqual(await get('parent_run_id=none'), [failed.id, networkRun.id, second.id, first.id]);
    assert.deepEqual(await get(`agent_id=${alpha.id}&parent_run_id=none&status=completed`), [first.id]);
    assert.deepEqual(await get(`created_after=${first.created_at}`), await get(''));
    assert.deepEqual(await get(`created_before=${first.created_at}`), []);
    assert.deepEqual(await get(`created_after=${failed.created_at + 1}`), []);
  });

  it('answers 400 for no status or an unknown one, a repeated single-valued filter, or an unknown parameter', async () => {
    const empty = await stack.tenant.admin.get('/v1/runs?status=');
    assert.equal(empty.status, 400);
    assert.equal(empty.body.error.param, 'status');
    const unknownStatus = await stack.tenant.admin.get('/v1/runs?status=done');
    assert.equal(unknownStatus.status, 400);
    assert.equal(unknownStatus.body.error.param, 'status.0');
    const twice = await stack.tenant.admin.get(`/v1/runs?agent_id=${alpha.id}&agent_id=${beta.id}`);
    assert.equal(twice.status, 400);
    assert.equal(twice.body.error.param, 'agent_id');
    const unknown = await stack.tenant.admin.get('/v1/runs?agent=x');
    assert.equal(unknown.status, 400);
    assert.equal(unknown.body.error.code, 'unknown_parameter');
  });

  it("shows a project none of another project's runs, and refuses another project's run as a cursor", async () => {
    const other = await newTenant(stack.api, 'runs-list-other');
    const list = await other.admin.get('/v1/runs');
    assert.equal(list.status, 200);
    assert.deepEqual(list.body.data, []);
    assert.equal((await other.admin.get(`/v1/runs?agent_id=${alpha.id}`)).body.data.length, 0);
    const cursor = await other.admin.get(`/v1/runs?after=${first.id}`);
    assert.equal(cursor.status, 400);
    assert.equal(cursor.body.error.code, 'invalid_cursor');
  });

  it('needs agents:read', async () => {
    const reader = await stack.tenant.keyWith('agents:read');
    assert.equal((await reader.get('/v1/runs')).status, 200);
    const files = await stack.tenant.keyWith('files:read');
    assert.equal((await files.get('/v1/runs')).status, 403);
  });
});
