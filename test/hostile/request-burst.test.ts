/**
 * A tenant that sends more requests at once than its share of an API process waits behind its own requests,
 * not behind another tenant's, and is told 429 when it has as many waiting as it may. The API here works on one
 * request at a time; a request holds its place for as long as one of its statements waits on a row the test
 * holds locked.
 */
import assert from 'node:assert/strict';
import { newTenant, startTestApi, type TestApi, type Tenant } from '../support/api.js';
import { eventually } from '../support/eventually.js';
import { isolatedNamespace } from '../support/services.js';
import { DEFAULT_ADMISSION_LIMITS } from '../../api/fair-admission.js';

const QUEUED_PER_PROJECT = 3;
const QUEUE_WAIT_SECONDS = 3;

describe('a burst of requests from one tenant', function () {
  this.timeout(60_000);
  let api: TestApi;
  let busy: Tenant;
  let other: Tenant;
  let agentId: string;

  before(async () => {
    // No worker: the runs made here stay queued, in a namespace no other suite's worker polls.
    api = await startTestApi({
      worker: false,
      namespace: await isolatedNamespace('request-burst'),
      admission: { ...DEFAULT_ADMISSION_LIMITS, atOnce: 1, queuedPerProject: QUEUED_PER_PROJECT, queueWaitSeconds: QUEUE_WAIT_SECONDS },
    });
    [busy, other] = await Promise.all([newTenant(api, 'busy'), newTenant(api, 'other')]);
    const agent = await busy.admin.post('/v1/agents', { name: 'locked', model: 'gpt-4.1-mini', instructions: 'Hold.' });
    assert.equal(agent.status, 201, JSON.stringify(agent.body));
    agentId = agent.body.id;
  });

  after(async () => {
    await api?.stop();
  });

  /** What the API process reports working on and holding in its queues. */
  async function load(): Promise<{ working: number; queued: number }> {
    const text = (await api.root.get<string>('/metrics')).body;
    const gauge = (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(text)?.[1]);
    return { working: gauge('agentplane_api_requests_working'), queued: gauge('agentplane_api_requests_queued') };
  }

  const loadBecomes = (expected: { working: number; queued: number }) =>
    eventually(async () => assert.deepEqual(await load(), expected), { timeoutMs: 10_000 });

  /** The busy tenant's update of its agent, working (and holding the one place) until the row is let go. */
  async function holdThePlace(): Promise<{ update: Promise<{ status: number }>; letGo: () => Promise<void> }> {
    let letGo!: () => void;
    let locked!: () => void;
    const holding = api.services.db.transaction(async (tx) => {
      await tx.query('SELECT id FROM agents WHERE id = $1 FOR UPDATE', [agentId]);
      locked();
      await new Promise<void>((resolve) => (letGo = resolve));
    });
    await new Promise<void>((resolve) => (locked = resolve));
    const update = busy.admin.patch(`/v1/agents/${agentId}`, { instructions: 'Updated.' });
    await loadBecomes({ working: 1, queued: 0 });
    return {
      update,
      letGo: async () => {
        letGo();
        await holding;
      },
    };
  }

  it("answers another tenant's request before the burst's, and every request of both", async () => {
    const { update, letGo } = await holdThePlace();
    const answered: string[] = [];
    const burst = Array.from({ length: QUEUED_PER_PROJECT }, (_, i) =>
      busy.admin.get('/v1/agents').then((response) => (answered.push(`busy ${i}`), response)),
    );
    await loadBecomes({ working: 1, queued: QUEUED_PER_PROJECT });
    const single = other.admin.get('/v1/agents').then((response) => (answered.push('other'), response));
    await loadBecomes({ working: 1, queued: QUEUED_PER_PROJECT + 1 });
    await letGo();

    assert.equal((await update).status, 200);
    for (const response of [...(await Promise.all(burst)), await single]) assert.equal(response.status, 200);
    // In arrival order it would be last; by turns it is the first or second let in.
    assert.ok(answered.indexOf('other') <= 1, `answered in the order ${answered.join(', ')}`);
    await loadBecomes({ working: 0, queued: 0 });
  });

  it('answers 429 with Retry-After past its queue, and to requests that waited past the bound; the other tenant is served', async () => {
    const { update, letGo } = await holdThePlace();
    const waiting = Array.from({ length: QUEUED_PER_PROJECT }, () => busy.admin.get('/v1/agents'));
    await loadBecomes({ working: 1, queued: QUEUED_PER_PROJECT });

    const refused = await busy.admin.get('/v1/agents');
    assert.equal(refused.status, 429);
    assert.equal(refused.body.error.code, 'too_many_requests_queued');
    assert.equal(refused.headers.get('retry-after'), '1');

    for (const response of await Promise.all(waiting)) {
      assert.equal(response.status, 429);
      assert.equal(response.body.error.code, 'request_queue_timeout');
      assert.match(response.body.error.message, new RegExp(`waited ${QUEUE_WAIT_SECONDS}s`));
    }
    await letGo();
    assert.equal((await update).status, 200);
    assert.equal((await other.admin.get('/v1/agents')).status, 200);
    assert.equal((await busy.admin.get(`/v1/agents/${agentId}`)).body.instructions, 'Updated.');
    await loadBecomes({ working: 0, queued: 0 });
  });

  it('holds no place while a request waits for its run or serves an event stream: the project is answered meanwhile', async () => {
    const created = await busy.admin.post(`/v1/agents/${agentId}/run`, { input: 'Queued.', wait: false });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    const gone = new AbortController();
    const headers = { authorization: `Bearer ${busy.admin.key}`, 'content-type': 'application/json' };
    const waiting = fetch(`${api.url}/v1/agents/${agentId}/run`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ input: 'Waited for.' }),
      signal: gone.signal,
    }).catch(() => undefined);
    const stream = await fetch(`${api.url}/v1/runs/${created.body.id}/events`, { headers, signal: gone.signal });
    assert.equal(stream.status, 200);
    await eventually(async () => assert.equal((await busy.admin.get(`/v1/runs?agent_id=${agentId}`)).body.data.length, 2), {
      timeoutMs: 10_000,
    });
    // The run the second request made is queued for good (no worker): the request waits for it, holding nothing.
    await loadBecomes({ working: 0, queued: 0 });
    assert.equal((await busy.admin.get('/v1/agents')).status, 200);
    gone.abort();
    await waiting;
  });
});
