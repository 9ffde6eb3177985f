import assert from 'node:assert/strict';
import { callA2aTool, type RemoteTask, type RemoteTaskMemory } from '../../tools/a2a.js';
import type { A2aToolDefinition } from '../../tools/definitions.js';
import { assertDocumentedResponse } from '../support/contract.js';
import { eventually } from '../support/eventually.js';
import { COST_EXTENSION } from '../../tools/a2a-client.js';
import { MAX_JSON_DEPTH } from '../../records/json-depth.js';
import { REPORTED_COST, startA2aAgent, type TestA2aAgent } from '../support/a2a-agent.js';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';

// The remote agent listens on loopback, so calls allow private targets unless they test the refusal.
const reach = (allowPrivate = true) => ({ projectId: 'proj_a2a', signal: new AbortController().signal, allowPrivate });

/** A step's memory of its remote task, kept here as the run's step keeps it. */
function memory(previous: RemoteTask | null = null): RemoteTaskMemory & { kept: RemoteTask[] } {
  const kept: RemoteTask[] = [];
  return { previous, kept, remember: async (task) => void kept.push(task) };
}

describe('a2a tools: calling remote agents over A2A', function () {
  this.timeout(60_000);
  let remote: TestA2aAgent;
  let stack: RunsStack;
  const tool = (over: Partial<A2aToolDefinition> = {}): A2aToolDefinition => ({
    type: 'a2a',
    name: 'research',
    card_url: remote.cardUrl,
    ...over,
  });

  before(async () => {
    [remote, stack] = await Promise.all([startA2aAgent(), startRunsStack('a2a-tool')]);
  });
  after(async () => {
    await remote?.close();
    await stack?.stop();
  });

  it("runs an agent whose model calls a remote agent: the step shows the remote task, and the run's cost includes what the remote reported", async () => {
    const agent = await createAgent(stack.tenant.admin, { tools: [{ type: 'a2a', name: 'research', card_url: remote.cardUrl }] });
    stack.openai.enqueue({
      tool_calls: [{ name: 'research', arguments: '{"message":"Who wrote Hamlet?"}' }],
      usage: { input: 1000, output: 500 },
    });
    stack.openai.enqueue({ text: ['Shakespeare.'], usage: { input: 1000, output: 500 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Who wrote Hamlet?' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    assertDocumentedResponse('post', `/v1/agents/${agent.id}/run`, run.status, run.body, 'application/json');

    // The model was offered the card's description, and read the remote task's artifact.
    const first = stack.openai.requests.at(-2) as { tools: { function: { name: string; description: string } }[] };
    assert.deepEqual(first.tools[0]!.function, {
      ...first.tools[0]!.function,
      name: 'research',
      description: 'Research agent: Answers research questions.',
    });
    const step = run.body.steps[1];
    assert.equal(step.type, 'tool_call');
    assert.equal(step.output, 'Answer to: Who wrote Hamlet?');
    assert.equal(step.is_error, false);
    assert.equal(step.remote_task.task_id, remote.started.at(-1));
    assert.match(step.remote_task.context_id, /^[0-9a-f-]{36}$/);
    assert.equal(step.remote_task.run_id, REPORTED_COST.run_id);
    assert.equal(step.cost, '0.0125');
    assert.deepEqual(step.usage, { input_tokens: 1500, output_tokens: 250, cached_tokens: 0 });
    // The message was sent once, under the step's own id, asking for the cost extension the card declares.
    const sent = remote.methods.lastIndexOf('SendMessage');
    assert.equal(remote.messageIds.at(-1), `${run.body.id}-1`);
    assert.equal(remote.headers[sent]!['a2a-extensions'], 'https://agentplane.io/a2a/extensions/cost/v1');
    // gpt-4.1-mini: two calls of (1000 × $0.40 + 500 × $1.60) / 10⁶, and the remote's $0.0125.
    assert.equal(run.body.cost, '0.0149');
    assert.deepEqual(run.body.usage, { input_tokens: 3500, output_tokens: 1250, cached_tokens: 0 });

    const since = Math.floor(Date.now() / 1000) - 3600;
    const report = await stack.tenant.admin.get(`/v1/analytics/costs?start_time=${since}&bucket_width=1d&group_by=source,agent_id`);
    assert.equal(report.status, 200, JSON.stringify(report.body));
    const results = (report.body.data as { results: { source: string; agent_id: string; amount: { value: string } }[] }[]).flatMap(
      (b) => b.results,
    );
    assert.deepEqual(
      results.filter((r) => r.source === 'a2a').map((r) => [r.agent_id, r.amount.value]),
      [[agent.id, '0.0125']],
    );
  });

  it("keeps a remote agent's cost as reported when the project's calls are repriced, whatever its tool is named", async () => {
    // A tool named like a priced model: its ledger rows are still the remote agent's word, not a price.
    const agent = await createAgent(stack.tenant.admin, { tools: [{ type: 'a2a', name: 'gpt-4o-mini', card_url: remote.cardUrl }] });
    stack.openai.enqueue({ tool_calls: [{ name: 'gpt-4o-mini', arguments: '{"message":"Price me."}' }], usage: { input: 0, output: 0 } });
    stack.openai.enqueue({ text: ['Done.'], usage: { input: 0, output: 0 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Go.' });
    assert.equal(run.body.cost, '0.0125');
    const now = Math.floor(Date.now() / 1000);
    const range = { start_time: now - 7200, end_time: now + 3600 };
    const repriced = await stack.tenant.admin.post('/v1/analytics/costs/reprice', { ...range, dry_run: false });
    assert.equal(repriced.status, 200, JSON.stringify(repriced.body));
    assert.equal(repriced.body.changed, 0);
    const report = await stack.tenant.admin.get(`/v1/analytics/costs?start_time=${range.start_time}&group_by=source,agent_id`);
    const mine = (report.body.data as { results: { source: string; agent_id: string; amount: { value: string } }[] }[])
      .flatMap((b) => b.results)
      .filter((r) => r.source === 'a2a' && r.agent_id === agent.id);
    assert.deepEqual(
      mine.map((r) => r.amount.value),
      ['0.0125'],
    );
  });

  /** A remote agent written without the SDK, whose SendMessage answers `task`. */
  const answering = (task: Record<string, unknown>) =>
    startA2aAgent({ answers: { SendMessage: () => ({ task: { contextId: 'ctx-1', history: [], artifacts: [], ...task } }) } });

  it("keeps a remote agent's answer and reported run holding what PostgreSQL cannot as they can be kept, and charges it once", async () => {
    const odd = await answering({
      id: 'task-odd-1',
      status: { state: 'TASK_STATE_COMPLETED' },
      artifacts: [{ artifactId: 'a', parts: [{ text: 'Half \ud83d, and a NUL: \u0000.' }] }],
      metadata: { [COST_EXTENSION]: { ...REPORTED_COST, run_id: 'run_\u0000remote\udc00' } },
    });
    try {
      const agent = await createAgent(stack.tenant.admin, { tools: [{ type: 'a2a', name: 'research', card_url: odd.cardUrl }] });
      stack.openai.enqueue({
        tool_calls: [{ name: 'research', arguments: '{"message":"Anything odd?"}' }],
        usage: { input: 0, output: 0 },
      });
      stack.openai.enqueue({ text: ['Odd indeed.'], usage: { input: 0, output: 0 } });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Ask it.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      const step = run.body.steps[1];
      assert.equal(step.output, 'Half \ufffd, and a NUL: .');
      assert.deepEqual(step.remote_task, { task_id: 'task-odd-1', context_id: 'ctx-1', run_id: 'run_remote\ufffd' });
      assert.equal(run.body.cost, '0.0125');
      assert.deepEqual(odd.methods, ['SendMessage'], 'the message was sent once');
    } finally {
      await odd.close();
    }
  });

  it('refuses a task whose id or context cannot be kept, cancelling it, and remembers nothing', async () => {
    for (const [id, contextId] of [
      ['task-\u0000', 'ctx-1'],
      ['task-2', 'ctx-\ud800'],
      ['t'.repeat(1025), 'ctx-1'],
    ]) {
      const odd = await answering({ id, contextId, status: { state: 'TASK_STATE_WORKING' } });
      try {
        const kept = memory();
        const result = await callA2aTool(tool({ card_url: odd.cardUrl }), { message: 'Anything odd?' }, reach(), kept);
        assert.equal(result.is_error, true);
        assert.match(result.content, /^The agent of research answered with a task whose (id|context id) cannot be kept: /);
        assert.deepEqual(kept.kept, []);
        assert.deepEqual(odd.methods, ['SendMessage', 'CancelTask'], 'the task was cancelled, and not followed');
      } finally {
        await odd.close();
      }
    }
  });

  it('shows data as JSON, and describes instead data nested deeper than it can be shown', async () => {
    // Past what JSON.stringify can walk, the model was told "Maximum call stack size exceeded".
    const nested = (depth: number) => `${'{"a": '.repeat(depth)}1${'}'.repeat(depth)}`;
    const notShown = `[data that nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels, the most allowed, not shown]`;
    for (const [depth, content] of [
      [3, '{"a":{"a":{"a":1}}}'],
      [MAX_JSON_DEPTH + 1, notShown],
      [100_000, notShown],
    ] as const) {
      const message = `{"message": {"messageId": "m-1", "role": "ROLE_AGENT", "parts": [{"data": ${nested(depth)}}]}}`;
      const deep = await startA2aAgent({ answers: { SendMessage: () => message } });
      try {
        assert.deepEqual(await callA2aTool(tool({ card_url: deep.cardUrl }), { message: 'How deep?' }, reach(), memory()), {
          content,
          is_error: false,
        });
      } finally {
        await deep.close();
      }
    }
  });

  it('cancels the remote task when the calling run is cancelled', async () => {
    const agent = await createAgent(stack.tenant.admin, { tools: [{ type: 'a2a', name: 'research', card_url: remote.cardUrl }] });
    stack.openai.enqueue({
      tool_calls: [{ name: 'research', arguments: '{"message":"hold until told"}' }],
      usage: { input: 10, output: 5 },
    });
    const started = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Research forever.', wait: false });
    assert.equal(started.status, 202);
    const working = await runSatisfying(
      stack.tenant.admin,
      started.body.id,
      (run) => Boolean(run.steps[1]?.remote_task),
      'the tool step never showed its remote task',
    );
    const taskId = working.steps[1].remote_task.task_id as string;
    assert.equal(working.steps[1].status, 'in_progress');
    const cancelled = await stack.tenant.admin.post(`/v1/runs/${started.body.id}/cancel`, {});
    assert.equal(cancelled.body.status, 'cancelled');
    await eventually(() => assert.ok(remote.cancelled.includes(taskId), 'the remote received no CancelTask'), {
      message: 'the remote task was not cancelled',
    });
  });

  it('follows the task an earlier attempt started instead of sending the message again', async () => {
    const first = memory();
    const answered = await callA2aTool(tool(), { message: 'Once only' }, reach(), first, 'run_retry-3');
    assert.equal(answered.content, 'Answer to: Once only');
    const sends = remote.methods.filter((m) => m === 'SendMessage').length;
    const retried = await callA2aTool(tool(), { message: 'Once only' }, reach(), memory(first.kept[0]!), 'run_retry-3');
    assert.equal(retried.content, 'Answer to: Once only');
    assert.deepEqual(retried.charge, answered.charge);
    assert.equal(remote.methods.filter((m) => m === 'SendMessage').length, sends, 'the message was sent again');
  });

  it('ends a call whose task needs more input with an error the model reads, and cancels a task past timeout_ms', async () => {
    assert.deepEqual(await callA2aTool(tool(), { message: 'more input, please' }, reach(), memory()), {
      content: 'research needs more input to go on, which this tool cannot give: Which city?',
      is_error: true,
    });
    const held = memory();
    assert.deepEqual(await callA2aTool(tool({ timeout_ms: 300 }), { message: 'hold' }, reach(), held), {
      content: 'research did not finish its task within 300 ms; the task was cancelled',
      is_error: true,
    });
    assert.ok(remote.cancelled.includes(held.kept[0]!.task_id));
  });

  it('refuses a card on a loopback or private address as HTTP tools are refused, and sends nothing', async () => {
    const before = remote.methods.length;
    for (const card_url of [remote.cardUrl, 'http://169.254.169.254/.well-known/agent-card.json', 'http://[::1]:9/card']) {
      const result = await callA2aTool(tool({ card_url }), { message: 'hello' }, reach(false), memory());
      assert.equal(result.is_error, true, card_url);
      assert.match(result.content, /^The request was refused: .* is not a public address; only public addresses may be reached$/, card_url);
    }
    assert.equal(remote.methods.length, before);
  });

  it('refuses an interface the card names outside what the deployment may reach, and sends nothing there', async () => {
    const elsewhere = await startA2aAgent({ interfaceUrl: 'http://10.255.255.1/a2a' });
    const networks = process.env.AGENTPLANE_OUTBOUND_NETWORKS;
    process.env.AGENTPLANE_OUTBOUND_NETWORKS = '127.0.0.1/32';
    try {
      const result = await callA2aTool(tool({ card_url: elsewhere.cardUrl }), { message: 'hello' }, reach(), memory());
      assert.deepEqual(result, {
        content: 'The request was refused: 10.255.255.1 is outside the networks this deployment reaches (AGENTPLANE_OUTBOUND_NETWORKS)',
        is_error: true,
      });
      assert.deepEqual(elsewhere.methods, []);
    } finally {
      if (networks === undefined) delete process.env.AGENTPLANE_OUTBOUND_NETWORKS;
      else process.env.AGENTPLANE_OUTBOUND_NETWORKS = networks;
      await elsewhere.close();
    }
  });

  describe('between two agents of one deployment', () => {
    /** Agent B, answering over A2A, and agent A, which calls it with the project's key. */
    async function callerAndCallee() {
      const callee = await createAgent(stack.tenant.admin, { name: 'reviewer', description: 'Reviews drafts.' });
      const caller = await createAgent(stack.tenant.admin, {
        tools: [
          {
            type: 'a2a',
            name: 'reviewer',
            card_url: `${stack.api.url}/a2a/${callee.id}/.well-known/agent-card.json`,
            headers: { Authorization: `Bearer ${stack.tenant.admin.key}` },
          },
        ],
      });
      // The key is sent with every request to the called agent, and shown to no one.
      assert.deepEqual(caller.tools[0].headers, { Authorization: '********' });
      return { caller, callee };
    }

    it("rolls the called agent's run cost up into the calling run", async () => {
      const { caller, callee } = await callerAndCallee();
      // In the order the calls come: A asks B, B answers, A answers.
      stack.openai.enqueue({
        tool_calls: [{ name: 'reviewer', arguments: '{"message":"Review: the cat sat."}' }],
        usage: { input: 1000, output: 500 },
      });
      stack.openai.enqueue({ text: ['Too short.'], usage: { input: 1000, output: 500 } });
      stack.openai.enqueue({ text: ['The reviewer finds it too short.'], usage: { input: 1000, output: 500 } });
      const run = await stack.tenant.admin.post(`/v1/agents/${caller.id}/run`, { input: 'Have my draft reviewed.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      const step = run.body.steps[1];
      assert.equal(step.output, 'Too short.');
      const remoteRun = await stack.tenant.admin.get(`/v1/runs/${step.remote_task.task_id}`);
      assert.equal(remoteRun.body.agent_id, callee.id);
      assert.equal(remoteRun.body.status, 'completed');
      assert.equal(step.remote_task.run_id, remoteRun.body.id);
      // Each model call: (1000 × $0.40 + 500 × $1.60) / 10⁶ = $0.0012; B's one is A's too.
      assert.equal(remoteRun.body.cost, '0.0012');
      assert.equal(step.cost, '0.0012');
      assert.equal(run.body.cost, '0.0036');
    });

    it("cancels the called agent's run when the calling run is cancelled", async () => {
      const { caller, callee } = await callerAndCallee();
      stack.openai.enqueue({
        tool_calls: [{ name: 'reviewer', arguments: '{"message":"Review slowly."}' }],
        usage: { input: 10, output: 5 },
      });
      stack.openai.enqueue({ text: ['Reading'], hang: true });
      const started = await stack.tenant.admin.post(`/v1/agents/${caller.id}/run`, { input: 'Have it reviewed.', wait: false });
      const working = await runSatisfying(
        stack.tenant.admin,
        started.body.id,
        (run) => Boolean(run.steps[1]?.remote_task),
        'the tool step never showed its remote task',
      );
      const remoteRunId = working.steps[1].remote_task.task_id as string;
      await runSatisfying(stack.tenant.admin, remoteRunId, (run) => run.status === 'in_progress', 'the called run never started');
      const cancelled = await stack.tenant.admin.post(`/v1/runs/${started.body.id}/cancel`, {});
      assert.equal(cancelled.body.status, 'cancelled');
      const remoteRun = await runSatisfying(
        stack.tenant.admin,
        remoteRunId,
        (run) => run.status !== 'in_progress',
        'the called run went on',
      );
      assert.equal(remoteRun.status, 'cancelled');
      assert.equal(remoteRun.agent_id, callee.id);
    });
  });
});
