import assert from 'node:assert/strict';
import { newTenant, type Tenant } from '../support/api.js';
import type { ApiClient } from '../support/client.js';
import { assertMarkedDeprecated } from '../support/deprecated-update.js';
import { createAgent as createAnyAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { eventsFor } from '../../records/events.js';
import { recordUsage } from '../../records/usage.js';
import { eventually } from '../support/eventually.js';

// gpt-4.1-mini: $0.40 per million input tokens, $1.60 per million output: (1000 × 0.40 + 250 × 1.60) / 10⁶.
const RUN_COST = '0.0008';
const DAY = 86_400;

// Each model call's worst case is reserved against the budgets first: 250 output tokens keep it within them.
const createAgent = (client: ApiClient) => createAnyAgent(client, { model_settings: { max_output_tokens: 250 } });

describe('budgets', function () {
  this.timeout(120_000);
  let stack: RunsStack;

  before(async () => {
    stack = await startRunsStack('budgets');
    stack.openai.setFallback({ text: ['Done.'], usage: { input: 1000, output: 250 } });
  });

  after(async () => {
    await stack?.stop();
  });

  async function run(client: ApiClient, agentId: string, input = 'Go.') {
    return client.post(`/v1/agents/${agentId}/run`, { input });
  }

  async function completedRun(client: ApiClient, agentId: string): Promise<void> {
    const answer = await run(client, agentId);
    assert.equal(answer.status, 200, JSON.stringify(answer.body));
    assert.equal(answer.body.cost, RUN_COST);
  }

  const thresholdEvents = async (tenant: Tenant, budgetId: string) =>
    (await eventsFor(stack.api.services.db, tenant.projectId, 'budget.threshold_reached', budgetId)).map((e) => e.data);

  function assertRefused(answer: { status: number; headers: Headers; body: any }, budgetId: string, spent: string, limit: string) {
    assert.equal(answer.status, 429, JSON.stringify(answer.body));
    assert.equal(answer.body.error.type, 'rate_limit_error');
    assert.equal(answer.body.error.code, 'budget_exceeded');
    assert.equal(answer.body.error.spent_usd, spent);
    assert.equal(answer.body.error.budget.id, budgetId);
    assert.equal(answer.body.error.budget.limit_usd, limit);
    assert.equal(answer.body.error.budget.spent_usd, spent);
    const retryAfter = Number(answer.headers.get('retry-after'));
    assert.ok(retryAfter >= 1 && retryAfter <= 31 * DAY, `Retry-After: ${answer.headers.get('retry-after')}`);
  }

  it('creates, lists, retrieves, updates and deletes budgets, with the current UTC period and an audit entry for each change', async () => {
    const tenant = await newTenant(stack.api, 'budget-crud');
    const agent = await createAgent(tenant.admin);
    const daily = await tenant.admin.post('/v1/budgets', {
      scope: { type: 'agent', id: agent.id },
      period: 'day',
      limit_usd: '12.50',
      name: 'helper per day',
    });
    assert.equal(daily.status, 201, JSON.stringify(daily.body));
    const now = new Date();
    const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) / 1000;
    assert.deepEqual(
      { ...daily.body, id: undefined, created_at: undefined, updated_at: undefined },
      {
        id: undefined,
        object: 'budget',
        name: 'helper per day',
        scope: { type: 'agent', id: agent.id },
        period: 'day',
        limit_usd: '12.5',
        thresholds: [0.5, 0.8, 1],
        spent_usd: '0',
        period_start: midnight,
        period_end: midnight + DAY,
        created_at: undefined,
        updated_at: undefined,
      },
    );

    const monthly = await tenant.admin.post('/v1/budgets', {
      scope: { type: 'project' },
      period: 'month',
      limit_usd: '100',
      thresholds: [1, 0.25],
    });
    assert.equal(monthly.status, 201, JSON.stringify(monthly.body));
    assert.deepEqual(monthly.body.scope, { type: 'project', id: tenant.projectId });
    assert.deepEqual(monthly.body.thresholds, [0.25, 1]);
    assert.equal(monthly.body.period_start, Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1) / 1000);
    assert.equal(monthly.body.period_end, Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1) / 1000);

    const listed = await tenant.admin.get('/v1/budgets?order=asc');
    assert.deepEqual(
      listed.body.data.map((b: { id: string }) => b.id),
      [daily.body.id, monthly.body.id],
    );
    const reader = await tenant.keyWith('analytics:read');
    assert.equal((await reader.get(`/v1/budgets/${daily.body.id}`)).body.limit_usd, '12.5');
    assert.equal((await reader.post('/v1/budgets', { scope: { type: 'project' }, period: 'day', limit_usd: '1' })).status, 403);

    const updated = await tenant.admin.patch(`/v1/budgets/${daily.body.id}`, { limit_usd: '20', thresholds: [0.9], name: null });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual(
      [updated.body.limit_usd, updated.body.thresholds, updated.body.name, updated.body.scope.id],
      ['20', [0.9], null, agent.id],
    );

    const deleted = await tenant.admin.delete(`/v1/budgets/${daily.body.id}`);
    assert.deepEqual(deleted.body, { id: daily.body.id, object: 'budget', deleted: true });
    assert.equal((await tenant.admin.get(`/v1/budgets/${daily.body.id}`)).status, 404);
    assert.equal((await tenant.admin.delete(`/v1/budgets/${daily.body.id}`)).status, 404);

    const audit = await tenant.admin.get(`/v1/audit-logs?target_id=${daily.body.id}&order=asc`);
    assert.deepEqual(
      audit.body.data.map((e: any) => [e.action, e.outcome.status]),
      [
        ['budget.create', 201],
        ['budget.update', 200],
        ['budget.delete', 200],
        ['budget.delete', 404],
      ],
    );

    // Another project's budget does not exist for this one.
    const other = await newTenant(stack.api, 'budget-crud-other');
    assert.equal((await other.admin.get(`/v1/budgets/${monthly.body.id}`)).status, 404);
    assert.equal((await other.admin.patch(`/v1/budgets/${monthly.body.id}`, { limit_usd: '1' })).status, 404);
  });

  it('still updates with POST, the verb before PATCH, and says on the answer that POST is deprecated', async () => {
    const tenant = await newTenant(stack.api, 'budget-post');
    const budget = await tenant.admin.post('/v1/budgets', { scope: { type: 'project' }, period: 'day', limit_usd: '5' });
    const path = `/v1/budgets/${budget.body.id}`;
    const updated = await tenant.admin.post(path, { limit_usd: '6' });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.equal(updated.body.limit_usd, '6');
    assert.equal((await tenant.admin.get(path)).body.limit_usd, '6');
    await assertMarkedDeprecated(tenant.admin.baseUrl, path, updated);
  });

  it('refuses a budget that is not exact, positive and bounded, or whose scope is not the project’s, with 400 or 404', async () => {
    const tenant = await newTenant(stack.api, 'budget-validation');
    const other = await newTenant(stack.api, 'budget-validation-other');
    const foreignAgent = await createAgent(other.admin);
    const base = { scope: { type: 'project' }, period: 'day', limit_usd: '1' };
    for (const [change, code] of [
      [{ limit_usd: '0' }, null],
      [{ limit_usd: '0.000' }, null],
      [{ limit_usd: '0.0000000000001' }, null],
      [{ limit_usd: '-1' }, null],
      [{ limit_usd: '1e3' }, null],
      [{ limit_usd: 5 }, null],
      [{ limit_usd: '1234567890123' }, null],
      [{ period: 'week' }, null],
      [{ thresholds: [0] }, null],
      [{ thresholds: [1.5] }, null],
      [{ thresholds: [0.5, 0.5] }, null],
      [{ scope: { type: 'agent' } }, null],
      [{ scope: { type: 'team', id: 'x' } }, null],
    ] as const) {
      const refused = await tenant.admin.post('/v1/budgets', { ...base, ...change });
      assert.equal(refused.status, 400, `${JSON.stringify(change)}: ${JSON.stringify(refused.body)}`);
      if (code) assert.equal(refused.body.error.code, code);
    }
    assert.equal((await tenant.admin.post('/v1/budgets', { ...base, scope: { type: 'agent', id: foreignAgent.id } })).status, 404);
    assert.equal((await tenant.admin.post('/v1/budgets', { ...base, scope: { type: 'api_key', id: 'key_unknown' } })).status, 404);
    assert.equal((await tenant.admin.post('/v1/budgets', { ...base, scope: { type: 'project', id: other.projectId } })).status, 404);
  });

  it('holds at most 100 budgets in a project, two asking for the last place at once getting one, and runs under them', async () => {
    // Each model call sums and locks every budget that applies to it, in the PostgreSQL every project shares:
    // 20,000 of them ran its lock table out of shared memory, failing the calls.
    const tenant = await newTenant(stack.api, 'budget-count');
    const budget = { scope: { type: 'project' }, period: 'month', limit_usd: '1000' };
    for (let made = 0; made < 99; made += 9) {
      const answers = await Promise.all(Array.from({ length: 9 }, () => tenant.admin.post('/v1/budgets', budget)));
      for (const answer of answers) assert.equal(answer.status, 201, JSON.stringify(answer.body));
    }
    const lastPlace = await Promise.all([tenant.admin.post('/v1/budgets', budget), tenant.admin.post('/v1/budgets', budget)]);
    assert.deepEqual(lastPlace.map((a) => a.status).sort(), [201, 409], JSON.stringify(lastPlace.map((a) => a.body)));
    const full = await tenant.admin.post('/v1/budgets', budget);
    assert.equal(full.status, 409, JSON.stringify(full.body));
    assert.deepEqual(
      [full.body.error.code, full.body.error.message],
      ['too_many_budgets', 'A project has at most 100 budgets; delete one first.'],
    );
    const created = lastPlace.find((a) => a.status === 201)!.body;
    assert.equal((await tenant.admin.delete(`/v1/budgets/${created.id}`)).status, 200);
    assert.equal((await tenant.admin.post('/v1/budgets', budget)).status, 201);
    // A run counts towards all of them at once.
    await completedRun(tenant.admin, (await createAgent(tenant.admin)).id);
  });

  it('starts a run while the agent’s spend is under its limit and refuses it at the limit, to the exact decimal, announcing each threshold once', async () => {
    const tenant = await newTenant(stack.api, 'budget-edge');
    const agent = await createAgent(tenant.admin);
    const bystander = await createAgent(tenant.admin);
    const created = await tenant.admin.post('/v1/budgets', {
      scope: { type: 'agent', id: agent.id },
      period: 'day',
      limit_usd: '0.0016',
      thresholds: [0.5, 1],
    });
    const budgetId = created.body.id;

    await completedRun(tenant.admin, agent.id);
    assert.equal((await tenant.admin.get(`/v1/budgets/${budgetId}`)).body.spent_usd, '0.0008');
    assert.deepEqual(await thresholdEvents(tenant, budgetId), [{ object: 'budget', id: budgetId }], 'half the limit: the 0.5 threshold');

    await completedRun(tenant.admin, agent.id); // 0.0008 < 0.0016: it starts, and brings the spend to the limit
    assert.equal((await thresholdEvents(tenant, budgetId)).length, 2, 'the limit: the 1.0 threshold');

    assertRefused(await run(tenant.admin, agent.id), budgetId, '0.0016', '0.0016');
    // The budget is the agent's: another agent of the project still runs.
    await completedRun(tenant.admin, bystander.id);

    // A trillionth of a dollar under the limit is under it: the run starts, but its model call, whose worst case
    // would not fit, is not made.
    const raised = await tenant.admin.patch(`/v1/budgets/${budgetId}`, { limit_usd: '0.001600000001' });
    assert.equal(raised.status, 200, JSON.stringify(raised.body));
    const starved = await run(tenant.admin, agent.id);
    assert.equal(starved.status, 200, JSON.stringify(starved.body));
    assert.deepEqual([starved.body.status, starved.body.error?.code, starved.body.cost], ['failed', 'cost_limit_reached', '0']);
    assert.equal((await tenant.admin.get(`/v1/budgets/${budgetId}`)).body.spent_usd, '0.0016');
    assert.equal((await thresholdEvents(tenant, budgetId)).length, 2, 'each threshold once per period');
    await tenant.admin.patch(`/v1/budgets/${budgetId}`, { limit_usd: '0.0016' });
    assertRefused(await run(tenant.admin, agent.id), budgetId, '0.0016', '0.0016');

    const audit = await tenant.admin.get(`/v1/audit-logs?action=run.create&order=desc&limit=1`);
    assert.deepEqual([audit.body.data[0]?.outcome.status, audit.body.data[0]?.outcome.error_code], [429, 'budget_exceeded']);
  });

  it('refuses a network run when one of its members is over its agent budget, and runs networks without that member', async () => {
    const tenant = await newTenant(stack.api, 'budget-member');
    const spent = await createAgent(tenant.admin);
    const fresh = await createAgent(tenant.admin);
    const created = await tenant.admin.post('/v1/budgets', {
      scope: { type: 'agent', id: spent.id },
      period: 'month',
      limit_usd: RUN_COST,
    });
    await completedRun(tenant.admin, spent.id);
    const withMember = await tenant.admin.post('/v1/networks', {
      name: 'with',
      members: [fresh.id, spent.id],
      router: { type: 'sequential' },
    });
    assertRefused(await tenant.admin.post(`/v1/networks/${withMember.body.id}/run`, { input: 'Go.' }), created.body.id, RUN_COST, RUN_COST);
    const without = await tenant.admin.post('/v1/networks', { name: 'without', members: [fresh.id], router: { type: 'sequential' } });
    const ran = await tenant.admin.post(`/v1/networks/${without.body.id}/run`, { input: 'Go.' });
    assert.equal(ran.status, 200, JSON.stringify(ran.body));
    assert.equal(ran.body.status, 'completed');
  });

  it('refuses the runs of a key over its budget, network runs included, and lets the project’s other keys run', async () => {
    const tenant = await newTenant(stack.api, 'budget-key');
    const agent = await createAgent(tenant.admin);
    const limited = await tenant.keyWith('agents:run', 'agents:read', 'agents:write');
    const keys = await tenant.admin.get('/v1/api-keys?limit=1');
    const keyId = keys.body.data[0].id;
    const budget = await tenant.admin.post('/v1/budgets', { scope: { type: 'api_key', id: keyId }, period: 'month', limit_usd: RUN_COST });
    assert.equal(budget.status, 201, JSON.stringify(budget.body));

    await completedRun(limited, agent.id);
    assertRefused(await run(limited, agent.id), budget.body.id, RUN_COST, RUN_COST);
    const network = await tenant.admin.post('/v1/networks', { name: 'solo', members: [agent.id], router: { type: 'sequential' } });
    assertRefused(await limited.post(`/v1/networks/${network.body.id}/run`, { input: 'Go.' }), budget.body.id, RUN_COST, RUN_COST);
    await completedRun(tenant.admin, agent.id);
    assert.equal(
      (await tenant.admin.get(`/v1/budgets/${budget.body.id}`)).body.spent_usd,
      RUN_COST,
      'the admin key’s spend is not the limited key’s',
    );
  });

  it('counts the whole project’s spend in the current UTC period only, network runs included', async () => {
    const tenant = await newTenant(stack.api, 'budget-project');
    const agent = await createAgent(tenant.admin);
    const budget = await tenant.admin.post('/v1/budgets', { scope: { type: 'project' }, period: 'day', limit_usd: '0.0020' });
    const { period_start: periodStart } = budget.body;
    // Usage from before today's period does not count; usage at its first instant does.
    await stack.api.services.db.query(
      `INSERT INTO usage_records (id, project_id, source, agent_id, model, provider, price_version, input_tokens, output_tokens, cached_tokens, cost, created_at)
       VALUES ('usage_yesterday', $1, 'run', $2, 'gpt-4.1-mini', 'openai', 'x', 0, 0, 0, 5, to_timestamp($3) - interval '1 microsecond'),
              ('usage_midnight', $1, 'run', $2, 'gpt-4.1-mini', 'openai', 'x', 0, 0, 0, 0.0004, to_timestamp($3))`,
      [tenant.projectId, agent.id, periodStart],
    );
    assert.equal((await tenant.admin.get(`/v1/budgets/${budget.body.id}`)).body.spent_usd, '0.0004');

    const network = await tenant.admin.post('/v1/networks', { name: 'solo', members: [agent.id], router: { type: 'sequential' } });
    const networkRun = await tenant.admin.post(`/v1/networks/${network.body.id}/run`, { input: 'Go.' });
    assert.equal(networkRun.status, 200, JSON.stringify(networkRun.body));
    assert.equal(networkRun.body.cost, RUN_COST);
    await completedRun(tenant.admin, agent.id); // 0.0012 < 0.0020
    assertRefused(await run(tenant.admin, agent.id), budget.body.id, '0.002', '0.002');
    assert.equal((await thresholdEvents(tenant, budget.body.id)).length, 3, '0.5, 0.8 and 1 of the limit');
  });

  it('announces a threshold that two usage records cross together, committed concurrently, exactly once', async () => {
    const tenant = await newTenant(stack.api, 'budget-race');
    const budget = await tenant.admin.post('/v1/budgets', {
      scope: { type: 'project' },
      period: 'month',
      limit_usd: '0.001',
      thresholds: [1],
    });
    const { db } = stack.api.services;
    // 2500 input tokens at $0.20 per million: $0.0005 each, so only both together reach the limit.
    const call = {
      projectId: tenant.projectId,
      source: 'extraction' as const,
      model: 'gpt-4.1-nano',
      provider: 'openai',
      usage: { input_tokens: 2500, output_tokens: 0, cached_tokens: 0 },
      price: { version: 'test', input_per_million: '0.20', output_per_million: '0.80', cached_input_per_million: '0.05' },
    };
    const first = await db.connect();
    const second = await db.connect();
    try {
      await first.query('BEGIN');
      await second.query('BEGIN');
      const pid = (await second.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
      assert.equal(await recordUsage(first, call), '0.0005');
      const secondRecorded = recordUsage(second, call);
      // The second waits for the first (for its budget lock, or before that for a row the first has written);
      // once the first commits, the second's sum sees both rows.
      await eventually(async () => {
        const { rows } = await db.query(`SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`, [pid]);
        assert.equal(rows.length, 1);
      });
      await first.query('COMMIT');
      assert.equal(await secondRecorded, '0.0005');
      await second.query('COMMIT');
    } finally {
      first.release();
      second.release();
    }
    assert.equal((await tenant.admin.get(`/v1/budgets/${budget.body.id}`)).body.spent_usd, '0.001');
    assert.equal((await thresholdEvents(tenant, budget.body.id)).length, 1);
  });
});
