import assert from 'node:assert/strict';
import { eventually } from '../support/eventually.js';
import { SseReader } from '../support/sse.js';
import { assertMarkedDeprecated } from '../support/deprecated-update.js';
import { startToolServer } from '../support/http-tool-server.js';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';

type SentRequest = { model: string; messages: { role: string; content: unknown }[]; tools?: { function: { name: string } }[] };

describe('agent networks', function () {
  this.timeout(120_000);
  let stack: RunsStack;
  const requests = () => stack.openai.requests as unknown as SentRequest[];

  before(async () => {
    stack = await startRunsStack('networks');
  });

  after(async () => {
    await stack?.stop();
  });

  const network = async (fields: Record<string, unknown>) => {
    const created = await stack.tenant.admin.post('/v1/networks', { name: 'team', ...fields });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body;
  };

  describe('definitions', () => {
    it('creates a network at version 1, updates it to version 2, and deletes it', async () => {
      const a = await createAgent(stack.tenant.admin, { name: 'a' });
      const b = await createAgent(stack.tenant.admin, { name: 'b' });
      const created = await network({ members: [a.id, b.id], router: { type: 'sequential' } });
      assert.match(created.id, /^net_/);
      assert.equal(created.version, 1);
      assert.equal(created.max_hops, 10);
      const updated = await stack.tenant.admin.patch(`/v1/networks/${created.id}`, { members: [b.id, a.id], max_hops: 4 });
      assert.equal(updated.body.version, 2);
      assert.deepEqual(updated.body.members, [b.id, a.id]);
      assert.deepEqual((await stack.tenant.admin.get(`/v1/networks/${created.id}`)).body, updated.body);
      assert.equal((await stack.tenant.admin.delete(`/v1/networks/${created.id}`)).status, 200);
      assert.equal((await stack.tenant.admin.get(`/v1/networks/${created.id}`)).status, 404);
    });

    it('applies changes that come at once one after another: each answers 200 with a version of its own', async () => {
      const a = await createAgent(stack.tenant.admin, { name: 'a' });
      const created = await network({ members: [a.id], router: { type: 'sequential' } });
      // A change that waited for another's used to find no network, and answered 404.
      const changes = await Promise.all(
        Array.from({ length: 8 }, (_, i) => stack.tenant.admin.patch(`/v1/networks/${created.id}`, { max_hops: i + 1 })),
      );
      assert.deepEqual(
        changes.map((c) => c.status),
        Array(8).fill(200),
        JSON.stringify(changes.map((c) => c.body)),
      );
      assert.deepEqual(
        changes.map((c) => c.body.version).sort((x, y) => x - y),
        [2, 3, 4, 5, 6, 7, 8, 9],
      );
      const last = changes.find((c) => c.body.version === 9)!;
      assert.deepEqual((await stack.tenant.admin.get(`/v1/networks/${created.id}`)).body, last.body);
    });

    it('still updates with POST, the verb before PATCH, and says on the answer that POST is deprecated', async () => {
      const a = await createAgent(stack.tenant.admin, { name: 'a' });
      const created = await network({ members: [a.id], router: { type: 'sequential' } });
      const path = `/v1/networks/${created.id}`;
      const updated = await stack.tenant.admin.post(path, { max_hops: 3 });
      assert.equal(updated.status, 200, JSON.stringify(updated.body));
      assert.deepEqual([updated.body.version, updated.body.max_hops], [2, 3]);
      assert.deepEqual((await stack.tenant.admin.get(path)).body, updated.body);
      await assertMarkedDeprecated(stack.tenant.admin.baseUrl, path, updated);
    });

    it("refuses an unknown or another project's member with 400 naming it", async () => {
      const a = await createAgent(stack.tenant.admin);
      const other = await (await import('../support/api.js')).newTenant(stack.api, 'networks-other');
      const foreign = await createAgent(other.admin);
      for (const bad of ['agent_doesnotexist', foreign.id]) {
        const refused = await stack.tenant.admin.post('/v1/networks', { name: 'x', members: [a.id, bad], router: { type: 'sequential' } });
        assert.equal(refused.status, 400);
        assert.equal(refused.body.error.code, 'unknown_member');
        assert.equal(refused.body.error.param, 'members.1');
        assert.match(refused.body.error.message, new RegExp(bad));
      }
    });

    it('refuses a supervisor with nothing to decide with, and router fields on other routers', async () => {
      const a = await createAgent(stack.tenant.admin);
      const bare = await stack.tenant.admin.post('/v1/networks', { name: 'x', members: [a.id], router: { type: 'supervisor' } });
      assert.equal(bare.status, 400);
      assert.match(bare.body.error.param, /^router/);
      const stray = await stack.tenant.admin.post('/v1/networks', {
        name: 'x',
        members: [a.id],
        router: { type: 'sequential', instructions: 'hm' },
      });
      assert.equal(stray.status, 400);
      assert.match(stray.body.error.param, /^router/);
      const both = await stack.tenant.admin.post('/v1/networks', {
        name: 'x',
        members: [a.id],
        router: { type: 'supervisor', agent_id: a.id, instructions: 'hm' },
      });
      assert.equal(both.status, 400);
      const ghost = await stack.tenant.admin.post('/v1/networks', {
        name: 'x',
        members: [a.id],
        router: { type: 'supervisor', agent_id: 'agent_gone' },
      });
      assert.equal(ghost.status, 400);
      assert.equal(ghost.body.error.param, 'router.agent_id');
    });
  });

  it('runs a sequential pipeline, each member given the previous output, with the cost rolled up exactly', async () => {
    const members = [];
    for (const name of ['drafter', 'editor', 'translator'])
      members.push(await createAgent(stack.tenant.admin, { name, instructions: `You are the ${name}.` }));
    const net = await network({ members: members.map((m) => m.id), router: { type: 'sequential' } });
    stack.openai.enqueue({ text: ['draft'], usage: { input: 1000, output: 100 } });
    stack.openai.enqueue({ text: ['edited'], usage: { input: 2000, output: 200, cached: 1000 } });
    stack.openai.enqueue({ text: ['traduit'], usage: { input: 3000, output: 300 } });
    const seen = requests().length;
    const run = await stack.tenant.admin.post(`/v1/networks/${net.id}/run`, { input: 'Write about otters.' });
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    assert.equal(run.body.network_id, net.id);
    assert.equal(run.body.agent_id, null);
    assert.equal(run.body.output.text, 'traduit');
    assert.deepEqual(
      run.body.hops.map((h: { agent_id: string }) => h.agent_id),
      members.map((m) => m.id),
    );
    assert.deepEqual(
      run.body.hops.map((h: { decision: { reason: string } }) => h.decision.reason),
      ['Member 1 of 3 in sequence.', 'Member 2 of 3 in sequence.', 'Member 3 of 3 in sequence.'],
    );
    const sent = requests().slice(seen);
    assert.deepEqual(
      sent.map((r) => r.messages.at(-1)!.content),
      ['Write about otters.', 'draft', 'edited'],
    );
    // gpt-4.1-mini: $0.40 in, $0.10 cached in, $1.60 out per million tokens.
    // (1000 × 0.40 + 100 × 1.60) + (1000 × 0.40 + 1000 × 0.10 + 200 × 1.60) + (3000 × 0.40 + 300 × 1.60) = 3,060 millionths.
    assert.equal(run.body.cost, '0.00306');
    assert.deepEqual(run.body.usage, { input_tokens: 6000, output_tokens: 600, cached_tokens: 1000 });
    assert.deepEqual(
      run.body.hops.map((h: { cost: string }) => h.cost),
      ['0.00056', '0.00082', '0.00168'],
    );
    const ledger = await stack.api.services.db.query(
      'SELECT agent_id, network_id, cost::text FROM usage_records WHERE run_id = ANY($1) ORDER BY created_at',
      [run.body.hops.map((h: { child_run_id: string }) => h.child_run_id)],
    );
    assert.deepEqual(
      ledger.rows,
      members.map((m, i) => ({ agent_id: m.id, network_id: net.id, cost: ['0.00056', '0.00082', '0.00168'][i] })),
    );
    const childId = run.body.hops[1].child_run_id;
    const child = await stack.tenant.admin.get(`/v1/runs/${childId}`);
    assert.equal(child.body.parent_run_id, run.body.id);
    const history = await stack.tenant.admin.get(`/v1/agents/${members[1].id}/runs`);
    assert.equal(history.body.data[0].id, childId);
    assert.equal(history.body.data[0].parent_run_id, run.body.id);
    const networkRuns = await stack.tenant.admin.get(`/v1/networks/${net.id}/runs`);
    assert.deepEqual(
      networkRuns.body.data.map((r: { id: string }) => r.id),
      [run.body.id],
    );
    // The network run announces its ending as a network run; each hop as the run it is.
    const announced = async (id: string) =>
      (await stack.tenant.admin.get(`/v1/events?object_id=${id}`)).body.data.map((e: { type: string; data: unknown }) => [e.type, e.data]);
    assert.deepEqual(await announced(run.body.id), [['network_run.completed', { id: run.body.id, object: 'run' }]]);
    assert.deepEqual(await announced(childId), [['run.completed', { id: childId, object: 'run' }]]);
  });

  it('lets a supervisor choose each hop with a reason, recording its own model calls on the network run', async () => {
    const researcher = await createAgent(stack.tenant.admin, { name: 'researcher' });
    const writer = await createAgent(stack.tenant.admin, { name: 'writer' });
    const net = await network({
      members: [researcher.id, writer.id],
      router: { type: 'supervisor', instructions: 'Plan the work.', model: 'gpt-4.1-nano' },
    });
    stack.openai.enqueue({
      model: 'gpt-4.1-nano',
      tool_calls: [
        { name: 'route', arguments: JSON.stringify({ next: writer.id, reason: 'Only writing is needed.', input: 'Write a haiku.' }) },
      ],
      usage: { input: 500, output: 50 },
    });
    stack.openai.enqueue({ model: 'gpt-4.1-mini', text: ['An old silent pond'], usage: { input: 100, output: 10 } });
    stack.openai.enqueue({
      model: 'gpt-4.1-nano',
      tool_calls: [{ name: 'route', arguments: JSON.stringify({ next: 'finish', reason: 'The haiku is written.' }) }],
      usage: { input: 600, output: 20 },
    });
    const run = await stack.tenant.admin.post(`/v1/networks/${net.id}/run`, { input: 'A haiku, please.' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    assert.equal(run.body.output.text, 'An old silent pond');
    assert.deepEqual(
      run.body.hops.map((h: { agent_id: string; decision: unknown }) => [h.agent_id, h.decision]),
      [[writer.id, { router: 'supervisor', reason: 'Only writing is needed.' }]],
    );
    assert.equal(run.body.steps.length, 2, 'two supervisor calls on the network run');
    assert.equal(run.body.resolved_model, 'gpt-4.1-nano');
    // Supervisor (gpt-4.1-nano, $0.10 in, $0.40 out): 1100 × 0.10 + 70 × 0.40 = 138; writer (gpt-4.1-mini): 100 × 0.40 + 10 × 1.60 = 56.
    assert.equal(run.body.cost, '0.000194');
    const child = await stack.tenant.admin.get(`/v1/runs/${run.body.hops[0].child_run_id}`);
    assert.deepEqual(child.body.input, [{ role: 'user', content: 'Write a haiku.' }]);
  });

  it("answers with the supervisor's own reply when it finishes before any hop, a task no member was needed for", async () => {
    const writer = await createAgent(stack.tenant.admin, { name: 'writer' });
    const net = await network({
      members: [writer.id],
      router: { type: 'supervisor', instructions: 'Plan the work.', model: 'gpt-4.1-nano' },
    });
    stack.openai.enqueue({ model: 'gpt-4.1-nano', text: ['Hello! What should the team write?'], usage: { input: 300, output: 9 } });
    const greeted = await stack.tenant.admin.post(`/v1/networks/${net.id}/run`, { input: 'Hello there.' });
    assert.equal(greeted.body.status, 'completed', JSON.stringify(greeted.body.error));
    assert.deepEqual(greeted.body.hops, []);
    assert.equal(greeted.body.output.text, 'Hello! What should the team write?');
    await eventually(async () => {
      const stored = await stack.tenant.admin.get(`/v1/runs/${greeted.body.id}`);
      assert.equal(stored.body.output.text, 'Hello! What should the team write?');
      assert.equal(stored.body.scores.find((s: { scorer: string }) => s.scorer === 'non_empty')?.value, 1, 'scored as an answer');
    });
  });

  it('hands control from member to member through the handoff tool until one answers', async () => {
    const triage = await createAgent(stack.tenant.admin, { name: 'triage' });
    const billing = await createAgent(stack.tenant.admin, { name: 'billing', description: 'Invoices and refunds' });
    const net = await network({ members: [triage.id, billing.id], router: { type: 'handoff' } });
    const seen = requests().length;
    stack.openai.enqueue({
      tool_calls: [
        {
          name: 'handoff',
          arguments: JSON.stringify({ to: billing.id, reason: 'It is about an invoice.', message: 'Invoice 42 is missing.' }),
        },
      ],
      usage: { input: 10, output: 5 },
    });
    stack.openai.enqueue({ text: ['Invoice 42 has been re-sent.'], usage: { input: 20, output: 8 } });
    const run = await stack.tenant.admin.post(`/v1/networks/${net.id}/run`, { input: 'Where is my invoice?' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    assert.equal(run.body.output.text, 'Invoice 42 has been re-sent.');
    assert.deepEqual(
      run.body.hops.map((h: { agent_id: string; decision: { reason: string } }) => [h.agent_id, h.decision.reason]),
      [
        [triage.id, 'The first member takes the task.'],
        [billing.id, `Handed over by ${triage.id}: It is about an invoice.`],
      ],
    );
    const [first, second] = requests().slice(seen);
    assert.ok(
      first!.tools?.some((t) => t.function.name === 'handoff'),
      'the platform gives members the handoff tool',
    );
    assert.match(JSON.stringify(second!.messages), /Invoice 42 is missing\./);
  });

  it('ends a run that needs more than max_hops as failed max_hops_exceeded, with the output so far', async () => {
    const members = [];
    for (const name of ['one', 'two', 'three']) members.push(await createAgent(stack.tenant.admin, { name }));
    const net = await network({ members: members.map((m) => m.id), router: { type: 'sequential' }, max_hops: 2 });
    stack.openai.enqueue({ text: ['first'], usage: { input: 1, output: 1 } });
    stack.openai.enqueue({ text: ['second'], usage: { input: 1, output: 1 } });
    const run = await stack.tenant.admin.post(`/v1/networks/${net.id}/run`, { input: 'Go.' });
    assert.equal(run.body.status, 'failed');
    assert.equal(run.body.error.code, 'max_hops_exceeded');
    assert.equal(run.body.output.text, 'second');
    assert.equal(run.body.hops.length, 2);
  });

  it('ends a run whose stored router type this version does not know as failed unknown_router, with no hop run', async () => {
    const a = await createAgent(stack.tenant.admin);
    const net = await network({ members: [a.id], router: { type: 'handoff' } });
    // As a network written by a newer version of the platform, with a router this one has no case for.
    await stack.api.services.db.query(`UPDATE network_versions SET router = '{"type":"round_robin"}' WHERE network_id = $1`, [net.id]);
    const seen = requests().length;
    const run = await stack.tenant.admin.post(`/v1/networks/${net.id}/run`, { input: 'Go.' });
    assert.equal(run.body.status, 'failed');
    assert.equal(run.body.error.code, 'unknown_router');
    assert.match(run.body.error.message, /round_robin/);
    assert.deepEqual(run.body.hops, []);
    assert.equal(requests().length, seen, 'no member was asked');
  });

  it('streams the whole network on one connection: hop events tagged by child run, ending with the network run', async () => {
    const a = await createAgent(stack.tenant.admin);
    const b = await createAgent(stack.tenant.admin);
    const net = await network({ members: [a.id, b.id], router: { type: 'sequential' } });
    stack.openai.enqueue({ text: ['A says hi'], usage: { input: 1, output: 1 } });
    stack.openai.enqueue({ text: ['B says bye'], usage: { input: 1, output: 1 } });
    const stream = await SseReader.open(`${stack.api.url}/v1/networks/${net.id}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tenant.admin.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Hello.', stream: true }),
    });
    await stream.done;
    const last = stream.events.at(-1)!;
    assert.equal(last.event, 'run.completed');
    assert.equal(last.data.child_run_id, undefined);
    const children = new Set(stream.events.filter((e) => e.data.child_run_id).map((e) => e.data.child_run_id));
    assert.equal(children.size, 2);
    const deltas = stream.events
      .filter((e) => e.event === 'output_text.delta')
      .map((e) => e.data.delta)
      .join('');
    assert.equal(deltas, 'A says hiB says bye');
    assert.equal(stream.events.filter((e) => e.event === 'run.completed' && e.data.child_run_id).length, 2);
    for (const hop of ['run.created', 'run.in_progress']) {
      assert.equal(
        stream.events.filter((e) => e.event === hop && e.data.child_run_id).length,
        2,
        `each hop's ${hop} is in the network run's stream`,
      );
    }
  });

  it("carries a hop's tool result in the network run's stream, read from the hop's step", async () => {
    const { startToolServer } = await import('../support/http-tool-server.js');
    const tools = await startToolServer();
    try {
      const a = await createAgent(stack.tenant.admin, {
        tools: [{ type: 'http', name: 'lookup', url: `${tools.url}/echo`, method: 'POST' }],
      });
      const net = await network({ members: [a.id], router: { type: 'sequential' } });
      stack.openai.enqueue({ tool_calls: [{ name: 'lookup', arguments: '{"term":"fjord"}' }] });
      stack.openai.enqueue({ text: ['A fjord is an inlet.'] });
      const run = await stack.tenant.admin.post(`/v1/networks/${net.id}/run`, { input: 'Define fjord.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      const stream = await SseReader.open(`${stack.api.url}/v1/runs/${run.body.id}/events`, {
        headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
      });
      await stream.done;
      const toolDone = stream.events.find((e) => e.event === 'step.completed' && e.data.step_type === 'tool_call');
      assert.equal(toolDone?.data.child_run_id, run.body.hops[0].child_run_id);
      assert.match(String(toolDone?.data.output), /fjord/);
    } finally {
      await tools.close();
    }
  });

  it('cancels the hop in flight when the network run is cancelled, and ends both cancelled', async () => {
    const a = await createAgent(stack.tenant.admin);
    const net = await network({ members: [a.id], router: { type: 'sequential' } });
    const seen = requests().length;
    stack.openai.enqueue({ text: ['…'], hang: true });
    const started = await stack.tenant.admin.post(`/v1/networks/${net.id}/run`, { input: 'Forever.', wait: false });
    await eventually(() => assert.ok(requests().length > seen), { message: 'the member was not called' });
    const aborted = stack.openai.abortedCount;
    const cancelled = await stack.tenant.admin.post(`/v1/runs/${started.body.id}/cancel`, {});
    assert.equal(cancelled.body.status, 'cancelled', JSON.stringify(cancelled.body));
    const events = await stack.tenant.admin.get(`/v1/events?object_id=${started.body.id}`);
    assert.deepEqual(
      events.body.data.map((e: { type: string }) => e.type),
      ['network_run.cancelled'],
    );
    const child = await runSatisfying(
      stack.tenant.admin,
      cancelled.body.hops[0].child_run_id,
      (r) => r.status === 'cancelled',
      'the hop was not cancelled',
    );
    assert.equal(child.steps[0].status, 'cancelled');
    await eventually(() => assert.ok(stack.openai.abortedCount > aborted), { message: 'the model request was not aborted' });
  });

  it('ends the network run with member_deleted when a member is deleted while it runs', async () => {
    const tools = await startToolServer();
    try {
      const a = await createAgent(stack.tenant.admin, {
        tools: [{ type: 'http', name: 'slow', url: `${tools.url}/hang`, timeout_ms: 3000 }],
      });
      const b = await createAgent(stack.tenant.admin);
      const net = await network({ members: [a.id, b.id], router: { type: 'sequential' } });
      stack.openai.enqueue({ tool_calls: [{ name: 'slow', arguments: '{}' }], usage: { input: 1, output: 1 } });
      stack.openai.enqueue({ text: ['A is done'], usage: { input: 1, output: 1 } });
      const hanging = tools.hanging;
      const started = await stack.tenant.admin.post(`/v1/networks/${net.id}/run`, { input: 'Go.', wait: false });
      await eventually(() => assert.ok(tools.hanging > hanging), { message: 'the tool was not called' });
      assert.equal((await stack.tenant.admin.delete(`/v1/agents/${b.id}`)).status, 200);
      const ended = await runSatisfying(
        stack.tenant.admin,
        started.body.id,
        (r) => r.status !== 'in_progress' && r.status !== 'queued',
        'the network run did not end',
      );
      assert.equal(ended.status, 'failed');
      assert.equal(ended.error.code, 'member_deleted');
      assert.match(ended.error.message, new RegExp(b.id));
      assert.equal(ended.hops.length, 1);
    } finally {
      await tools.close();
    }
  });
});
