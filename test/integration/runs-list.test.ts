import assert from 'node:assert/strict';
import { newTenant } from '../support/api.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { addBulkyCopies, addSteps, fattenToolResults } from '../support/run-steps.js';

type Listed = {
  id: string;
  status: string;
  agent_id: string | null;
  network_id: string | null;
  parent_run_id: string | null;
  hops: unknown[];
};

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

  it('lists every run of the project newest first, hops included, each with its step count, hops, usage and cost', async () => {
    const list = await stack.tenant.admin.get('/v1/runs');
    assert.equal(list.status, 200, JSON.stringify(list.body));
    assert.equal(list.body.object, 'list');
    const hopIds = networkRun.hops.map((h: { child_run_id: string }) => h.child_run_id);
    assert.deepEqual(ids(list.body), [failed.id, ...[...hopIds].reverse(), networkRun.id, second.id, first.id]);
    const listedNetworkRun = list.body.data.find((r: Listed) => r.id === networkRun.id);
    assert.equal(listedNetworkRun.hops.length, 2);
    assert.equal(listedNetworkRun.cost, networkRun.cost);
    const listedFirst = list.body.data.find((r: Listed) => r.id === first.id);
    assert.equal(listedFirst.step_count, 1);
    assert.deepEqual(listedFirst.usage, first.usage);
    for (const field of ['steps', 'input', 'output']) assert.equal(field in listedFirst, false, `a listed run has no ${field}`);
  });

  describe('when runs are large', () => {
    let bulky: Awaited<ReturnType<typeof newTenant>>;
    let original: any;
    let agent: any;

    before(async () => {
      bulky = await newTenant(stack.api, 'runs-list-bulky');
      agent = await createAgent(bulky.admin, { name: 'bulky' });
      stack.openai.enqueue({ text: ['thought 0'], usage: { input: 10, output: 2 } });
      original = (await bulky.admin.post(`/v1/agents/${agent.id}/run`, { input: 'fill' })).body;
      assert.equal(original.status, 'completed', JSON.stringify(original.error));
      await addSteps(stack.api.services.db, original.id, 45);
      await addBulkyCopies(stack.api.services.db, original.id, 99, 1024 * 1024);
    });

    it('answers a page of 100 runs holding 1 MiB tool results in a few kilobytes per run, on every list', async () => {
      for (const path of ['/v1/runs?limit=100', `/v1/agents/${agent.id}/runs?limit=100`]) {
        const list = await bulky.admin.get(path);
        assert.equal(list.status, 200, JSON.stringify(list.body).slice(0, 500));
        assert.equal(list.body.data.length, 100);
        assert.ok(JSON.stringify(list.body).length < 200_000, `${path} answered ${JSON.stringify(list.body).length} characters`);
        assert.deepEqual(
          [...new Set(list.body.data.map((r: { step_count: number }) => r.step_count))].sort((a, b) => (a as number) - (b as number)),
          [1, 45],
        );
      }
    });

    it('gives a run its first 20 steps, each message once, and the rest a page at a time', async () => {
      const run = (await bulky.admin.get(`/v1/runs/${original.id}`)).body;
      assert.equal(run.step_count, 45);
      assert.equal(run.steps.length, 20);
      assert.equal(run.steps_has_more, true);
      assert.equal(run.steps[0].output, 'thought 0', "a model call's reply is in its step");
      assert.equal(run.steps[1].output, 'result 1', "a tool call's result is in its step");
      assert.equal('messages' in run.output, false, 'no message is repeated in the output');

      const rest = await bulky.admin.get(`/v1/runs/${original.id}/steps?after=${run.steps.at(-1).index}&limit=100`);
      assert.equal(rest.status, 200, JSON.stringify(rest.body));
      assert.equal(rest.body.object, 'list');
      assert.deepEqual(
        rest.body.data.map((s: { index: number }) => s.index),
        Array.from({ length: 25 }, (_, i) => 20 + i),
      );
      assert.deepEqual([rest.body.first_id, rest.body.last_id, rest.body.has_more], ['20', '44', false]);
      // Steps 19 and 20 are written 5 ms apart, the first ending 4 ms in: the page knows when the one before it ended.
      assert.equal(rest.body.data[0].queued_ms, 1);

      const firstPage = await bulky.admin.get(`/v1/runs/${original.id}/steps?limit=2`);
      assert.deepEqual([firstPage.body.first_id, firstPage.body.last_id, firstPage.body.has_more], ['0', '1', true]);
    });

    it('gives a run whose tool results are 1 MiB its steps up to the one that reaches 4 MiB, and the rest by 4 MiB a page', async () => {
      stack.openai.enqueue({ text: ['thought 0'], usage: { input: 10, output: 2 } });
      const fat = (await bulky.admin.post(`/v1/agents/${agent.id}/run`, { input: 'fat' })).body;
      await addSteps(stack.api.services.db, fat.id, 30);
      await fattenToolResults(stack.api.services.db, fat.id, 1024 * 1024);
      // Tool calls are the odd steps: the fourth of them, step 7, takes the page past 4 MiB (20 steps were 10 MiB).
      const run = await bulky.admin.get(`/v1/runs/${fat.id}`);
      assert.ok(JSON.stringify(run.body).length < 5_000_000, `the run answered ${JSON.stringify(run.body).length} characters`);
      assert.deepEqual(
        [run.body.steps.map((s: { index: number }) => s.index), run.body.steps_has_more, run.body.step_count],
        [[0, 1, 2, 3, 4, 5, 6, 7], true, 30],
      );
      const seen: number[] = [];
      for (let after = '', more = true; more;) {
        const page = await bulky.admin.get(`/v1/runs/${fat.id}/steps?limit=100${after}`);
        assert.ok(JSON.stringify(page.body).length < 5_000_000, `a page answered ${JSON.stringify(page.body).length} characters`);
        seen.push(...page.body.data.map((s: { index: number }) => s.index));
        [after, more] = [`&after=${page.body.last_id}`, page.body.has_more];
      }
      assert.deepEqual(
        seen,
        Array.from({ length: 30 }, (_, i) => i),
      );
    });

    it("answers 404 for another project's run steps and 400 for a cursor that is no index", async () => {
      assert.equal((await stack.tenant.admin.get(`/v1/runs/${original.id}/steps`)).status, 404);
      const bad = await bulky.admin.get(`/v1/runs/${original.id}/steps?after=x`);
      assert.equal(bad.status, 400);
      assert.equal(bad.body.error.param, 'after');
    });
  });

  it("times each step and hop to the millisecond from its run's start", async () => {
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
    assert.deepEqual(await get('status=failed&status=cancelled'), [failed.id]);
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
