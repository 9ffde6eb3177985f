import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { newTenant, type Tenant } from '../support/api.js';
import { eventually } from '../support/eventually.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { addItems, createDataset } from '../../records/datasets.js';

const CLI = fileURLToPath(new URL('../../cli/agentplane.js', import.meta.url));
const SLOW = 'Take your time.';

/**
 * The model knows the answers to some questions: gpt-4.1-mini to q1 and q2, gpt-4.1-nano to q1, q2 and q3; each
 * answers `a<n>` when it knows and `no idea` otherwise. An agent told to take its time never finishes answering q4.
 */
function answerOf(body: Record<string, unknown>) {
  const messages = body.messages as { role: string; content: unknown }[];
  const question = String(messages.filter((m) => m.role === 'user').at(-1)?.content ?? '');
  const slow = messages.some((m) => m.role === 'system' && String(m.content).includes(SLOW));
  if (slow && question === 'q4') return { text: ['…'], hang: true };
  const known = body.model === 'gpt-4.1-nano' ? ['q1', 'q2', 'q3'] : ['q1', 'q2'];
  return { text: [known.includes(question) ? question.replace('q', 'a') : 'no idea'], usage: { input: 100, output: 10 } };
}

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

describe('comparing experiments, and agentplane eval', function () {
  this.timeout(90_000);
  let stack: RunsStack;
  let tenant: Tenant;
  let datasetId: string;
  let itemIds: string[];
  let agentId: string;
  let baseline: any;
  let candidate: any;

  const finished = (id: string) =>
    eventually(
      async () => {
        const experiment = await tenant.admin.get(`/v1/experiments/${id}`);
        assert.ok(!['queued', 'running'].includes(experiment.body.status), `still ${experiment.body.status}`);
        return experiment.body;
      },
      { timeoutMs: 30_000, message: `experiment ${id} did not finish` },
    );

  const startExperiment = async (body: Record<string, unknown>) => {
    const created = await tenant.admin.post('/v1/experiments', { dataset_id: datasetId, scorers: ['exact_match', 'completion'], ...body });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body;
  };

  const datasetOf = async (questions: string[]) => {
    const dataset = await createDataset(stack.api.services.db, tenant.projectId, {
      name: 'qa',
      description: '',
      metadata: {},
      scorers: [],
    });
    const items = await addItems(
      stack.api.services.db,
      dataset,
      questions.map((q) => ({ input: [{ role: 'user' as const, content: q }], fileIds: [], expected: q.replace('q', 'a'), metadata: {} })),
    );
    // Items come back ordered by when they were added to the millisecond, then by id: find each by its question.
    return { id: dataset.id, itemIds: questions.map((q) => items.find((item) => item.input[0]!.content === q)!.id) };
  };

  const runOf = async (experimentId: string, datasetItemId: string) => {
    const items = await tenant.admin.get(`/v1/experiments/${experimentId}/items?limit=100`);
    return items.body.data.find((item: any) => item.dataset_item_id === datasetItemId).run_id;
  };

  const agentplaneEval = (args: string[], key = tenant.admin.key!) =>
    new Promise<CliResult>((resolve) =>
      execFile(
        process.execPath,
        [CLI, 'eval', ...args],
        { env: { ...process.env, AGENTPLANE_API_URL: stack.api.url, AGENTPLANE_API_KEY: key }, timeout: 30_000 },
        (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? -1) : 0, stdout, stderr }),
      ),
    );

  before(async () => {
    stack = await startRunsStack('comparison');
    tenant = stack.tenant;
    stack.openai.setFallback(answerOf);
    ({ id: datasetId, itemIds } = await datasetOf(['q1', 'q2', 'q3', 'q4']));
    agentId = (await createAgent(tenant.admin, { model: 'gpt-4.1-mini' })).id;
    const [first, second] = [
      await startExperiment({ agent_id: agentId }),
      await startExperiment({ agent_id: agentId, overrides: { model: 'gpt-4.1-nano' } }),
    ];
    [baseline, candidate] = [await finished(first.id), await finished(second.id)];
  });

  after(async () => stack?.stop());

  describe('GET /v1/experiments/{id}/comparison', () => {
    it('compares each shared scorer, cost and latency over the paired items, with intervals and the items that changed most', async () => {
      const answer = await tenant.admin.get(`/v1/experiments/${candidate.id}/comparison?baseline=${baseline.id}`);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const comparison = answer.body;
      assert.deepEqual(
        [comparison.object, comparison.experiment_id, comparison.baseline_id, comparison.dataset_id, comparison.confidence],
        ['experiment.comparison', candidate.id, baseline.id, datasetId, 0.95],
      );
      assert.deepEqual(comparison.items, { experiment_completed: 4, baseline_completed: 4, paired: 4 });
      assert.deepEqual(
        comparison.metrics.map((m: any) => m.metric),
        ['completion', 'exact_match', 'cost_usd', 'latency_ms'],
      );
      const [completion, exactMatch, cost, latency] = comparison.metrics;
      assert.deepEqual(exactMatch.baseline, { mean: 0.5, count: 4 });
      assert.deepEqual(exactMatch.experiment, { mean: 0.75, count: 4 });
      assert.equal(exactMatch.difference.mean, 0.25);
      assert.equal(exactMatch.difference.pairs, 4);
      assert.equal(exactMatch.difference.resamples, 10_000);
      assert.ok(exactMatch.difference.ci_low >= 0 && exactMatch.difference.ci_low <= 0.25 && exactMatch.difference.ci_high >= 0.25);
      assert.deepEqual(exactMatch.changed, [
        {
          dataset_item_id: itemIds[2],
          baseline_run_id: await runOf(baseline.id, itemIds[2]!),
          experiment_run_id: await runOf(candidate.id, itemIds[2]!),
          baseline: 0,
          experiment: 1,
          difference: 1,
        },
      ]);
      // Every run completed either way: no difference, and nothing changed.
      assert.deepEqual(completion.difference, { mean: 0, ci_low: 0, ci_high: 0, pairs: 4, resamples: 10_000 });
      assert.deepEqual(completion.changed, []);
      // The same tokens on a cheaper model: the same saving on every item, so an interval of zero width below 0.
      assert.equal(cost.difference.pairs, 4);
      assert.ok(cost.difference.mean < 0);
      assert.equal(cost.difference.ci_low, cost.difference.mean);
      assert.equal(cost.difference.ci_high, cost.difference.mean);
      assert.equal(latency.difference.pairs, 4);
      assert.ok(latency.difference.ci_low <= latency.difference.mean && latency.difference.mean <= latency.difference.ci_high);
    });

    it('answers the same comparison, intervals included, every time it is asked', async () => {
      const path = `/v1/experiments/${candidate.id}/comparison?baseline=${baseline.id}&top=1`;
      const [first, second] = [await tenant.admin.get(path), await tenant.admin.get(path)];
      assert.deepEqual(first.body, second.body);
      assert.ok(first.body.metrics.every((m: any) => m.changed.length <= 1));
    });

    it('answers 409 while either is running, then compares the items a cancelled experiment completed', async () => {
      const slowAgent = await createAgent(tenant.admin, { model: 'gpt-4.1-mini', instructions: SLOW });
      const slow = await startExperiment({ agent_id: slowAgent.id, concurrency: 1 });
      const held = await eventually(
        async () => {
          const experiment = await tenant.admin.get(`/v1/experiments/${slow.id}`);
          assert.equal(experiment.body.item_counts.completed, 3);
          return experiment.body;
        },
        { message: 'the slow experiment did not reach its last item' },
      );
      assert.equal(held.status, 'running');
      const refused = await tenant.admin.get(`/v1/experiments/${candidate.id}/comparison?baseline=${slow.id}`);
      assert.equal(refused.status, 409);
      assert.equal(refused.body.error.code, 'experiment_not_finished');
      assert.match(refused.body.error.message, new RegExp(`${slow.id} is still running`));

      assert.equal((await tenant.admin.post(`/v1/experiments/${slow.id}/cancel`, {})).status, 200);
      await finished(slow.id);
      const answer = await tenant.admin.get(`/v1/experiments/${slow.id}/comparison?baseline=${baseline.id}`);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      assert.deepEqual(answer.body.items, { experiment_completed: 3, baseline_completed: 4, paired: 3 });
      assert.equal(answer.body.metrics.find((m: any) => m.metric === 'exact_match').difference.pairs, 3);
    });

    it('refuses a baseline on another dataset with 400, and another project’s experiment with 404', async () => {
      const other = await datasetOf(['q1']);
      const elsewhere = await finished(
        (await tenant.admin.post('/v1/experiments', { dataset_id: other.id, agent_id: agentId, scorers: ['exact_match'] })).body.id,
      );
      const mismatch = await tenant.admin.get(`/v1/experiments/${candidate.id}/comparison?baseline=${elsewhere.id}`);
      assert.equal(mismatch.status, 400);
      assert.equal(mismatch.body.error.code, 'dataset_mismatch');
      assert.equal(mismatch.body.error.param, 'baseline');

      const stranger = await newTenant(stack.api, 'stranger');
      for (const path of [`/v1/experiments/${candidate.id}/comparison?baseline=${baseline.id}`]) {
        const answer = await stranger.admin.get(path);
        assert.equal(answer.status, 404);
      }
      const theirs = await tenant.admin.get(`/v1/experiments/${candidate.id}/comparison?baseline=exp_nothing`);
      assert.equal(theirs.status, 404);
      const unscoped = await (
        await tenant.keyWith('agents:read')
      ).get(`/v1/experiments/${candidate.id}/comparison?baseline=${baseline.id}`);
      assert.equal(unscoped.status, 403);
    });
  });

  /**
   * A project of its own with 10 experiments running, the most it may have at once: every item of theirs hangs, so
   * they run until cancelled. `start` asks for one more of them; `fast` is an agent that answers its dataset at once.
   */
  async function fullProject(name: string) {
    const busy = await newTenant(stack.api, name);
    const slowAgent = await createAgent(busy.admin, { model: 'gpt-4.1-mini', instructions: SLOW });
    const fast = await createAgent(busy.admin, { model: 'gpt-4.1-mini' });
    const dataset = (await busy.admin.post('/v1/datasets', { name: 'q4' })).body;
    assert.equal((await busy.admin.post(`/v1/datasets/${dataset.id}/items`, { items: [{ input: 'q4' }] })).status, 201);
    const start = () => busy.admin.post('/v1/experiments', { dataset_id: dataset.id, agent_id: slowAgent.id, scorers: ['completion'] });
    const running: string[] = [];
    for (let i = 0; i < 9; i++) {
      const created = await start();
      assert.equal(created.status, 201, JSON.stringify(created.body));
      running.push(created.body.id);
    }
    // Two asking for the last place at once: one gets it.
    const [a, b] = await Promise.all([start(), start()]);
    assert.deepEqual([a.status, b.status].sort(), [201, 429]);
    running.push((a.status === 201 ? a : b).body.id);
    const cancelAll = async () => {
      for (const id of running) await busy.admin.post(`/v1/experiments/${id}/cancel`, {});
    };
    return { busy, dataset, fast, start, running, cancelAll };
  }

  it("refuses a project's experiment past the 10 it may have queued or running at once with 429, and not another project's", async () => {
    const { busy, start, running, cancelAll } = await fullProject('busy');
    const refused = await start();
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal(refused.body.error.type, 'rate_limit_error');
    assert.equal(refused.body.error.code, 'concurrent_experiments_exceeded');
    assert.equal(
      refused.body.error.message,
      'This project has 10 experiments queued or running, the most it may have at once; start this one once one of them ends, or cancel one.',
    );
    assert.equal(refused.headers.get('retry-after'), '5');
    const listed = await busy.admin.get('/v1/experiments?limit=100');
    assert.equal(listed.body.data.length, 10);

    // Another project's experiments are its own to count.
    const other = await datasetOf(['q1']);
    assert.equal((await tenant.admin.post('/v1/experiments', { dataset_id: other.id, agent_id: agentId })).status, 201);

    assert.equal((await busy.admin.post(`/v1/experiments/${running.shift()}/cancel`, {})).status, 200);
    const again = await start();
    assert.equal(again.status, 201, JSON.stringify(again.body));
    running.push(again.body.id);
    await cancelAll();
  });

  describe('agentplane eval', () => {
    it('runs the experiment, prints the summary and the comparison table, and exits 0 when every gate passes', async () => {
      const result = await agentplaneEval([
        ...['--dataset', datasetId, '--agent', agentId, '--model', 'gpt-4.1-nano', '--baseline', baseline.id],
        ...[
          '--scorer',
          'exact_match',
          '--scorer',
          'completion',
          '--fail-if',
          'exact_match < 0.7',
          '--fail-if',
          'exact_match.difference < 0',
        ],
      ]);
      assert.equal(result.code, 0, result.stdout + result.stderr);
      assert.match(result.stdout, /: completed in /);
      assert.match(result.stdout, /metric\s+baseline\s+candidate\s+difference \[95% CI\]\s+pairs/);
      assert.match(result.stdout, /exact_match\s+0\.500\s+0\.750\s+\+0\.250 \[\+?0\.\d{3}, \+[01]\.\d{3}\]\s+4/);
      assert.match(result.stdout, /pass {2}exact_match < 0\.7 {2}\(0\.75\)/);
      assert.match(result.stdout, /Every gate passed\./);
    });

    it('exits 1 when a gate fails, and prints the result as JSON with --json', async () => {
      const result = await agentplaneEval([
        '--dataset',
        datasetId,
        '--agent',
        agentId,
        '--scorer',
        'exact_match',
        '--fail-if',
        'exact_match < 0.8',
        '--json',
      ]);
      assert.equal(result.code, 1, result.stderr);
      const printed = JSON.parse(result.stdout);
      assert.equal(printed.experiment.status, 'completed');
      assert.equal(printed.experiment.summary.scores.exact_match.mean, 0.5);
      assert.deepEqual(printed.gates, [{ gate: 'exact_match < 0.8', value: 0.5, failed: true }]);
      assert.equal(printed.passed, false);
      assert.equal(printed.comparison, null);
    });

    it('exits 2 on a usage error, before running anything', async () => {
      const experimentsBefore = (await tenant.admin.get('/v1/experiments?limit=100')).body.data.length;
      const badGate = await agentplaneEval(['--dataset', datasetId, '--agent', agentId, '--fail-if', 'exact_match is low']);
      assert.equal(badGate.code, 2);
      assert.match(badGate.stderr, /--fail-if 'exact_match is low' is not '<metric> <op> <number>'/);
      assert.equal((await tenant.admin.get('/v1/experiments?limit=100')).body.data.length, experimentsBefore);
    });

    it('exits 3 when the experiment ends cancelled rather than completed, and says so on stderr', async () => {
      // Only an internal fault ends an experiment `failed` (a failed item leaves it `completed`); one cancelled while
      // the command waits (from the console, another job) ends it the other way the command treats alike.
      const slowAgent = await createAgent(tenant.admin, { model: 'gpt-4.1-mini', instructions: SLOW });
      const running = agentplaneEval(['--dataset', datasetId, '--agent', slowAgent.id, '--fail-if', 'exact_match < 0.5']);
      const id = await eventually(
        async () => {
          const [latest] = (await tenant.admin.get(`/v1/experiments?dataset_id=${datasetId}&limit=1`)).body.data;
          assert.equal(latest?.agent_id, slowAgent.id, 'the command has not made its experiment yet');
          return latest.id as string;
        },
        { message: 'the command made no experiment' },
      );
      assert.equal((await tenant.admin.post(`/v1/experiments/${id}/cancel`, {})).status, 200);
      const result = await running;
      assert.equal(result.code, 3, result.stdout + result.stderr);
      assert.match(result.stdout, new RegExp(`^Experiment ${id} \\(.*\\): cancelled in `));
      assert.doesNotMatch(result.stdout, /gate/i, 'no gate is reported as passed or failed');
      assert.equal(result.stderr, `agentplane eval: ${id} ended cancelled; its gates were not checked.\n`);
    });

    it('waits for a place while its project has 10 experiments going, and runs the experiment once one ends', async () => {
      const { busy, dataset, fast, running, cancelAll } = await fullProject('busy ci');
      const cli = spawn(process.execPath, [CLI, 'eval', '--dataset', dataset.id, '--agent', fast.id, '--timeout', '60'], {
        env: { ...process.env, AGENTPLANE_API_URL: stack.api.url, AGENTPLANE_API_KEY: busy.admin.key! },
      });
      let [stdout, stderr] = ['', ''];
      cli.stdout.on('data', (chunk) => (stdout += chunk));
      cli.stderr.on('data', (chunk) => (stderr += chunk));
      const exited = new Promise<number | null>((resolve) => cli.on('close', resolve));
      try {
        await eventually(async () => assert.match(stderr, /has 10 experiments queued or running.* Waiting for a place\.\n$/), {
          message: 'agentplane eval did not say it waits for a place',
        });
        assert.equal((await busy.admin.post(`/v1/experiments/${running.shift()}/cancel`, {})).status, 200);
        assert.equal(await exited, 0, stdout + stderr);
        assert.match(stdout, /: completed in /);
      } finally {
        cli.kill();
        await cancelAll();
      }
    });

    it('exits 4, running nothing, when its project has no place for the experiment within --timeout', async () => {
      const { busy, dataset, fast, cancelAll } = await fullProject('busy gate');
      const result = await agentplaneEval(['--dataset', dataset.id, '--agent', fast.id, '--timeout', '3'], busy.admin.key!);
      await cancelAll();
      assert.equal(result.code, 4, result.stdout + result.stderr);
      assert.equal(result.stdout, '');
      assert.match(result.stderr, /the project had no place for the experiment within --timeout; nothing was run\.\n$/);
      const listed = await busy.admin.get('/v1/experiments?limit=100');
      assert.equal(listed.body.data.filter((e: { agent_id: string }) => e.agent_id === fast.id).length, 0);
    });

    it('exits 4 when the experiment does not finish within --timeout, and cancels it', async () => {
      const slowAgent = await createAgent(tenant.admin, { model: 'gpt-4.1-mini', instructions: SLOW });
      const result = await agentplaneEval(['--dataset', datasetId, '--agent', slowAgent.id, '--timeout', '2']);
      assert.equal(result.code, 4, result.stdout + result.stderr);
      const id = /(exp_\w+) did not finish in time/.exec(result.stderr)?.[1];
      assert.ok(id, result.stderr);
      assert.equal((await finished(id)).status, 'cancelled');
    });
  });
});
