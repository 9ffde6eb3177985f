import assert from 'node:assert/strict';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';
import { eventually } from '../support/eventually.js';
import type { ApiClient } from '../support/client.js';

type SentRequest = { messages: { role: string; content: unknown }[] };
type Memory = {
  id: string;
  attribute: string;
  value: string;
  status: string;
  superseded_by: string | null;
  superseded_reason: string | null;
  sources: { thread_id: string; run_id: string; message_id: string; start: number; end: number; quote: string }[];
};

describe('memory: facts learned about a subject, with their sources, deleted exactly', function () {
  this.timeout(120_000);
  let stack: RunsStack;
  let client: ApiClient;
  let agent: { id: string };
  const lastRequest = () => stack.openai.requests.at(-1) as unknown as SentRequest;

  before(async () => {
    stack = await startRunsStack('memories');
    client = stack.tenant.admin;
    agent = await createAgent(client, { memory: { enabled: true } });
  });
  after(async () => {
    await stack?.stop();
  });

  /** A completed run on a new thread (or `threadId`) for `subject`, saying `input`; its thread's id. */
  async function said(subject: string, input: string, threadId?: string): Promise<{ threadId: string; runId: string }> {
    const thread = threadId ?? (await client.post('/v1/threads', { subject_id: subject })).body.id;
    stack.openai.enqueue({ text: ['Noted.'], usage: { input: 5, output: 5 } });
    const run = await client.post(`/v1/agents/${agent.id}/run`, { input, thread_id: thread });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    return { threadId: thread, runId: run.body.id };
  }

  const memoriesOf = async (subject: string, status?: string): Promise<Memory[]> =>
    (await client.get(`/v1/memories?subject_id=${subject}&limit=100${status ? `&status=${status}` : ''}`)).body.data;

  /** Waits until the subject's memories, as `attribute: value (status)`, are `expected` (in any order). */
  async function memoriesBecome(subject: string, expected: string[]): Promise<Memory[]> {
    return eventually(
      async () => {
        const memories = await memoriesOf(subject);
        assert.deepEqual(memories.map((m) => `${m.attribute}: ${m.value} (${m.status})`).sort(), [...expected].sort());
        return memories;
      },
      { timeoutMs: 20_000, message: `the memories of ${subject} did not become ${expected.join(', ')}` },
    );
  }

  it('stores what a subject states, citing the message and its span; a later contradiction supersedes, both kept', async () => {
    const first = await said('ada', 'Hello! My name is Ada, and I live in Paris.');
    const learned = await memoriesBecome('ada', ['name: Ada (current)', 'lives in: Paris (current)']);
    const messages = (await client.get(`/v1/threads/${first.threadId}/messages`)).body.data;
    const paris = learned.find((m) => m.attribute === 'lives in')!;
    assert.equal(paris.sources.length, 1);
    const [source] = paris.sources;
    assert.equal(source!.thread_id, first.threadId);
    assert.equal(source!.run_id, first.runId);
    assert.equal(source!.message_id, messages[0].id);
    assert.equal([...messages[0].content].slice(source!.start, source!.end).join(''), 'I live in Paris');
    assert.equal(source!.quote, 'I live in Paris');

    const second = await said('ada', 'Update: I moved to Berlin last week.');
    const settled = await memoriesBecome('ada', ['name: Ada (current)', 'lives in: Paris (superseded)', 'lives in: Berlin (current)']);
    const berlin = settled.find((m) => m.value === 'Berlin')!;
    const older = settled.find((m) => m.value === 'Paris')!;
    assert.equal(older.superseded_by, berlin.id);
    assert.match(older.superseded_reason!, /Contradicted by a later statement, "lives in: Berlin"/);

    // A later run for the subject is told what is current, and not what was superseded.
    stack.openai.enqueue({ text: ['You live in Berlin.'], usage: { input: 5, output: 5 } });
    const asked = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Where do I live?', subject_id: 'ada' });
    assert.equal(asked.body.status, 'completed');
    const told = lastRequest().messages.find((m) => m.role === 'system' && String(m.content).startsWith('What the user has told you'));
    assert.ok(told, 'the run was not given the memories');
    assert.match(String(told.content), /lives in: Berlin/);
    assert.match(String(told.content), /name: Ada/);
    assert.doesNotMatch(String(told.content), /Paris/);

    // Deleting the thread that said Berlin deletes that memory, exactly, and Paris is current again.
    const deleted = await client.delete(`/v1/threads/${second.threadId}`);
    assert.equal(deleted.body.memories_removed, 1);
    await memoriesBecome('ada', ['name: Ada (current)', 'lives in: Paris (current)']);
    const types = (await client.get(`/v1/events?type=memory.created,memory.superseded,memory.deleted&limit=100`)).body.data.map(
      (e: { type: string; data: { id: string } }) => `${e.type} ${e.data.id}`,
    );
    assert.ok(types.includes(`memory.superseded ${older.id}`));
    assert.ok(types.includes(`memory.deleted ${berlin.id}`));
  });

  /** Every memory of `subject`, page after page. */
  async function allMemoriesOf(subject: string): Promise<Memory[]> {
    const all: Memory[] = [];
    for (let after = ''; ;) {
      const page = (await client.get(`/v1/memories?subject_id=${subject}&limit=100&after=${after}`)).body;
      all.push(...page.data);
      if (!page.has_more) return all;
      after = page.last_id;
    }
  }

  it('keeps the current value of an attribute and the 99 stated before it, deleting what was stated longer ago', async () => {
    const towns = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => `Town${from + i}`);
    const deletions = async () => (await client.get('/v1/events?type=memory.deleted&limit=100')).body.data.length as number;
    const deletedBefore = await deletions();
    await said(
      'mover',
      towns(1, 105)
        .map((town) => `I live in ${town}.`)
        .join(' '),
    );
    const valuesOf = async () => {
      const memories = await allMemoriesOf('mover');
      return {
        current: memories.filter((m) => m.status === 'current').map((m) => m.value),
        kept: memories.map((m) => m.value).sort(),
      };
    };
    const kept = await eventually(
      async () => {
        const values = await valuesOf();
        assert.deepEqual(values.current, ['Town105']);
        assert.deepEqual(values.kept, towns(6, 105).sort());
        return values;
      },
      { timeoutMs: 20_000, message: 'the subject did not keep exactly the 100 values it stated last' },
    );
    assert.equal(kept.kept.length, 100);

    // One more value: the oldest kept goes, and the new one is current.
    await said('mover', 'I live in Town106 now.');
    await eventually(
      async () => {
        const values = await valuesOf();
        assert.deepEqual(values.current, ['Town106']);
        assert.deepEqual(values.kept, towns(7, 106).sort());
      },
      { timeoutMs: 20_000, message: 'the oldest kept value did not go when a new one came' },
    );
    // Each memory deleted is told, as any deletion is: Town1 to Town6.
    assert.equal((await deletions()) - deletedBefore, 6);
  });

  it('keeps 10,000 memories of a subject: one more deletes the one stated longest ago, superseded ones first', async () => {
    // 10,000 memories stated one a minute until a day ago, as earlier runs would have left them: the first two
    // superseded by the third.
    const { db } = stack.api.services;
    await db.query(
      `WITH made AS (
         INSERT INTO memories (id, project_id, subject_id, attribute, value, value_key, statement, confidence, extractor, status, superseded_by, learned_at)
         SELECT 'mem_seed' || n, $1, 'collector', CASE WHEN n <= 3 THEN 'attribute 3' ELSE 'attribute ' || n END, 'value ' || n,
           'value ' || n, 'attribute ' || n || ': value ' || n, 0.8, 'rules', CASE WHEN n < 3 THEN 'superseded' ELSE 'current' END, CASE WHEN n < 3 THEN 'mem_seed3' END,
           now() - interval '1 day' - make_interval(mins => 10000 - n)
         FROM generate_series(1, $2::int) AS n RETURNING id, learned_at
       )
       INSERT INTO memory_sources (memory_id, project_id, thread_id, run_id, message_id, message_seq, start_offset, end_offset, quote, learned_at)
       SELECT id, $1, 'thread_seed', 'run_seed', 'tmsg_' || id, 1, 0, 5, 'said', learned_at FROM made`,
      [stack.tenant.projectId, 10_000],
    );
    const count = async () =>
      (
        await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM memories WHERE project_id = $1 AND subject_id = 'collector'`, [
          stack.tenant.projectId,
        ])
      ).rows[0]!.n;
    const kept = async (id: string) => (await client.get(`/v1/memories/${id}`)).status === 200;

    // One more is learned, and the superseded one stated longest ago goes.
    await said('collector', 'I live in Oslo.');
    await eventually(async () => assert.equal(await memoriesOf('collector', 'current').then((m) => m[0]?.value), 'Oslo'), {
      timeoutMs: 20_000,
      message: 'the new memory was not learned',
    });
    assert.equal(await count(), 10_000);
    assert.deepEqual([await kept('mem_seed1'), await kept('mem_seed2'), await kept('mem_seed3')], [false, true, true]);

    // With no superseded one left, the current one stated longest ago goes.
    await said('collector', 'I work at Initrode. My favourite colour is teal.');
    await eventually(async () => assert.equal(await count(), 10_000), { timeoutMs: 20_000, message: 'the subject kept more than 10,000' });
    await eventually(async () => assert.ok((await memoriesOf('collector', 'current')).some((m) => m.value === 'teal')), {
      timeoutMs: 20_000,
      message: 'the newest memories were not learned',
    });
    // The other superseded one went first; then the current one stated longest ago; those stated since stay.
    assert.deepEqual([await kept('mem_seed2'), await kept('mem_seed3'), await kept('mem_seed10000')], [false, false, true]);
  });

  it('keeps a memory two threads support until both are gone, and searches memories with search_context', async () => {
    const a = await said('bo', 'My email is bo@example.com.');
    const b = await said('bo', 'Again, my email is BO@example.com');
    const [memory] = await eventually(
      async () => {
        const found = await memoriesOf('bo');
        assert.deepEqual(
          found.map((m) => m.sources.length),
          [2],
        );
        return found;
      },
      { timeoutMs: 20_000, message: 'the second statement did not join the first as a source' },
    );
    assert.equal(memory!.value, 'bo@example.com');
    assert.equal((memory as Memory & { source_count: number }).source_count, 2);
    // Newest first: the second statement, then the first.
    assert.deepEqual(
      memory!.sources.map((s) => s.thread_id),
      [b.threadId, a.threadId],
    );

    stack.openai.enqueue({
      tool_calls: [{ name: 'search_context', arguments: JSON.stringify({ query: 'email address' }) }],
      usage: { input: 5, output: 5 },
    });
    stack.openai.enqueue({ text: ['It is bo@example.com.'], usage: { input: 5, output: 5 } });
    const searched = await client.post(`/v1/agents/${agent.id}/run`, { input: 'What is my email?', subject_id: 'bo' });
    assert.equal(searched.body.status, 'completed', JSON.stringify(searched.body.error));
    const found = searched.body.steps.find((s: { type: string }) => s.type === 'tool_call');
    assert.match(found.output, /email: bo@example\.com, in their words: "my email is BO@example\.com"/);

    assert.equal((await client.delete(`/v1/threads/${a.threadId}`)).body.memories_removed, 0);
    const left = await memoriesOf('bo');
    assert.deepEqual(
      left.map((m) => m.sources.map((s) => s.thread_id)),
      [[b.threadId]],
    );
    assert.equal((await client.delete(`/v1/threads/${b.threadId}`)).body.memories_removed, 1);
    assert.deepEqual(await memoriesOf('bo'), []);
  });

  it('forgets a subject: memories, threads, messages and the conversation of its runs, with a receipt by kind', async () => {
    const one = await said('cy', 'My name is Cy. I like green tea.');
    await said('cy', "I don't like green tea any more.", one.threadId);
    await said('cy', 'I work at Initech.');
    await memoriesBecome('cy', [
      'name: Cy (current)',
      'opinion of green tea: likes (superseded)',
      'opinion of green tea: dislikes (current)',
      'works at: Initech (current)',
    ]);
    stack.openai.enqueue({ text: ['Hi Cy.'], usage: { input: 5, output: 5 } });
    const loose = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Remember me?', subject_id: 'cy' });
    // A turn of Cy's on a thread that is nobody's in particular, beside another's.
    const shared = (await client.post('/v1/threads', {})).body.id;
    stack.openai.enqueue({ text: ['Noted, Cy.'], usage: { input: 5, output: 5 } });
    await client.post(`/v1/agents/${agent.id}/run`, { input: 'It is Cy here.', thread_id: shared, subject_id: 'cy' });
    stack.openai.enqueue({ text: ['Hello.'], usage: { input: 5, output: 5 } });
    await client.post(`/v1/agents/${agent.id}/run`, { input: 'Someone else here.', thread_id: shared });
    // Another subject's memories are not touched.
    await said('dee', 'My name is Dee.');
    await memoriesBecome('dee', ['name: Dee (current)']);

    stack.openai.enqueue({ text: ['Hmm'], hang: true });
    const busy = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Wait.', subject_id: 'cy', wait: false });
    await runSatisfying(client, busy.body.id, (run) => run.status === 'in_progress', 'the run did not start');
    const refused = await client.delete('/v1/memories?subject_id=cy');
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.code, 'subject_busy');
    await client.post(`/v1/runs/${busy.body.id}/cancel`, {});
    await runSatisfying(client, busy.body.id, (run) => run.status === 'cancelled', 'the run was not cancelled');

    const forgotten = await client.delete('/v1/memories?subject_id=cy');
    assert.equal(forgotten.status, 200, JSON.stringify(forgotten.body));
    assert.deepEqual(forgotten.body, {
      id: 'cy',
      object: 'subject',
      forgotten: true,
      removed: {
        memories: { current: 3, superseded: 1 },
        memory_sources: 4,
        threads: 2,
        thread_messages: { user: 4, assistant: 4 },
        runs_cleared: 6,
        experiment_items_cleared: 0,
      },
    });
    assert.deepEqual(await memoriesOf('cy'), []);
    assert.deepEqual((await client.get('/v1/threads?subject_id=cy')).body.data, []);
    const left = await client.get(`/v1/threads/${shared}/messages`);
    assert.deepEqual(
      left.body.data.map((m: { content: string }) => m.content),
      ['Someone else here.', 'Hello.'],
    );
    assert.equal((await client.get(`/v1/threads/${shared}`)).body.message_count, 2);
    // The thread goes on after the messages taken from its middle: the next turn is added after the last one.
    stack.openai.enqueue({ text: ['Welcome back.'], usage: { input: 5, output: 5 } });
    const next = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Back again.', thread_id: shared });
    assert.equal(next.body.status, 'completed', JSON.stringify(next.body.error));
    assert.deepEqual(
      lastRequest()
        .messages.filter((m) => m.role !== 'system')
        .map((m) => m.content),
      ['Someone else here.', 'Hello.', 'Back again.'],
    );
    assert.deepEqual(
      (await client.get(`/v1/threads/${shared}/messages`)).body.data.map((m: { content: string }) => m.content),
      ['Someone else here.', 'Hello.', 'Back again.', 'Welcome back.'],
    );
    assert.equal((await client.get(`/v1/threads/${shared}`)).body.message_count, 4);
    const cleared = (await client.get(`/v1/runs/${loose.body.id}`)).body;
    assert.deepEqual([cleared.input, cleared.output.text], [[], '']);
    await memoriesBecome('dee', ['name: Dee (current)']);
    const audit = (await client.get('/v1/audit-logs?target_id=cy')).body.data;
    assert.deepEqual(
      audit.map((e: { action: string; outcome: { status: number } }) => `${e.action} ${e.outcome.status}`),
      ['subject.forget 200', 'subject.forget 409'],
    );
    // Forgetting again finds nothing; a subject_id is required.
    assert.deepEqual((await client.delete('/v1/memories?subject_id=cy')).body.removed.memories, { current: 0, superseded: 0 });
    assert.equal((await client.delete('/v1/memories')).status, 400);
  });

  it('learns nothing for agents without memory, and gives their runs none', async () => {
    const plain = await createAgent(client);
    const thread = (await client.post('/v1/threads', { subject_id: 'ada' })).body.id;
    stack.openai.enqueue({ text: ['Ok.'], usage: { input: 5, output: 5 } });
    const run = await client.post(`/v1/agents/${plain.id}/run`, { input: 'My favourite colour is teal.', thread_id: thread });
    assert.equal(run.body.status, 'completed');
    assert.equal(
      lastRequest().messages.some((m) => String(m.content).startsWith('What the user has told you')),
      false,
    );
    // Another run for the subject, by the agent with memory, after the first one's ending has been handled.
    await said('ada', 'Thanks.');
    assert.equal(
      (await memoriesOf('ada')).some((m) => m.attribute === 'favourite colour'),
      false,
    );
    assert.equal((await client.get(`/v1/memories?thread_id=${thread}`)).body.data.length, 0);
  });
});

describe('memory read by a model (AGENTPLANE_MEMORY_MODEL)', function () {
  this.timeout(120_000);
  let stack: RunsStack;
  const MEMORY_MODEL = 'gpt-4.1-nano';

  before(async () => {
    stack = await startRunsStack('memories-model', { AGENTPLANE_MEMORY_MODEL: MEMORY_MODEL });
  });
  after(async () => {
    await stack?.stop();
  });

  it("keeps the model's facts whose words are in the message, cites them, and charges its call to the run as memory", async () => {
    const client = stack.tenant.admin;
    const agent = await createAgent(client, { memory: { enabled: true } });
    const thread = (await client.post('/v1/threads', { subject_id: 'zed' })).body.id;
    const said = 'Hi there, call me Zed. These days I mostly drink oolong.';
    stack.openai.enqueue({ model: 'gpt-4.1-mini', text: ['Hello Zed.'], usage: { input: 20, output: 3 } });
    stack.openai.enqueue({
      model: MEMORY_MODEL,
      tool_calls: [
        {
          name: 'record_facts',
          arguments: JSON.stringify({
            facts: [
              { message: 1, attribute: 'Name', value: 'Zed', quote: 'call me Zed', confidence: 0.95 },
              { message: 1, attribute: 'opinion of oolong', value: 'likes', quote: 'I mostly drink oolong', confidence: 0.7 },
              { message: 1, attribute: 'email', value: 'zed@example.com', quote: 'my email is zed@example.com', confidence: 0.9 },
              { message: 2, attribute: 'age', value: '40', quote: 'Hi there', confidence: 0.9 },
            ],
          }),
        },
      ],
      usage: { input: 1000, output: 100 },
    });
    const run = await client.post(`/v1/agents/${agent.id}/run`, { input: said, thread_id: thread });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    const memories: Memory[] = await eventually(
      async () => {
        const found = (await client.get('/v1/memories?subject_id=zed')).body.data;
        assert.equal(found.length, 2);
        return found;
      },
      { timeoutMs: 20_000, message: "the model's facts were not stored" },
    );
    const byAttribute = Object.fromEntries(memories.map((m) => [m.attribute, m]));
    assert.deepEqual(Object.keys(byAttribute).sort(), ['name', 'opinion of oolong']);
    const name = byAttribute.name as Memory & { extractor: string };
    assert.equal(name.extractor, MEMORY_MODEL);
    assert.equal(name.sources[0]!.quote, 'call me Zed');
    assert.equal([...said].slice(name.sources[0]!.start, name.sources[0]!.end).join(''), 'call me Zed');
    // The model was asked once, with the subject's message, and its call is in the ledger as the run's memory reading.
    const asked = stack.openai.requests.filter((r) => r.model === MEMORY_MODEL);
    assert.equal(asked.length, 1);
    assert.match(JSON.stringify(asked[0]), /Message 1:\\nHi there, call me Zed/);
    const { rows } = await stack.api.services.db.query<{ cost: string; agent_id: string }>(
      `SELECT cost::text AS cost, agent_id FROM usage_records WHERE source = 'memory' AND run_id = $1`,
      [run.body.id],
    );
    assert.deepEqual(rows, [{ cost: '0.00014', agent_id: agent.id }]);
  });

  it('reads with the offline engine, making no call, while a budget the call would count for is exhausted', async () => {
    const client = stack.tenant.admin;
    const agent = await createAgent(client, { memory: { enabled: true }, model_settings: { max_output_tokens: 10 } });
    const budget = await client.post('/v1/budgets', { scope: { type: 'agent', id: agent.id }, period: 'day', limit_usd: '0.001' });
    assert.equal(budget.status, 201, JSON.stringify(budget.body));
    const thread = (await client.post('/v1/threads', { subject_id: 'yan' })).body.id;
    const asked = stack.openai.requests.filter((r) => r.model === MEMORY_MODEL).length;
    // The run's own call spends the budget whole.
    stack.openai.enqueue({ model: 'gpt-4.1-mini', text: ['Hi Yan.'], usage: { input: 3000, output: 10 } });
    const run = await client.post(`/v1/agents/${agent.id}/run`, { input: 'My name is Yan.', thread_id: thread });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    const [memory] = await eventually(
      async () => {
        const found = (await client.get('/v1/memories?subject_id=yan')).body.data;
        assert.equal(found.length, 1);
        return found;
      },
      { timeoutMs: 20_000, message: 'the offline engine did not read the message' },
    );
    assert.equal(memory.extractor, 'rules');
    assert.equal(stack.openai.requests.filter((r) => r.model === MEMORY_MODEL).length, asked);
  });
});
