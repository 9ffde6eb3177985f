import assert from 'node:assert/strict';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { eventually } from '../support/eventually.js';

/** A decimal USD string in millionths of a millionth, exactly. */
function picoUsd(decimal: string): bigint {
  const [whole, fraction = ''] = decimal.split('.');
  return BigInt(whole!) * 10n ** 12n + BigInt(fraction.padEnd(12, '0').slice(0, 12));
}

describe('hard cost caps', function () {
  this.timeout(120_000);
  let stack: RunsStack;
  let tools: TestToolServer;

  before(async () => {
    stack = await startRunsStack('cost-caps');
    tools = await startToolServer();
  });
  after(async () => {
    await tools.close();
    await stack.stop();
  });

  // gpt-4.1-mini: 0.40 USD a million input tokens, 1.60 a million output. With 1,000 output tokens allowed, a call's
  // worst case is 0.0016 USD for its output and a little for its input.
  const capped = { model_settings: { max_output_tokens: 1000 } };
  const lookup = () => ({ type: 'http', name: 'lookup', url: `${tools.url}/echo`, parameters: { type: 'object', properties: {} } });

  it('does not make the call a run cap has no room for: the run fails with cost_limit_reached, keeping its output, within its cap', async () => {
    const agent = await createAgent(stack.tenant.admin, { ...capped, tools: [lookup()], max_cost_usd: '0.003' });
    assert.equal(agent.max_cost_usd, '0.003');
    const asked = stack.openai.requests.length;
    stack.openai.enqueue({
      text: ['Looking it up.'],
      tool_calls: [{ name: 'lookup', arguments: '{}' }],
      usage: { input: 200, output: 1000 },
    });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Look it up.' });
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal(run.body.status, 'failed');
    assert.equal(run.body.error.code, 'cost_limit_reached');
    assert.match(run.body.error.message, /max_cost_usd \(0\.003 USD\)/);
    assert.equal(run.body.output.text, 'Looking it up.');
    assert.equal(run.body.max_cost_usd, '0.003');
    assert.equal(stack.openai.requests.length - asked, 1, 'the second model call was made');
    // The reserved call was held to the output it reserved.
    assert.equal(stack.openai.requests.at(-1)!.max_completion_tokens, 1000);
    assert.equal(run.body.cost, '0.00168');
    assert.deepEqual(
      run.body.steps.map((s: { type: string; status: string }) => `${s.type}:${s.status}`),
      ['model_call:completed', 'tool_call:completed'],
    );

    // A run may set its own cap in place of its agent's.
    stack.openai.enqueue({ tool_calls: [{ name: 'lookup', arguments: '{}' }], usage: { input: 200, output: 1000 } });
    stack.openai.enqueue({ text: ['Found.'], usage: { input: 300, output: 10 } });
    const roomier = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Look it up.', max_cost_usd: '0.01' });
    assert.equal(roomier.body.status, 'completed', JSON.stringify(roomier.body.error));
    assert.equal(roomier.body.max_cost_usd, '0.01');

    for (const bad of ['0', '-1', 'lots', '0.0000000000001', 1]) {
      const refused = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Hi.', max_cost_usd: bad });
      assert.equal(refused.status, 400, `max_cost_usd ${JSON.stringify(bad)}: ${JSON.stringify(refused.body)}`);
      assert.equal(refused.body.error.param, 'max_cost_usd');
    }
    const cleared = await stack.tenant.admin.patch(`/v1/agents/${agent.id}`, { max_cost_usd: null });
    assert.equal(cleared.body.max_cost_usd, null);
  });

  it('lets 50 runs at once spend no more than a budget that fits only some of them, not by a millionth of a dollar', async () => {
    const agent = await createAgent(stack.tenant.admin, capped);
    const budget = await stack.tenant.admin.post('/v1/budgets', {
      scope: { type: 'agent', id: agent.id },
      period: 'day',
      limit_usd: '0.02',
    });
    assert.equal(budget.status, 201, JSON.stringify(budget.body));
    // Every call that is made is held open until the others have been refused: they all reserve at once.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    stack.openai.setFallback({ text: ['Within ', 'budget.'], usage: { input: 60, output: 1000 }, pause: { chunks: 1, until: held } });
    try {
      const asked = stack.openai.requests.length;
      const started = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: `Question ${i}.`, wait: false }),
        ),
      );
      for (const run of started) assert.equal(run.status, 202, JSON.stringify(run.body));
      const ids = started.map((run) => run.body.id as string);
      // Those with no room end at once; the others are in their model call, waiting.
      await eventually(
        async () => {
          const listed = (await stack.tenant.admin.get(`/v1/runs?agent_id=${agent.id}&limit=100`)).body.data as { status: string }[];
          assert.equal(listed.filter((run) => run.status === 'failed').length + (stack.openai.requests.length - asked), 50);
        },
        { timeoutMs: 60_000, message: 'the runs did not all either call their model or fail' },
      );
      release();
      const ended = await Promise.all(
        ids.map((id) =>
          runSatisfying(stack.tenant.admin, id, (run) => run.status === 'completed' || run.status === 'failed', `run ${id}`, 60_000),
        ),
      );
      const completed = ended.filter((run) => run.status === 'completed');
      const failed = ended.filter((run) => run.status === 'failed');
      assert.ok(completed.length > 0 && failed.length > 0, `${completed.length} completed and ${failed.length} failed`);
      for (const run of failed) assert.equal(run.error.code, 'cost_limit_reached', JSON.stringify(run.error));
      assert.equal(stack.openai.requests.length - asked, completed.length, 'a model call was made for a run that failed');

      const spent = (await stack.tenant.admin.get(`/v1/budgets/${budget.body.id}`)).body.spent_usd as string;
      assert.ok(picoUsd(spent) <= picoUsd('0.02'), `the budget of 0.02 USD was overspent: ${spent} USD`);
      assert.equal(
        ended.reduce((sum, run) => sum + picoUsd(run.cost), 0n),
        picoUsd(spent),
      );
      // What is reserved goes with the calls: the budget's room is what was spent, not what was held.
      const { rows } = await stack.api.services.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM cost_reservations WHERE agent_id = $1`,
        [agent.id],
      );
      assert.equal(rows[0]!.n, 0);
    } finally {
      release();
      stack.openai.setFallback(null);
    }
  });

  it("holds a network's whole tree to its cap: the hop that would overspend it is not asked, and the network run fails with cost_limit_reached", async () => {
    const first = await createAgent(stack.tenant.admin, { ...capped, name: 'first' });
    const second = await createAgent(stack.tenant.admin, { ...capped, name: 'second' });
    const network = await stack.tenant.admin.post('/v1/networks', {
      name: 'capped',
      members: [first.id, second.id],
      router: { type: 'sequential' },
      max_cost_usd: '0.003',
    });
    assert.equal(network.status, 201, JSON.stringify(network.body));
    assert.equal(network.body.max_cost_usd, '0.003');
    const asked = stack.openai.requests.length;
    stack.openai.enqueue({ text: ['First draft.'], usage: { input: 100, output: 1000 } });
    const run = await stack.tenant.admin.post(`/v1/networks/${network.body.id}/run`, { input: 'Draft, then review.' });
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal(run.body.status, 'failed');
    assert.equal(run.body.error.code, 'cost_limit_reached');
    assert.equal(run.body.output.text, 'First draft.');
    assert.equal(stack.openai.requests.length - asked, 1, 'the second hop asked its model');
    assert.deepEqual(
      run.body.hops.map((hop: { status: string }) => hop.status),
      ['completed', 'failed'],
    );
    const hop = (await stack.tenant.admin.get(`/v1/runs/${run.body.hops[1].child_run_id}`)).body;
    assert.equal(hop.error.code, 'cost_limit_reached');
    assert.match(hop.error.message, /network run .* max_cost_usd \(0\.003 USD, for its hops too\)/);
    assert.ok(picoUsd(run.body.cost) <= picoUsd('0.003'), run.body.cost);
  });
});
