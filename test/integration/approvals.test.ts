import assert from 'node:assert/strict';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';
import { startToolServer, type EchoedRequest, type TestToolServer } from '../support/http-tool-server.js';
import { SseReader } from '../support/sse.js';
import { eventually } from '../support/eventually.js';
import type { ApiResponse } from '../support/client.js';

function assertError(response: ApiResponse, status: number, code: string, param: string | null) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error.code, code);
  assert.equal(response.body.error.param, param);
}

describe('approvals and tool policy', () => {
  let stack: RunsStack;
  let tools: TestToolServer;

  before(async () => {
    stack = await startRunsStack('approvals');
    tools = await startToolServer();
  });
  after(async () => {
    await tools.close();
    await stack.stop();
  });

  const payments = (over: Record<string, unknown> = {}) => ({
    type: 'http',
    name: 'pay',
    url: `${tools.url}/echo`,
    parameters: { type: 'object', properties: { amount: { type: 'number' }, to: { type: 'string' } }, required: ['amount', 'to'] },
    ...over,
  });
  const paid = (path = '/echo') => tools.received.filter((received) => received === path).length;

  it('holds a call for approval: the run requires action, approving with edited arguments runs the tool once with them, and the run completes', async () => {
    const agent = await createAgent(stack.tenant.admin, {
      tools: [payments({ approval: { mode: 'when', arguments: { properties: { amount: { minimum: 100 } }, required: ['amount'] } } })],
    });
    stack.openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"amount":250,"to":"acme"}' }] });
    stack.openai.enqueue({ text: ['Paid.'] });
    const before = paid();
    const created = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Pay acme 250.' });
    assert.equal(created.status, 202);
    assert.equal(created.body.status, 'requires_action');
    const step = created.body.steps.find((s: { type: string }) => s.type === 'tool_call');
    assert.equal(step.status, 'awaiting_approval');
    assert.equal(paid(), before, 'the tool ran before anyone approved');

    const reviewer = await stack.tenant.keyWith('approvals:write');
    const listed = await reviewer.get(`/v1/approvals?status=pending&run_id=${created.body.id}`);
    assert.equal(listed.status, 200);
    assert.equal(listed.body.data.length, 1);
    const approval = listed.body.data[0];
    assert.deepEqual(
      {
        run_id: approval.run_id,
        step: approval.step,
        tool_name: approval.tool_name,
        arguments: approval.arguments,
        agent_id: approval.agent_id,
      },
      { run_id: created.body.id, step: step.index, tool_name: 'pay', arguments: { amount: 250, to: 'acme' }, agent_id: agent.id },
    );
    assert.equal(step.approval_id, approval.id);
    const listedRuns = await stack.tenant.admin.get(`/v1/runs?status=requires_action&agent_id=${agent.id}`);
    assert.deepEqual(
      listedRuns.body.data.map((run: { id: string }) => run.id),
      [created.body.id],
    );

    // Deciding needs approvals:write; edited arguments must fit the tool's parameters.
    const reader = await stack.tenant.keyWith('approvals:read');
    assertError(await reader.post(`/v1/approvals/${approval.id}`, { decision: 'approve' }), 403, 'missing_scope', null);
    assertError(
      await reviewer.post(`/v1/approvals/${approval.id}`, { decision: 'approve', arguments: { amount: 'lots', to: 'acme' } }),
      400,
      'invalid_arguments',
      'arguments',
    );
    const decided = await reviewer.post(`/v1/approvals/${approval.id}`, {
      decision: 'approve',
      arguments: { amount: 200, to: 'acme' },
      reason: 'Capped at 200.',
    });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    assert.equal(decided.body.status, 'approved');
    assert.deepEqual(decided.body.decided_arguments, { amount: 200, to: 'acme' });
    assertError(await reviewer.post(`/v1/approvals/${approval.id}`, { decision: 'reject' }), 409, 'approval_decided', null);

    const run = await runSatisfying(stack.tenant.admin, created.body.id, (r) => r.status === 'completed', 'the approved run completes');
    assert.equal(paid(), before + 1, 'the tool was not called exactly once');
    const toolStep = run.steps.find((s: { type: string }) => s.type === 'tool_call');
    assert.equal(toolStep.status, 'completed');
    const echoed = JSON.parse(toolStep.output) as EchoedRequest;
    assert.deepEqual(JSON.parse(echoed.body), { amount: 200, to: 'acme' });
    assert.equal(echoed.headers['idempotency-key'], `${run.id}-${toolStep.index}`);

    const stream = await SseReader.open(`${stack.api.url}/v1/runs/${run.id}/events`, {
      headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
    });
    await stream.done;
    const requested = stream.events.find((e) => e.event === 'approval.requested');
    const resolved = stream.events.find((e) => e.event === 'approval.resolved');
    assert.equal(requested?.data.approval_id, approval.id);
    assert.equal(resolved?.data.approval_status, 'approved');
    const events = await stack.tenant.admin.get(`/v1/events?type=approval.resolved`);
    assert.ok(events.body.data.some((e: { data: { id: string } }) => e.data.id === approval.id));
    const audit = await stack.tenant.admin.get(`/v1/audit-logs?target_id=${approval.id}`);
    type Entry = { action: string; actor: { api_key_id: string }; outcome: { status: number } };
    const entries: Entry[] = audit.body.data;
    assert.equal(entries.find((entry) => entry.outcome.status === 200)?.actor.api_key_id, decided.body.decided_by);
    assert.deepEqual(
      entries.map((entry) => [entry.action, entry.outcome.status]),
      [
        ['approval.decide', 409],
        ['approval.decide', 200],
        ['approval.decide', 400],
        ['approval.decide', 403],
      ],
    );
  });

  it('tells the model a rejected call was not run, with the reason, and runs a call under the threshold without asking', async () => {
    const agent = await createAgent(stack.tenant.admin, {
      tools: [payments({ approval: { mode: 'when', arguments: { properties: { amount: { minimum: 100 } }, required: ['amount'] } } })],
    });
    stack.openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"amount":5,"to":"cafe"}' }] });
    stack.openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"amount":5000,"to":"casino"}' }] });
    stack.openai.enqueue({ text: ['Only the coffee was paid.'] });
    const before = paid();
    const created = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Pay for things.' });
    assert.equal(created.body.status, 'requires_action');
    assert.equal(paid(), before + 1, 'the small payment waited for approval');
    const [approval] = (await stack.tenant.admin.get(`/v1/approvals?run_id=${created.body.id}`)).body.data;
    // A rejection with arguments is told the document's rule, where the body itself was quoted back.
    const withArguments = await stack.tenant.admin.post(`/v1/approvals/${approval.id}`, { decision: 'reject', arguments: { amount: 1 } });
    assert.equal(withArguments.status, 400);
    assert.equal(withArguments.body.error.message, 'The body is not valid: A rejection carries no `arguments`.');
    const rejected = await stack.tenant.admin.post(`/v1/approvals/${approval.id}`, { decision: 'reject', reason: 'Not on company money.' });
    assert.equal(rejected.body.status, 'rejected');
    const run = await runSatisfying(stack.tenant.admin, created.body.id, (r) => r.status === 'completed', 'the run goes on');
    assert.equal(paid(), before + 1, 'the rejected call was run');
    const told = run.steps.filter((s: { type: string }) => s.type === 'tool_call')[1];
    assert.equal(told.is_error, true);
    assert.equal(told.output, 'A reviewer rejected the call of pay: Not on company money. It was not run.');
  });

  it('refuses a call its policy denies without running it or asking anyone, and tells the model why', async () => {
    const agent = await createAgent(stack.tenant.admin, {
      tools: [
        payments({ approval: { mode: 'always' }, policy: { deny_when: { properties: { to: { pattern: '^casino' } }, required: ['to'] } } }),
      ],
    });
    stack.openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"amount":1,"to":"casino royale"}' }] });
    stack.openai.enqueue({ text: ['Refused.'] });
    const before = paid();
    const created = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Gamble.' });
    assert.equal(created.body.status, 'completed');
    assert.equal(paid(), before);
    assert.deepEqual((await stack.tenant.admin.get(`/v1/approvals?run_id=${created.body.id}`)).body.data, []);
    const step = created.body.steps.find((s: { type: string }) => s.type === 'tool_call');
    assert.equal(step.is_error, true);
    assert.match(step.output, /refused by the tool's policy/);
  });

  it("expires an approval nobody decides after the agent's timeout, as a rejection, and answers a late decision 409", async () => {
    const agent = await createAgent(stack.tenant.admin, {
      tools: [payments({ approval: { mode: 'always' } })],
      approval_timeout_seconds: 1,
    });
    stack.openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"amount":1,"to":"anyone"}' }] });
    stack.openai.enqueue({ text: ['Nobody answered.'] });
    const created = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Pay.' });
    assert.equal(created.body.status, 'requires_action');
    const run = await runSatisfying(stack.tenant.admin, created.body.id, (r) => r.status === 'completed', 'the run goes on');
    const step = run.steps.find((s: { type: string }) => s.type === 'tool_call');
    assert.match(step.output, /^Nobody decided on the call of pay within 1 seconds, so it expired and was not run\.$/);
    const [approval] = (await stack.tenant.admin.get(`/v1/approvals?run_id=${run.id}`)).body.data;
    assert.equal(approval.status, 'expired');
    assertError(await stack.tenant.admin.post(`/v1/approvals/${approval.id}`, { decision: 'approve' }), 409, 'approval_decided', null);
  });

  it('cancels the approvals of a run cancelled while it waits', async () => {
    const agent = await createAgent(stack.tenant.admin, { tools: [payments({ approval: { mode: 'always' } })] });
    stack.openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"amount":1,"to":"anyone"}' }] });
    const created = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Pay.' });
    assert.equal(created.body.status, 'requires_action');
    const cancelled = await stack.tenant.admin.post(`/v1/runs/${created.body.id}/cancel`, {});
    assert.equal(cancelled.body.status, 'cancelled');
    const [approval] = (await stack.tenant.admin.get(`/v1/approvals?run_id=${created.body.id}`)).body.data;
    assert.equal(approval.status, 'cancelled');
  });

  it("shows a hop's waiting call on its network run, in the network run's stream and by network, and finishes both once approved", async () => {
    const member = await createAgent(stack.tenant.admin, { tools: [payments({ approval: { mode: 'always' } })] });
    const network = await stack.tenant.admin.post('/v1/networks', { name: 'payers', members: [member.id], router: { type: 'sequential' } });
    stack.openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"amount":1,"to":"team"}' }] });
    stack.openai.enqueue({ text: ['Paid the team.'] });
    const created = await stack.tenant.admin.post(`/v1/networks/${network.body.id}/run`, { input: 'Pay the team.' });
    assert.equal(created.status, 202, JSON.stringify(created.body));
    assert.equal(created.body.status, 'requires_action');
    const hopId = created.body.hops[0].child_run_id;
    const [approval] = (await stack.tenant.admin.get(`/v1/approvals?network_id=${network.body.id}`)).body.data;
    assert.deepEqual([approval.run_id, approval.agent_id, approval.network_id], [hopId, member.id, network.body.id]);
    assert.equal((await stack.tenant.admin.post(`/v1/approvals/${approval.id}`, { decision: 'approve' })).status, 200);
    await runSatisfying(stack.tenant.admin, created.body.id, (r) => r.status === 'completed', 'the network run completes');
    const stream = await SseReader.open(`${stack.api.url}/v1/runs/${created.body.id}/events`, {
      headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
    });
    await stream.done;
    const requested = stream.events.find((e) => e.event === 'approval.requested');
    assert.deepEqual([requested?.data.approval_id, requested?.data.child_run_id], [approval.id, hopId]);
  });

  it('guards the built-in tools too: read_file waits for approval and then reads, search_context is refused by its policy', async () => {
    const upload = await stack.tenant.admin.upload({
      file: { data: Buffer.from('Payroll: Ada earns 120 guineas a year.'), filename: 'payroll.txt' },
      purpose: 'attachment',
    });
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    await eventually(async () => assert.equal((await stack.tenant.admin.get(`/v1/files/${upload.body.id}`)).body.status, 'processed'), {
      timeoutMs: 30_000,
      message: 'the attachment was not extracted',
    });
    const agent = await createAgent(stack.tenant.admin, {
      tools: [
        { type: 'builtin', name: 'read_file', approval: { mode: 'always' } },
        {
          type: 'builtin',
          name: 'search_context',
          policy: { deny_when: { properties: { query: { pattern: 'salar' } }, required: ['query'] } },
        },
      ],
    });
    assert.deepEqual(
      agent.tools.map((tool: { type: string; name: string }) => `${tool.type}:${tool.name}`),
      ['builtin:read_file', 'builtin:search_context'],
    );
    stack.openai.enqueue({ tool_calls: [{ name: 'search_context', arguments: '{"query":"salaries"}' }] });
    stack.openai.enqueue({ tool_calls: [{ name: 'read_file', arguments: JSON.stringify({ file_id: upload.body.id }) }] });
    stack.openai.enqueue({ text: ['120 guineas.'] });
    const created = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, {
      input: 'What does Ada earn?',
      file_ids: [upload.body.id],
    });
    assert.equal(created.body.status, 'requires_action', JSON.stringify(created.body.error));
    const [approval] = (await stack.tenant.admin.get(`/v1/approvals?run_id=${created.body.id}&status=pending`)).body.data;
    assert.deepEqual([approval.tool_name, approval.arguments], ['read_file', { file_id: upload.body.id }]);
    assert.equal((await stack.tenant.admin.post(`/v1/approvals/${approval.id}`, { decision: 'approve' })).status, 200);
    const run = await runSatisfying(stack.tenant.admin, created.body.id, (r) => r.status === 'completed', 'the run completes');
    const [search, read] = run.steps.filter((step: { type: string }) => step.type === 'tool_call');
    assert.match(search.output, /refused by the tool's policy/);
    assert.equal(read.is_error, false);
    assert.match(read.output, /Ada earns 120 guineas/);

    const twice = await stack.tenant.admin.post('/v1/agents', {
      name: 'twice',
      model: 'gpt-4.1-mini',
      tools: [
        { type: 'builtin', name: 'read_file' },
        { type: 'builtin', name: 'read_file', approval: { mode: 'always' } },
      ],
    });
    assertError(twice, 400, 'invalid_tool', 'tools.1.name');
    assert.match(twice.body.error.message, /is already used by tools\.0$/);
  });

  it('refuses an agent whose approval or policy schema cannot be used, with 400 invalid_tool naming it', async () => {
    const refused = await stack.tenant.admin.post('/v1/agents', {
      name: 'bad',
      model: 'gpt-4.1-mini',
      tools: [payments({ policy: { deny_when: { properties: { to: { pattern: '(a)\\1' } } } } })],
    });
    assertError(refused, 400, 'invalid_tool', 'tools.0.policy.deny_when');
  });
});
