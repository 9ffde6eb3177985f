import assert from 'node:assert/strict';
import { newTenant, startTestApi, type TestApi } from '../support/api.js';
import { ApiClient, type ApiResponse } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { assertMarkedDeprecated } from '../support/deprecated-update.js';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';
import { createDb } from '../../records/db.js';
import { testLog } from '../support/services.js';

// Both API processes run with the same deployment limits, as replicas of one deployment do.
const DEFAULTS = { requestsPerMinute: 100_000, concurrentRuns: 1_000 };

describe('rate limits per API key, across two API processes', function () {
  this.timeout(120_000);
  let stack: RunsStack;
  let second: TestApi;

  before(async () => {
    stack = await startRunsStack('rate-limits', {}, { rateLimits: DEFAULTS });
    // A second API (no worker) on the same PostgreSQL and Temporal namespace: another replica.
    second = await startTestApi({
      worker: false,
      namespace: stack.api.services.temporal.options.namespace,
      modelEnv: { OPENAI_BASE_URL: stack.openai.url },
      rateLimits: DEFAULTS,
    });
  });

  after(async () => {
    await second?.stop();
    await stack?.stop();
  });

  /** A new admin key of the tenant with these limits, as a client of each API process. */
  async function keyWithLimits(rateLimits: Record<string, number | null>): Promise<{ id: string; first: ApiClient; other: ApiClient }> {
    const created = await stack.tenant.admin.post('/v1/api-keys', { name: 'limited', scopes: ['admin'], rate_limits: rateLimits });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return {
      id: created.body.id,
      first: new ApiClient(stack.api.url, created.body.key),
      other: new ApiClient(second.url, created.body.key),
    };
  }

  const limitHeaders = (response: ApiResponse) => ({
    limit: response.headers.get('x-ratelimit-limit-requests'),
    remaining: response.headers.get('x-ratelimit-remaining-requests'),
    reset: response.headers.get('x-ratelimit-reset-requests'),
  });

  it('counts a key’s requests on both processes together, counts down, and answers the one over the limit 429 with Retry-After', async () => {
    const key = await keyWithLimits({ requests_per_minute: 5 });
    const listed = await stack.tenant.admin.get('/v1/api-keys?limit=100');
    assert.deepEqual(listed.body.data.find((k: { id: string }) => k.id === key.id).rate_limits, {
      requests_per_minute: 5,
      concurrent_runs: null,
    });
    const remaining: string[] = [];
    for (let i = 0; i < 5; i++) {
      const response = await (i % 2 === 0 ? key.first : key.other).get('/v1/agents');
      assert.equal(response.status, 200, JSON.stringify(response.body));
      const headers = limitHeaders(response);
      assert.equal(headers.limit, '5');
      assert.match(headers.reset ?? '', /^([1-9]|[1-5][0-9]|60)s$/);
      remaining.push(headers.remaining!);
    }
    assert.deepEqual(remaining, ['4', '3', '2', '1', '0']);

    for (const client of [key.other, key.first]) {
      const refused = await client.get('/v1/agents');
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.type, 'rate_limit_error');
      assert.equal(refused.body.error.code, 'rate_limit_exceeded');
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${refused.headers.get('retry-after')}`);
      assert.deepEqual(limitHeaders(refused), { limit: '5', remaining: '0', reset: `${retryAfter}s` });
    }
  });

  it('serves a busy key up to its limit across both processes, never past it, and refuses the rest with Retry-After', async () => {
    const limit = 400;
    const key = await keyWithLimits({ requests_per_minute: limit });
    const statuses: number[] = [];
    const retryAfters: (string | null)[] = [];
    for (let batch = 0; batch < 22; batch++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, (_, i) => (i % 2 === 0 ? key.first : key.other).get('/v1/agents?limit=1')),
      );
      for (const answer of answers) {
        statuses.push(answer.status);
        if (answer.status === 429) retryAfters.push(answer.headers.get('retry-after'));
      }
    }
    const served = statuses.filter((status) => status === 200).length;
    assert.deepEqual(new Set(statuses), new Set([200, 429]));
    assert.ok(served <= limit, `${served} requests served of a limit of ${limit}`);
    // Each process may hold a few requests leased and unserved when the other is refused: 1% of the limit.
    assert.ok(served >= limit - 2 * (limit / 100), `only ${served} requests served of a limit of ${limit}`);
    for (const retryAfter of retryAfters) assert.match(retryAfter ?? '', /^([1-9]|[1-5][0-9]|60)$/);
  });

  it('keeps each key’s window apart: a key with another limit is counted on its own', async () => {
    const busy = await keyWithLimits({ requests_per_minute: 2 });
    const quiet = await keyWithLimits({ requests_per_minute: 3 });
    await busy.first.get('/v1/agents');
    await busy.other.get('/v1/agents');
    assert.equal((await busy.first.get('/v1/agents')).status, 429);
    const answered = await quiet.other.get('/v1/agents');
    assert.equal(answered.status, 200);
    assert.deepEqual([limitHeaders(answered).limit, limitHeaders(answered).remaining], ['3', '2']);
  });

  it('applies the deployment default to a key without a limit of its own', async () => {
    const key = await keyWithLimits({ requests_per_minute: null });
    for (const client of [key.first, key.other]) {
      const response = await client.get('/v1/agents');
      assert.equal(response.status, 200);
      assert.equal(limitHeaders(response).limit, '100000');
    }
    assert.equal(limitHeaders(await key.other.get('/v1/agents')).remaining, '99997');
  });

  it('applies a changed limit at once on the process that changed it and within seconds on the other', async () => {
    const key = await keyWithLimits({ requests_per_minute: 1 });
    assert.equal((await key.first.get('/v1/agents')).status, 200);
    assert.equal((await key.other.get('/v1/agents')).status, 429);
    const updated = await stack.tenant.admin.patch(`/v1/api-keys/${key.id}`, { rate_limits: { requests_per_minute: 10 } });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(updated.body.rate_limits, { requests_per_minute: 10, concurrent_runs: null });
    const after = await key.first.get('/v1/agents');
    assert.equal(after.status, 200);
    assert.equal(limitHeaders(after).limit, '10');
    await eventually(async () => assert.equal(limitHeaders(await key.other.get('/v1/agents')).limit, '10'), {
      timeoutMs: 10_000,
      intervalMs: 500,
    });

    const audit = await stack.tenant.admin.get(`/v1/audit-logs?target_id=${key.id}&action=api_key.update`);
    assert.equal(audit.body.data.length, 1);
    assert.equal(audit.body.data[0].outcome.status, 200);
  });

  it('still changes a key with POST, the verb before PATCH, and says on the answer that POST is deprecated', async () => {
    const key = await keyWithLimits({ requests_per_minute: 1 });
    const path = `/v1/api-keys/${key.id}`;
    const updated = await stack.tenant.admin.post(path, { name: 'renamed', rate_limits: { requests_per_minute: 10 } });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual([updated.body.name, updated.body.rate_limits.requests_per_minute], ['renamed', 10]);
    assert.equal(limitHeaders(await key.first.get('/v1/agents')).limit, '10');
    await assertMarkedDeprecated(stack.tenant.admin.baseUrl, path, updated);
  });

  it('gives a key asked for more than the deployment allows the deployment’s limits, and says so in the answer', async () => {
    const created = await stack.tenant.admin.post('/v1/api-keys', {
      name: 'greedy',
      scopes: ['agents:read'],
      rate_limits: { requests_per_minute: 1_000_000, concurrent_runs: 100_000 },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual(created.body.rate_limits, { requests_per_minute: 100_000, concurrent_runs: 1_000 });
    const key = new ApiClient(stack.api.url, created.body.key);
    assert.equal(limitHeaders(await key.get('/v1/agents')).limit, '100000');

    const raised = await stack.tenant.admin.patch(`/v1/api-keys/${created.body.id}`, { rate_limits: { requests_per_minute: 999_999 } });
    assert.equal(raised.status, 200, JSON.stringify(raised.body));
    assert.deepEqual(raised.body.rate_limits, { requests_per_minute: 100_000, concurrent_runs: 1_000 });
    const lowered = await stack.tenant.admin.patch(`/v1/api-keys/${created.body.id}`, { rate_limits: { requests_per_minute: 7 } });
    assert.deepEqual(lowered.body.rate_limits, { requests_per_minute: 7, concurrent_runs: 1_000 });
  });

  it('holds a key whose stored limit is above the deployment’s (stored before the operator lowered it) to the deployment’s', async () => {
    const key = await keyWithLimits({ requests_per_minute: 50 });
    await stack.api.services.db.query('UPDATE api_keys SET requests_per_minute = 1000000 WHERE id = $1', [key.id]);
    assert.equal(limitHeaders(await key.other.get('/v1/agents')).limit, '100000');
  });

  it('refuses to set the bootstrap key’s rate limits with 400 bootstrap_key: they are the deployment’s', async () => {
    const { rows } = await stack.api.services.db.query<{ id: string }>('SELECT id FROM api_keys WHERE bootstrap AND revoked_at IS NULL');
    const bootstrapId = rows[0]!.id;
    for (const rateLimits of [{ requests_per_minute: 1 }, { concurrent_runs: 1 }, { requests_per_minute: null }]) {
      const refused = await stack.api.root.patch(`/v1/api-keys/${bootstrapId}`, { rate_limits: rateLimits });
      assert.equal(refused.status, 400, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, 'bootstrap_key');
      assert.equal(refused.body.error.param, 'rate_limits');
    }
    // Still the deployment's limit, on both processes: the operator is not throttled.
    for (const url of [stack.api.url, second.url]) {
      const answered = await new ApiClient(url, stack.api.root.key).get('/v1/agents');
      assert.equal(answered.status, 200);
      assert.equal(limitHeaders(answered).limit, '100000');
    }
    const listed = await stack.api.root.get('/v1/api-keys?limit=100');
    assert.deepEqual(listed.body.data.find((k: { id: string }) => k.id === bootstrapId).rate_limits, {
      requests_per_minute: null,
      concurrent_runs: null,
    });
  });

  it('refuses bad limits with 400 and an unknown key with 404', async () => {
    for (const rateLimits of [{ requests_per_minute: 0 }, { concurrent_runs: -1 }, { requests_per_minute: 1.5 }, { burst: 3 }]) {
      const refused = await stack.tenant.admin.post('/v1/api-keys', { name: 'bad', scopes: ['admin'], rate_limits: rateLimits });
      assert.equal(refused.status, 400, JSON.stringify(rateLimits));
    }
    assert.equal((await stack.tenant.admin.post('/v1/api-keys/key_doesnotexist', { rate_limits: { concurrent_runs: 2 } })).status, 404);
  });

  it('answers 503 with Retry-After when PostgreSQL drops the connection counting a request, then counts again', async () => {
    const key = await keyWithLimits({ requests_per_minute: 50 });
    assert.equal((await key.first.get('/v1/agents')).status, 200); // the key is now cached: only the count needs the database
    const locker = createDb(stack.api.services.db.connectionString, { max: 2, log: testLog });
    const lock = await locker.connect();
    try {
      await lock.query('BEGIN');
      await lock.query('LOCK TABLE api_key_request_windows IN ACCESS EXCLUSIVE MODE');
      const pending = key.first.get('/v1/agents');
      const pid = await eventually(
        async () => {
          const { rows } = await locker.query<{ pid: number }>(
            `SELECT pid FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO api_key_request_windows%'`,
          );
          assert.equal(rows.length, 1);
          return rows[0]!.pid;
        },
        { message: 'the count did not wait for the lock' },
      );
      await locker.query('SELECT pg_terminate_backend($1)', [pid]);
      const failed = await pending;
      assert.equal(failed.status, 503, JSON.stringify(failed.body));
      assert.equal(failed.body.error.code, 'dependency_unavailable');
      assert.ok(Number(failed.headers.get('retry-after')) > 0);
      await lock.query('ROLLBACK');
    } finally {
      lock.release();
      await locker.end();
    }
    const counted = await key.first.get('/v1/agents');
    assert.equal(counted.status, 200);
    assert.equal(limitHeaders(counted).remaining, '48');
  });

  describe('concurrent runs', () => {
    let release: () => void;

    beforeEach(() => {
      // Every model call streams its first chunk, then waits for the test: the runs stay in progress.
      const gate = new Promise<void>((resolve) => (release = resolve));
      stack.openai.setFallback({ text: ['Thinking', ' done.'], usage: { input: 10, output: 2 }, pause: { chunks: 1, until: gate } });
    });

    afterEach(() => {
      release();
      stack.openai.setFallback(null);
    });

    it('refuses the run beyond the key’s concurrent runs with 429 and Retry-After, on either process, and accepts one once a run ends', async () => {
      const key = await keyWithLimits({ concurrent_runs: 2 });
      const agent = await createAgent(key.first);
      const first = await key.first.post(`/v1/agents/${agent.id}/run`, { input: 'one', wait: false });
      const second = await key.other.post(`/v1/agents/${agent.id}/run`, { input: 'two', wait: false });
      assert.deepEqual([first.status, second.status], [202, 202]);

      for (const client of [key.first, key.other]) {
        const refused = await client.post(`/v1/agents/${agent.id}/run`, { input: 'three', wait: false });
        assert.equal(refused.status, 429, JSON.stringify(refused.body));
        assert.equal(refused.body.error.code, 'concurrent_runs_exceeded');
        assert.ok(Number(refused.headers.get('retry-after')) >= 1);
      }
      // Another key of the same project has room of its own.
      assert.equal((await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'other key', wait: false })).status, 202);

      release();
      for (const run of [first, second])
        await runSatisfying(key.first, run.body.id, (r) => r.status === 'completed', 'the run did not complete');
      assert.equal((await key.other.post(`/v1/agents/${agent.id}/run`, { input: 'four', wait: false })).status, 202);
    });

    it('lets exactly the limit through when runs are started at once on both processes', async () => {
      const key = await keyWithLimits({ concurrent_runs: 3 });
      const agent = await createAgent(key.first);
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          (i % 2 === 0 ? key.first : key.other).post(`/v1/agents/${agent.id}/run`, { input: `run ${i}`, wait: false }),
        ),
      );
      const statuses = answers.map((a) => a.status).sort();
      assert.deepEqual(statuses, [202, 202, 202, 429, 429, 429, 429, 429]);
      const { rows } = await stack.api.services.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM runs WHERE api_key_id = $1`, [
        key.id,
      ]);
      assert.equal(rows[0]!.n, 3);
    });

    it('counts a network run once, however many hops it has going', async () => {
      const key = await keyWithLimits({ concurrent_runs: 1 });
      const agent = await createAgent(key.first);
      const network = await key.first.post('/v1/networks', { name: 'pair', members: [agent.id], router: { type: 'sequential' } });
      assert.equal(network.status, 201, JSON.stringify(network.body));
      const started = await key.other.post(`/v1/networks/${network.body.id}/run`, { input: 'go', wait: false });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      // Its hop (a child run of the same key) is going too.
      await eventually(async () => {
        const { rows } = await stack.api.services.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM runs WHERE parent_run_id = $1 AND status = 'in_progress'`,
          [started.body.id],
        );
        assert.equal(rows[0]!.n, 1);
      });
      const refused = await key.first.post(`/v1/agents/${agent.id}/run`, { input: 'more', wait: false });
      assert.equal(refused.status, 429);
      assert.equal(refused.body.error.code, 'concurrent_runs_exceeded');
      assert.match(refused.body.error.message, /it has 1\./);
    });
  });

  describe("per project, across all of the project's keys", () => {
    // A third replica whose deployment also limits each project's keys together; the projects it serves are
    // made through the first process, whose requests (the bootstrap key's) it does not count.
    let capped: TestApi;
    let release: () => void;

    before(async () => {
      capped = await startTestApi({
        worker: false,
        namespace: stack.api.services.temporal.options.namespace,
        modelEnv: { OPENAI_BASE_URL: stack.openai.url },
        rateLimits: { ...DEFAULTS, projectRequestsPerMinute: 6, projectConcurrentRuns: 2 },
      });
    });

    after(async () => {
      await capped?.stop();
    });

    beforeEach(() => {
      const gate = new Promise<void>((resolve) => (release = resolve));
      stack.openai.setFallback({ text: ['Thinking', ' done.'], usage: { input: 10, output: 2 }, pause: { chunks: 1, until: gate } });
    });

    afterEach(() => {
      release();
      stack.openai.setFallback(null);
    });

    const tenantOfCapped = (name: string) => newTenant({ url: capped.url, root: stack.api.root }, name);

    it("refuses the request beyond the project's requests per minute, whichever of its keys makes it, and not another project's", async () => {
      const tenant = await tenantOfCapped('many keys');
      const keys = [tenant.admin, await tenant.keyWith('admin'), await tenant.keyWith('agents:read')];
      const remaining: string[] = [];
      for (let i = 0; i < 6; i++) {
        const response = await keys[i % 3]!.get('/v1/agents');
        assert.equal(response.status, 200, JSON.stringify(response.body));
        // Each key could make 100,000; the project's 6 is the nearer limit, so it is the one the headers tell.
        assert.equal(limitHeaders(response).limit, '6');
        remaining.push(limitHeaders(response).remaining!);
      }
      assert.deepEqual(remaining, ['5', '4', '3', '2', '1', '0']);

      // A key made after the project spent its minute has nothing of its own to spend.
      const fresh = await tenant.keyWith('admin');
      const refused = await fresh.get('/v1/agents');
      assert.equal(refused.status, 429, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, 'rate_limit_exceeded');
      assert.match(
        refused.body.error.message,
        /^This project's API keys may make 6 requests per minute together; the window resets in \d+s\.$/,
      );
      const retryAfter = Number(refused.headers.get('retry-after'));
      assert.ok(Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60, `Retry-After: ${refused.headers.get('retry-after')}`);
      assert.deepEqual(limitHeaders(refused), { limit: '6', remaining: '0', reset: `${retryAfter}s` });

      const neighbour = await tenantOfCapped('neighbour');
      assert.equal((await neighbour.admin.get('/v1/agents')).status, 200);
    });

    it("refuses the run beyond the project's concurrent runs, whichever of its keys asks, and accepts one once a run ends", async () => {
      const tenant = await tenantOfCapped('many runs');
      const [first, second, third] = [tenant.admin, await tenant.keyWith('admin'), await tenant.keyWith('admin')];
      const agent = await createAgent(first!);
      const started = [
        await first!.post(`/v1/agents/${agent.id}/run`, { input: 'one', wait: false }),
        await second!.post(`/v1/agents/${agent.id}/run`, { input: 'two', wait: false }),
      ];
      assert.deepEqual(
        started.map((r) => r.status),
        [202, 202],
      );
      const refused = await third!.post(`/v1/agents/${agent.id}/run`, { input: 'three', wait: false });
      assert.equal(refused.status, 429, JSON.stringify(refused.body));
      assert.equal(refused.body.error.code, 'concurrent_runs_exceeded');
      assert.equal(
        refused.body.error.message,
        "This project's API keys may have 2 runs queued or in progress at once together; they have 2.",
      );
      assert.ok(Number(refused.headers.get('retry-after')) >= 1);

      // Another project's runs are its own to count.
      const neighbour = await tenantOfCapped('run neighbour');
      const theirs = await createAgent(neighbour.admin);
      assert.equal((await neighbour.admin.post(`/v1/agents/${theirs.id}/run`, { input: 'mine', wait: false })).status, 202);

      release();
      // Watched in the database: the project's requests this minute are spent on the runs above.
      await eventually(async () => {
        const { rows } = await stack.api.services.db.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM runs WHERE id = ANY($1) AND status = 'completed'`,
          [started.map((r) => r.body.id)],
        );
        assert.equal(rows[0]!.n, 2);
      });
      assert.equal((await third!.post(`/v1/agents/${agent.id}/run`, { input: 'four', wait: false })).status, 202);
    });
  });
});
