import assert from 'node:assert/strict';
import { newTenant, type Tenant } from '../support/api.js';
import { eventually } from '../support/eventually.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { runWorkflowId } from '../../workflows/runs/client.js';
import { networkRunWorkflowId } from '../../workflows/networks/client.js';
import { runJudgeWorkflowId } from '../../workflows/quality/ids.js';
import { backfillWorkflowId } from '../../workflows/quality/client.js';
import { WorkflowNotFoundError } from '@temporalio/client';

type Score = { scorer: string; value: number; explanation: string };
type Result = {
  scorer: string;
  mean: number;
  count: number;
  distribution: number[];
  agent_id?: string;
  model?: string;
  metadata?: Record<string, string | null>;
};
type Bucket = { start_time: number; end_time: number; results: Result[] };

const JUDGE = 'gpt-4.1-nano';
const AGENT_MODEL = 'gpt-4.1-mini';
const DAY = 86_400;

const scoreOf = (run: { scores: Score[] }, scorer: string) => run.scores.find((s) => s.scorer === scorer);
const bins = (...filled: [number, number][]) => {
  const distribution = Array<number>(10).fill(0);
  for (const [bin, count] of filled) distribution[bin] = count;
  return distribution;
};

describe('quality: run scores, the judge, feedback, analytics and backfill', function () {
  this.timeout(180_000);
  let stack: RunsStack;
  let client: RunsStack['tenant']['admin'];

  /** Waits for the run's judge, if it has one: the judge works after the run has ended. */
  const judged = async (runId: string) => {
    await stack.api.services.temporal.workflow
      .getHandle(runJudgeWorkflowId(runId))
      .result()
      .catch((err: Error) => {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
      });
  };

  /** The run once its workflow and its judge have finished. */
  const settled = async (runId: string, network = false) => {
    await stack.api.services.temporal.workflow.getHandle(network ? networkRunWorkflowId(runId) : runWorkflowId(runId)).result();
    await judged(runId);
    return (await client.get(`/v1/runs/${runId}`)).body;
  };

  const run = async (tenant: Tenant, agentId: string, body: Record<string, unknown>) => {
    const answered = await tenant.admin.post(`/v1/agents/${agentId}/run`, body);
    assert.ok([200, 202].includes(answered.status), JSON.stringify(answered.body));
    await stack.api.services.temporal.workflow.getHandle(runWorkflowId(answered.body.id)).result();
    await judged(answered.body.id);
    return (await tenant.admin.get(`/v1/runs/${answered.body.id}`)).body;
  };

  const answer = (text: string) => stack.openai.enqueue({ model: AGENT_MODEL, text: [text], usage: { input: 10, output: 3 } });

  before(async () => {
    stack = await startRunsStack('quality', { AGENTPLANE_JUDGE_MODEL: JUDGE });
    client = stack.tenant.admin;
    stack.openai.setFallback({
      model: JUDGE,
      tool_calls: [
        { name: 'record_verdict', arguments: JSON.stringify({ score: 0.8, rationale: 'Answers the question; supported by the context.' }) },
      ],
      usage: { input: 1000, output: 100 },
    });
  });

  after(async () => stack?.stop());

  describe('scores of each finished run', () => {
    it('scores a completed run: completion 1, latency, a non-empty answer; no tool or context to judge by', async () => {
      const agent = await createAgent(client);
      answer('Paris is the capital of France.');
      const done = await run(stack.tenant, agent.id, { input: 'What is the capital of France?' });
      assert.equal(done.status, 'completed');
      assert.deepEqual(
        done.scores.map((s: Score) => s.scorer),
        ['completion', 'latency', 'non_empty', 'judge'],
      );
      assert.deepEqual(scoreOf(done, 'completion'), { ...scoreOf(done, 'completion'), value: 1, explanation: 'The run ended completed.' });
      const latency = scoreOf(done, 'latency')!;
      const seconds = done.completed_at - done.created_at;
      assert.ok(seconds <= 5 ? latency.value === 1 : latency.value < 1, `${seconds} s scored ${latency.value}`);
      assert.match(latency.explanation, /The run took \d+\.\d s/);
      assert.equal(scoreOf(done, 'non_empty')!.value, 1);
      assert.equal(scoreOf(done, 'tool_errors'), undefined);
      assert.equal(scoreOf(done, 'groundedness'), undefined);
    });

    it('scores a failed run 0 for completion and for its empty answer, and does not judge it', async () => {
      const agent = await createAgent(client);
      stack.openai.enqueue({ model: AGENT_MODEL, status: 400 });
      const failed = await run(stack.tenant, agent.id, { input: 'Hi.' });
      assert.equal(failed.status, 'failed');
      assert.deepEqual(scoreOf(failed, 'completion'), { ...scoreOf(failed, 'completion'), value: 0, explanation: 'The run ended failed.' });
      assert.deepEqual(scoreOf(failed, 'non_empty'), { ...scoreOf(failed, 'non_empty'), value: 0, explanation: 'The run gave no answer.' });
      assert.equal(scoreOf(failed, 'judge'), undefined);
    });

    it('scores a cancelled run 0 for completion', async () => {
      const agent = await createAgent(client);
      stack.openai.enqueue({ model: AGENT_MODEL, text: ['Thinking'], hang: true });
      const started = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Take your time.', wait: false });
      const early = await client.post(`/v1/runs/${started.body.id}/feedback`, { score: 1 });
      assert.equal(early.status, 409);
      assert.equal(early.body.error.code, 'run_not_finished');
      await eventually(async () => assert.equal((await client.get(`/v1/runs/${started.body.id}`)).body.status, 'in_progress'));
      await client.post(`/v1/runs/${started.body.id}/cancel`, {});
      const cancelled = await settled(started.body.id);
      assert.equal(cancelled.status, 'cancelled');
      assert.equal(scoreOf(cancelled, 'completion')!.value, 0);
      assert.equal(scoreOf(cancelled, 'completion')!.explanation, 'The run ended cancelled.');
    });

    it('scores tool_errors as the share of tool calls without an error', async () => {
      const agent = await createAgent(client);
      stack.openai.enqueue({ model: AGENT_MODEL, tool_calls: [{ name: 'no_such_tool', arguments: '{}' }], usage: { input: 5, output: 2 } });
      answer('I could not use the tool.');
      const done = await run(stack.tenant, agent.id, { input: 'Use a tool.' });
      assert.equal(done.status, 'completed');
      assert.equal(done.steps[1].is_error, true);
      assert.deepEqual(scoreOf(done, 'tool_errors'), {
        ...scoreOf(done, 'tool_errors'),
        value: 0,
        explanation: '0 of 1 tool call(s) succeeded.',
      });
    });

    it('scores an answer grounded in an attached file 1, and one the file does not support 0', async () => {
      const file = await client.upload({
        purpose: 'attachment',
        file: { data: Buffer.from('The Zurich office opens on Monday at nine.'), filename: 'notes.txt', type: 'text/plain' },
      });
      await client.settledFile(file.body.id);
      const agent = await createAgent(client);
      answer('The Zurich office opens Monday at nine.');
      const grounded = await run(stack.tenant, agent.id, { input: 'When does the office open?', file_ids: [file.body.id] });
      assert.equal(scoreOf(grounded, 'groundedness')!.value, 1, scoreOf(grounded, 'groundedness')!.explanation);
      answer('The Berlin warehouse closed Friday.');
      const ungrounded = await run(stack.tenant, agent.id, { input: 'When does the office open?', file_ids: [file.body.id] });
      const score = scoreOf(ungrounded, 'groundedness')!;
      assert.equal(score.value, 0);
      assert.equal(
        score.explanation,
        '0 of 4 content word(s) of the answer appear in the context it was given. Not in the context: berlin, warehouse, closed, friday.',
      );
    });

    it('scores groundedness against the passages search_context cited', async () => {
      const memo = await client.upload({
        purpose: 'context',
        file: {
          data: Buffer.from('Acme Corporation acquired Globex in March for twelve million dollars.'),
          filename: 'memo.txt',
          type: 'text/plain',
        },
      });
      await client.settledFile(memo.body.id);
      const agent = await createAgent(client);
      const search = {
        model: AGENT_MODEL,
        tool_calls: [{ name: 'search_context', arguments: JSON.stringify({ query: 'Globex' }) }],
        usage: { input: 5, output: 2 },
      };
      stack.openai.enqueue(search);
      answer('Acme acquired Globex in March [1].');
      const grounded = await run(stack.tenant, agent.id, { input: 'Who acquired Globex?' });
      assert.ok(grounded.output.citations.length > 0, 'the answer cites the memo');
      assert.equal(scoreOf(grounded, 'groundedness')!.value, 1, scoreOf(grounded, 'groundedness')!.explanation);
      stack.openai.enqueue(search);
      answer('Initech bought Globex in July.');
      const half = await run(stack.tenant, agent.id, { input: 'Who acquired Globex?' });
      // initech, bought, july are not in the memo; globex is.
      assert.equal(scoreOf(half, 'groundedness')!.value, 0.25, scoreOf(half, 'groundedness')!.explanation);
    });

    it('scores a network run and its hop', async () => {
      const member = await createAgent(client, { name: 'member' });
      const network = await client.post('/v1/networks', { name: 'solo', members: [member.id], router: { type: 'sequential' } });
      answer('The network answers.');
      const started = await client.post(`/v1/networks/${network.body.id}/run`, { input: 'Go.' });
      const parent = await settled(started.body.id, true);
      assert.equal(parent.status, 'completed');
      assert.equal(scoreOf(parent, 'completion')!.value, 1);
      assert.equal(scoreOf(parent, 'non_empty')!.value, 1);
      await judged(parent.hops[0].child_run_id);
      const hop = (await client.get(`/v1/runs/${parent.hops[0].child_run_id}`)).body;
      assert.equal(scoreOf(hop, 'completion')!.value, 1);
      assert.equal(scoreOf(hop, 'judge')!.value, 0.8);
      const rows = await stack.api.services.db.query<{ run_id: string; network_id: string }>(
        'SELECT DISTINCT run_id, network_id FROM run_scores WHERE run_id = ANY($1)',
        [[parent.id, hop.id]],
      );
      assert.deepEqual(
        rows.rows.map((r) => r.network_id),
        [network.body.id, network.body.id],
        "a hop's scores carry its network",
      );
    });
  });

  describe('the judge', () => {
    it('scores the answer with its rationale and records what the call cost, as usage of the run', async () => {
      const agent = await createAgent(client);
      answer('Water boils at 100 degrees Celsius at sea level.');
      const done = await run(stack.tenant, agent.id, { input: 'At what temperature does water boil?' });
      assert.deepEqual(scoreOf(done, 'judge'), {
        ...scoreOf(done, 'judge'),
        value: 0.8,
        explanation: 'Answers the question; supported by the context.',
      });
      const asked = stack.openai.requests.filter((r) => r.model === JUDGE).at(-1)!;
      assert.match(JSON.stringify(asked.messages), /Water boils at 100 degrees Celsius at sea level\./);
      const usage = await stack.api.services.db.query<{
        source: string;
        model: string;
        agent_id: string;
        cost: string;
        input_tokens: string;
      }>(`SELECT source, model, agent_id, cost::text, input_tokens::text FROM usage_records WHERE run_id = $1 AND source = 'judge'`, [
        done.id,
      ]);
      // gpt-4.1-nano: $0.10 in and $0.40 out per million: 1,000 in and 100 out.
      assert.deepEqual(usage.rows, [{ source: 'judge', model: JUDGE, agent_id: agent.id, cost: '0.00014', input_tokens: '1000' }]);
    });

    it('leaves the judge score out, and the run completed, when the judge provider stays down', async () => {
      const agent = await createAgent(client);
      for (let i = 0; i < 3; i++) stack.openai.enqueue({ model: JUDGE, status: 503 });
      answer('An answer the judge never reads.');
      const before = stack.openai.requests.filter((r) => r.model === JUDGE).length;
      const done = await run(stack.tenant, agent.id, { input: 'Hi.' });
      assert.equal(done.status, 'completed');
      assert.equal(stack.openai.requests.filter((r) => r.model === JUDGE).length - before, 3, 'three attempts, then no more');
      assert.equal(scoreOf(done, 'judge'), undefined);
      assert.equal(scoreOf(done, 'completion')!.value, 1);
    });

    it("does not ask the judge once the run has spent its project's budget, and keeps the other scores", async () => {
      const tenant = await newTenant(stack.api, 'quality-judge-budget');
      const agent = await createAgent(tenant.admin);
      // The budget comes while the run's model call is under way, so the call is made and its cost spends it.
      let release!: () => void;
      const held = new Promise<void>((resolve) => (release = resolve));
      stack.openai.enqueue({
        model: AGENT_MODEL,
        text: ['An answer ', 'that spends the budget.'],
        usage: { input: 10, output: 3 },
        pause: { chunks: 1, until: held },
      });
      const before = stack.openai.requests.filter((r) => r.model === JUDGE).length;
      const asked = stack.openai.requests.length;
      const running = run(tenant, agent.id, { input: 'Hi.' });
      await eventually(() => assert.ok(stack.openai.requests.length > asked), { timeoutMs: 30_000, message: 'the model was not asked' });
      const budget = await tenant.admin.post('/v1/budgets', { scope: { type: 'project' }, period: 'month', limit_usd: '0.000001' });
      assert.equal(budget.status, 201, JSON.stringify(budget.body));
      release();
      const done = await running;
      assert.equal(done.status, 'completed');
      assert.equal(stack.openai.requests.filter((r) => r.model === JUDGE).length - before, 0, 'the judge was not asked');
      assert.equal(scoreOf(done, 'judge'), undefined);
      assert.equal(scoreOf(done, 'completion')!.value, 1);
      const usage = await stack.api.services.db.query(`SELECT 1 FROM usage_records WHERE run_id = $1 AND source = 'judge'`, [done.id]);
      assert.equal(usage.rowCount, 0);
    });
  });

  describe('feedback', () => {
    let runId: string;
    before(async () => {
      const agent = await createAgent(client);
      answer('Fine.');
      runId = (await run(stack.tenant, agent.id, { input: 'How are you?' })).id;
    });

    it('adds a human score with its comment, replaces it under the same name, and audits each', async () => {
      const first = await client.post(`/v1/runs/${runId}/feedback`, { score: 0.25, comment: 'Too short.' });
      assert.equal(first.status, 200, JSON.stringify(first.body));
      assert.deepEqual(scoreOf(first.body, 'human'), { ...scoreOf(first.body, 'human'), value: 0.25, explanation: 'Too short.' });
      const thumbs = await client.post(`/v1/runs/${runId}/feedback`, { score: 'thumbs_up', name: 'reviewer' });
      assert.equal(scoreOf(thumbs.body, 'human:reviewer')!.value, 1);
      const again = await client.post(`/v1/runs/${runId}/feedback`, { score: 0.5, comment: 'Better on reflection.' });
      assert.deepEqual(
        again.body.scores.filter((s: Score) => s.scorer.startsWith('human')).map((s: Score) => [s.scorer, s.value]),
        [
          ['human', 0.5],
          ['human:reviewer', 1],
        ],
      );
      const audit = await client.get(`/v1/audit-logs?limit=100`);
      const entries = audit.body.data.filter(
        (e: { action: string; target: { id: string } }) => e.action === 'run.feedback' && e.target.id === runId,
      );
      assert.equal(entries.length, 3);
    });

    it('refuses a score outside [0, 1], an unknown thumb, a bad name and unknown fields with 400', async () => {
      for (const [body, param] of [
        [{ score: 1.5 }, 'score'],
        [{ score: -0.1 }, 'score'],
        [{ score: 'meh' }, 'score'],
        [{}, 'score'],
        [{ score: 1, name: 'Has Spaces' }, 'name'],
        [{ score: 1, comment: 'x'.repeat(2001) }, 'comment'],
        [{ score: 1, rating: 5 }, 'rating'],
      ] as const) {
        const refused = await client.post(`/v1/runs/${runId}/feedback`, body);
        assert.equal(refused.status, 400, JSON.stringify(body));
        assert.equal(refused.body.error.param, param, JSON.stringify(refused.body));
      }
      // A name is told the rule it breaks.
      const named = await client.post(`/v1/runs/${runId}/feedback`, { score: 1, name: 'Lead Reviewer' });
      assert.match(named.body.error.message, /^`name` is not valid: The feedback's name, 1 to 40 lowercase letters, digits, `_` and `-`/);
    });

    it("answers 404 for another project's run, and 403 to a key without agents:run", async () => {
      const other = await newTenant(stack.api, 'quality-other');
      assert.equal((await other.admin.post(`/v1/runs/${runId}/feedback`, { score: 1 })).status, 404);
      const reader = await stack.tenant.keyWith('agents:read');
      assert.equal((await reader.post(`/v1/runs/${runId}/feedback`, { score: 1 })).status, 403);
    });
  });

  describe('analytics and backfill', () => {
    let tenant: Tenant;
    let origin: number;
    const ids = { a: '', b: '', c: '' };
    const agents = { one: '', two: '' };
    const report = async (query: string, who = tenant.admin) => {
      const answered = await who.get(`/v1/analytics/quality?start_time=${origin}&end_time=${origin + 2 * DAY}&${query}`);
      assert.equal(answered.status, 200, JSON.stringify(answered.body));
      return answered.body as { data: Bucket[]; has_more: boolean; next_page: string | null };
    };
    const results = (bucket: Bucket, scorer: string) => bucket.results.filter((r) => r.scorer === scorer);

    before(async () => {
      tenant = await newTenant(stack.api, 'quality-analytics');
      origin = Math.floor(Date.now() / 1000) - DAY - 60;
      agents.one = (await createAgent(tenant.admin, { name: 'one' })).id;
      agents.two = (await createAgent(tenant.admin, { name: 'two' })).id;
      answer('Done.');
      ids.a = (await run(tenant, agents.one, { input: 'A.', metadata: { team: 'search' } })).id;
      stack.openai.enqueue({ model: AGENT_MODEL, status: 400 });
      ids.b = (await run(tenant, agents.one, { input: 'B.', metadata: { team: 'search' } })).id;
      answer('Fine.');
      ids.c = (await run(tenant, agents.two, { input: 'C.', metadata: { team: 'ops' } })).id;
      assert.equal((await tenant.admin.post(`/v1/runs/${ids.a}/feedback`, { score: 0.25 })).status, 200);
      // Run c as if it had run a day earlier: the backfill below carries its scores to that day.
      await stack.api.services.db.query(
        `UPDATE runs SET created_at = created_at - interval '1 day', started_at = started_at - interval '1 day', completed_at = completed_at - interval '1 day' WHERE id = $1`,
        [ids.c],
      );
    });

    it('backfills a range: scores replaced, not added, and every score of a run moved to when it ran', async () => {
      const count = async () =>
        Number(
          (
            await stack.api.services.db.query<{ n: string }>('SELECT count(*) AS n FROM run_scores WHERE project_id = $1', [
              tenant.projectId,
            ])
          ).rows[0]!.n,
        );
      const rowsBefore = await count();
      const started = await tenant.admin.post('/v1/analytics/quality/backfill', { start_time: origin, end_time: origin + 2 * DAY });
      assert.equal(started.status, 202, JSON.stringify(started.body));
      assert.match(started.body.id, /^qbf_/);
      assert.equal(started.body.runs_total, 3);
      assert.deepEqual(started.body.scorers, ['completion', 'latency', 'tool_errors', 'non_empty', 'groundedness']);
      const done = await eventually(async () => {
        const now = await tenant.admin.get(`/v1/analytics/quality/backfills/${started.body.id}`);
        assert.equal(now.body.status, 'completed');
        return now.body;
      });
      assert.equal(done.runs_scored, 3);
      assert.equal(await count(), rowsBefore);
      // Dispatched fairly among projects, its judge runs with it: the project is its fairness key.
      const workflow = await stack.api.services.temporal.workflow.getHandle(backfillWorkflowId(started.body.id)).describe();
      assert.equal(workflow.priority?.fairnessKey, tenant.projectId);

      const judged = stack.openai.requests.filter((r) => r.model === JUDGE).length;
      const withJudge = await tenant.admin.post('/v1/analytics/quality/backfill', {
        start_time: origin,
        end_time: origin + 2 * DAY,
        scorers: ['judge', 'completion'],
      });
      await eventually(async () =>
        assert.equal((await tenant.admin.get(`/v1/analytics/quality/backfills/${withJudge.body.id}`)).body.status, 'completed'),
      );
      assert.equal(
        stack.openai.requests.filter((r) => r.model === JUDGE).length - judged,
        2,
        'the two runs with an answer are judged again',
      );
      assert.equal(await count(), rowsBefore);
      const judgeUsage = await stack.api.services.db.query(`SELECT 1 FROM usage_records WHERE project_id = $1 AND source = 'judge'`, [
        tenant.projectId,
      ]);
      assert.equal(judgeUsage.rowCount, 4, 'two judge calls at the end of the runs, two in the backfill');
    });

    it('answers per scorer the mean, count and distribution in each bucket, computed by hand', async () => {
      const page = await report('bucket_width=1d');
      assert.equal(page.data.length, 2);
      assert.deepEqual([page.has_more, page.next_page], [false, null]);
      const [yesterday, today] = page.data as [Bucket, Bucket];
      assert.deepEqual(
        [yesterday.start_time, yesterday.end_time, today.start_time, today.end_time],
        [origin, origin + DAY, origin + DAY, origin + 2 * DAY],
      );
      // Yesterday: run c, completed with an answer. Today: run a (completed), run b (failed, no answer).
      assert.deepEqual(
        results(yesterday, 'completion').map(({ mean, count, distribution }) => ({ mean, count, distribution })),
        [{ mean: 1, count: 1, distribution: bins([9, 1]) }],
      );
      assert.deepEqual(
        results(today, 'completion').map(({ mean, count, distribution }) => ({ mean, count, distribution })),
        [{ mean: 0.5, count: 2, distribution: bins([0, 1], [9, 1]) }],
      );
      assert.deepEqual(
        results(today, 'non_empty').map(({ mean, count }) => ({ mean, count })),
        [{ mean: 0.5, count: 2 }],
      );
      assert.deepEqual(
        results(today, 'human').map(({ mean, count, distribution }) => ({ mean, count, distribution })),
        [{ mean: 0.25, count: 1, distribution: bins([2, 1]) }],
      );
      assert.deepEqual(
        results(today, 'judge').map(({ mean, count, distribution }) => ({ mean, count, distribution })),
        [{ mean: 0.8, count: 1, distribution: bins([8, 1]) }],
      );
      assert.deepEqual(
        results(yesterday, 'judge').map(({ count }) => count),
        [1],
      );
      assert.deepEqual(
        yesterday.results.map((r) => r.scorer),
        ['completion', 'latency', 'non_empty', 'judge'],
      );
    });

    it('groups by agent, model and a metadata key, and filters by them and by scorer', async () => {
      const byAgent = await report('group_by=agent_id&scorer=completion');
      assert.deepEqual(
        byAgent.data.map((b) => b.results.map((r) => [r.agent_id, r.count, r.mean])),
        [[[agents.two, 1, 1]], [[agents.one, 2, 0.5]]],
      );
      const byTeam = await report('group_by=metadata.team,model&scorer=non_empty');
      assert.deepEqual(
        byTeam.data.map((b) => b.results.map((r) => [r.metadata, r.model, r.count])),
        [[[{ team: 'ops' }, AGENT_MODEL, 1]], [[{ team: 'search' }, AGENT_MODEL, 2]]],
      );
      const search = await report('metadata[team]=search&scorer=completion');
      assert.deepEqual(
        search.data.map((b) => b.results.map((r) => r.count)),
        [[], [2]],
      );
      const two = await report(`agent_id=${agents.two}`);
      const both = await report(`agent_id=${agents.one},${agents.two}&scorer=completion`);
      assert.deepEqual(
        both.data.map((b) => b.results.map((r) => r.count)),
        [[1], [2]],
      );
      assert.deepEqual(
        two.data.map((b) => b.results.length > 0),
        [true, false],
      );
      const none = await report('model=no-such-model');
      assert.deepEqual(
        none.data.map((b) => b.results),
        [[], []],
      );
      assert.deepEqual(
        (await report('scorer=human:nobody')).data.map((b) => b.results),
        [[], []],
      );
    });

    it('pages over buckets with next_page', async () => {
      const first = await report('bucket_width=1d&limit=1&scorer=completion');
      assert.equal(first.data.length, 1);
      assert.equal(first.data[0]!.start_time, origin);
      assert.equal(first.has_more, true);
      const second = await report(`bucket_width=1d&limit=1&scorer=completion&page=${first.next_page}`);
      assert.deepEqual(
        second.data.map((b) => [b.start_time, b.results[0]!.count]),
        [[origin + DAY, 2]],
      );
      assert.deepEqual([second.has_more, second.next_page], [false, null]);
      const hourly = await report('bucket_width=1h&limit=24&scorer=completion');
      assert.equal(hourly.data.length, 24);
      assert.equal(hourly.has_more, true);
      assert.equal(
        hourly.data.reduce((n, b) => n + b.results.reduce((m, r) => m + r.count, 0), 0),
        1,
        "the first day's 24 hours hold run c alone",
      );
    });

    it('answers 400 naming the parameter for a bad range, width, limit, grouping or cursor', async () => {
      const now = Math.floor(Date.now() / 1000);
      for (const [query, param, code] of [
        [`end_time=${now}`, 'start_time', 'missing_parameter'],
        [`start_time=${now}&end_time=${now - 10}`, 'end_time', 'invalid_range'],
        [`start_time=${now - DAY}&bucket_width=1w`, 'bucket_width', 'invalid_parameter'],
        [`start_time=${now - DAY}&limit=181`, 'limit', 'invalid_parameter'],
        [`start_time=${now - DAY}&limit=0`, 'limit', 'invalid_parameter'],
        [`start_time=${now - DAY}&group_by=source`, 'group_by.0', 'invalid_parameter'],
        [`start_time=${now - DAY}&group_by=model,project_id`, 'group_by.1', 'invalid_parameter'],
        [`start_time=${now - DAY}&group_by=agent_id,network_id,model,api_key_id,metadata.a,metadata.b`, 'group_by', 'invalid_parameter'],
        [`start_time=${now - DAY}&page=bkt_12`, 'page', 'invalid_cursor'],
        [`start_time=${now - DAY}&scorer=bogus`, 'scorer', 'invalid_parameter'],
        [`start_time=${now - DAY}&colour=red`, 'colour', 'unknown_parameter'],
        [`start_time=soon`, 'start_time', 'invalid_parameter'],
      ] as const) {
        const refused = await tenant.admin.get(`/v1/analytics/quality?${query}`);
        assert.equal(refused.status, 400, query);
        assert.deepEqual([refused.body.error.param, refused.body.error.code], [param, code], `${query}: ${JSON.stringify(refused.body)}`);
      }
      for (const [body, param] of [
        [{ start_time: now, end_time: now - 1 }, 'end_time'],
        [{ start_time: now - 400 * DAY, end_time: now }, 'end_time'],
        [{ start_time: now - DAY, end_time: now, scorers: ['vibes'] }, 'scorers.0'],
        [{ start_time: now - DAY, end_time: now, scorers: [] }, 'scorers'],
        [{ start_time: now - DAY }, 'end_time'],
      ] as const) {
        const refused = await tenant.admin.post('/v1/analytics/quality/backfill', body);
        assert.equal(refused.status, 400, JSON.stringify(body));
        assert.equal(refused.body.error.param, param, JSON.stringify(refused.body));
      }
    });

    it("keeps each project's scores, reports and backfills to itself, and asks for the right scopes", async () => {
      const stranger = await newTenant(stack.api, 'quality-stranger');
      const theirs = await report('', stranger.admin);
      assert.deepEqual(
        theirs.data.map((b) => b.results),
        [[], []],
      );
      const backfills = await tenant.admin.post('/v1/analytics/quality/backfill', { start_time: origin, end_time: origin + 2 * DAY });
      assert.equal((await stranger.admin.get(`/v1/analytics/quality/backfills/${backfills.body.id}`)).status, 404);
      const own = await stranger.admin.post('/v1/analytics/quality/backfill', { start_time: origin, end_time: origin + 2 * DAY });
      assert.equal(own.body.runs_total, 0);
      const analyst = await tenant.keyWith('analytics:read');
      assert.equal((await analyst.get(`/v1/analytics/quality?start_time=${origin}`)).status, 200);
      assert.equal((await analyst.post('/v1/analytics/quality/backfill', { start_time: origin, end_time: origin + DAY })).status, 403);
      const runner = await tenant.keyWith('agents:run');
      assert.equal((await runner.get(`/v1/analytics/quality?start_time=${origin}`)).status, 403);
      await eventually(async () =>
        assert.equal((await tenant.admin.get(`/v1/analytics/quality/backfills/${backfills.body.id}`)).body.status, 'completed'),
      );
    });
  });
});
