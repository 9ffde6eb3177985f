import assert from 'node:assert/strict';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';
import { newTenant } from '../support/api.js';
import { messageTokens, THREAD_MESSAGES_MAX } from '../../records/threads.js';

type SentMessage = { role: string; content: unknown };
type SentRequest = { model: string; messages: SentMessage[] };

describe('threads: conversations that last', function () {
  this.timeout(120_000);
  let stack: RunsStack;
  const lastRequest = () => stack.openai.requests.at(-1) as unknown as SentRequest;
  const sent = (request: SentRequest) => request.messages.map((m) => [m.role, m.content]);

  before(async () => {
    stack = await startRunsStack('threads');
  });
  after(async () => {
    await stack?.stop();
  });

  it('gives each run on a thread the conversation so far, adds its turn when it completes, and lists, searches and pages it', async () => {
    const client = stack.tenant.admin;
    const agent = await createAgent(client);
    const created = await client.post('/v1/threads', { subject_id: 'customer-42', metadata: { channel: 'email' } });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const thread = created.body;
    assert.equal(thread.object, 'thread');
    assert.equal(thread.message_count, 0);

    stack.openai.enqueue({ text: ['Hello Ada, noted: your order is 1234.'], usage: { input: 5, output: 5 } });
    const first = await client.post(`/v1/agents/${agent.id}/run`, { input: 'I am Ada; my order is 1234.', thread_id: thread.id });
    assert.equal(first.body.status, 'completed', JSON.stringify(first.body));
    assert.equal(first.body.thread_id, thread.id);
    assert.equal(first.body.subject_id, 'customer-42', "the run takes its thread's subject");

    stack.openai.enqueue({ text: ['Order 1234 ships tomorrow.'], usage: { input: 5, output: 5 } });
    const second = await client.post(`/v1/agents/${agent.id}/run`, { input: 'When does it ship?', thread_id: thread.id });
    assert.equal(second.body.status, 'completed');
    assert.deepEqual(sent(lastRequest()), [
      ['system', 'Answer briefly.'],
      ['user', 'I am Ada; my order is 1234.'],
      ['assistant', 'Hello Ada, noted: your order is 1234.'],
      ['user', 'When does it ship?'],
    ]);

    const read = await client.get(`/v1/threads/${thread.id}`);
    assert.equal(read.body.message_count, 4);
    assert.equal(read.body.last_run_id, second.body.id);
    const messages = await client.get(`/v1/threads/${thread.id}/messages`);
    assert.deepEqual(
      messages.body.data.map((m: { role: string; content: string; run_id: string }) => [m.role, m.content, m.run_id]),
      [
        ['user', 'I am Ada; my order is 1234.', first.body.id],
        ['assistant', 'Hello Ada, noted: your order is 1234.', first.body.id],
        ['user', 'When does it ship?', second.body.id],
        ['assistant', 'Order 1234 ships tomorrow.', second.body.id],
      ],
    );
    const paged = await client.get(`/v1/threads/${thread.id}/messages?limit=1&after=${messages.body.data[1].id}`);
    assert.deepEqual([paged.body.data[0].content, paged.body.has_more], ['When does it ship?', true]);
    const newest = await client.get(`/v1/threads/${thread.id}/messages?limit=2&order=desc`);
    assert.deepEqual(
      newest.body.data.map((m: { content: string }) => m.content),
      ['Order 1234 ships tomorrow.', 'When does it ship?'],
    );
    const badCursor = await client.get(`/v1/threads/${thread.id}/messages?after=msg_unknown`);
    assert.equal(badCursor.status, 400);
    assert.equal(badCursor.body.error.code, 'invalid_cursor');

    const other = await client.post('/v1/threads', { subject_id: 'customer-7' });
    const ids = async (query: string) => (await client.get(`/v1/threads?${query}`)).body.data.map((t: { id: string }) => t.id);
    assert.deepEqual(await ids('q=ships%20TOMORROW'), [thread.id]);
    assert.deepEqual(await ids('q=tomorrow%20yesterday'), []);
    // A query of no words (punctuation alone, or nothing) filters nothing, as the document says.
    assert.deepEqual(await ids('q=%21%3F%21&order=asc'), [thread.id, other.body.id]);
    assert.deepEqual(await ids('q=&order=asc'), [thread.id, other.body.id]);
    assert.deepEqual(await ids(`agent_id=${agent.id}`), [thread.id]);
    assert.deepEqual(await ids('subject_id=customer-7'), [other.body.id]);
    assert.deepEqual(await ids('metadata[channel]=email'), [thread.id]);
    assert.deepEqual(await ids('order=asc'), [thread.id, other.body.id]);

    const events = await client.get(`/v1/events?object_id=${thread.id}`);
    assert.deepEqual(events.body.data.map((e: { type: string }) => e.type).sort(), ['thread.created', 'thread.updated', 'thread.updated']);
  });

  it('runs one at a time on a thread: another answers 409 thread_busy, or waits its turn when asked to', async () => {
    const client = stack.tenant.admin;
    const agent = await createAgent(client);
    const thread = (await client.post('/v1/threads', {})).body;
    stack.openai.enqueue({ text: ['Thinking'], hang: true });
    const slow = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Take your time.', thread_id: thread.id, wait: false });
    await runSatisfying(client, slow.body.id, (run) => run.status === 'in_progress', 'the slow run did not start');

    const busy = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Me too.', thread_id: thread.id });
    assert.equal(busy.status, 409, JSON.stringify(busy.body));
    assert.equal(busy.body.error.code, 'thread_busy');
    assert.match(busy.body.error.message, new RegExp(slow.body.id));
    const notDeleted = await client.delete(`/v1/threads/${thread.id}`);
    assert.equal(notDeleted.status, 409);
    assert.equal(notDeleted.body.error.code, 'thread_busy');

    const waiting = await client.post(`/v1/agents/${agent.id}/run`, {
      input: 'After you.',
      thread_id: thread.id,
      on_thread_busy: 'wait',
      wait: false,
    });
    assert.equal(waiting.status, 202, JSON.stringify(waiting.body));
    assert.equal(waiting.body.status, 'queued');
    stack.openai.enqueue({ text: ['My turn now.'], usage: { input: 5, output: 5 } });
    const cancelled = await client.post(`/v1/runs/${slow.body.id}/cancel`, {});
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    const done = await runSatisfying(client, waiting.body.id, (run) => run.status === 'completed', 'the waiting run did not run');
    assert.equal(done.output.text, 'My turn now.');
    // A cancelled run adds nothing to its thread; the one that completed adds its turn.
    const messages = await client.get(`/v1/threads/${thread.id}/messages`);
    assert.deepEqual(
      messages.body.data.map((m: { content: string }) => m.content),
      ['After you.', 'My turn now.'],
    );
  });

  it('takes runs on a thread until it holds 100,000 messages, then answers 409 thread_full, and deletes it whole', async () => {
    const client = stack.tenant.admin;
    const agent = await createAgent(client);
    const thread = (await client.post('/v1/threads', {})).body;
    // One message short of the most, as earlier runs would have left them.
    const held = THREAD_MESSAGES_MAX - 1;
    await stack.api.services.db.query(
      `WITH added AS (
         INSERT INTO thread_messages (id, thread_id, project_id, seq, role, content, tokens)
         SELECT 'tmsg_seed' || $1 || n, $1, $2, n, CASE WHEN n % 2 = 1 THEN 'user' ELSE 'assistant' END, 'said ' || n, 6
         FROM generate_series(1, $3::int) AS n RETURNING 1
       )
       UPDATE threads SET message_count = (SELECT count(*) FROM added) WHERE id = $1`,
      [thread.id, stack.tenant.projectId, held],
    );

    // A run admitted before the thread is full adds its whole turn.
    stack.openai.enqueue({ text: ['Still here.'], usage: { input: 5, output: 5 } });
    const last = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Are you there?', thread_id: thread.id });
    assert.equal(last.body.status, 'completed', JSON.stringify(last.body));
    assert.equal((await client.get(`/v1/threads/${thread.id}`)).body.message_count, held + 2);

    const requests = stack.openai.requests.length;
    for (const extra of [{}, { on_thread_busy: 'wait' }]) {
      const full = await client.post(`/v1/agents/${agent.id}/run`, { input: 'And now?', thread_id: thread.id, ...extra });
      assert.equal(full.status, 409, JSON.stringify(full.body));
      assert.equal(full.body.error.code, 'thread_full');
      assert.equal(full.body.error.param, 'thread_id');
      assert.match(full.body.error.message, /100000/);
    }
    assert.equal(stack.openai.requests.length, requests, 'a refused run called the model');
    const runs = await client.get(`/v1/runs?thread_id=${thread.id}`);
    assert.deepEqual(
      runs.body.data.map((r: { id: string }) => r.id),
      [last.body.id],
      'a refused run was recorded',
    );

    const deleted = await client.delete(`/v1/threads/${thread.id}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.equal(deleted.body.messages_removed, held + 2);
  });

  it('keeps the newest turns whole within the model window and says how many older messages it left out', async () => {
    const client = stack.tenant.admin;
    // A model found on a local server: an 8,192-token window, 4,096 of it kept for the answer.
    const agent = await createAgent(client, { model: 'local-llama' });
    const thread = (await client.post('/v1/threads', {})).body;
    const said = (i: number, who: string) => `${who} ${i}: ${'word '.repeat(120)}`;
    for (let i = 0; i < 12; i++) {
      stack.openai.enqueue({ text: [said(i, 'answer')], usage: { input: 5, output: 5 } });
      const run = await client.post(`/v1/agents/${agent.id}/run`, { input: said(i, 'question'), thread_id: thread.id });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    }
    stack.openai.enqueue({ text: ['Done.'], usage: { input: 5, output: 5 } });
    await client.post(`/v1/agents/${agent.id}/run`, { input: 'And now?', thread_id: thread.id });
    const messages = lastRequest().messages;
    const history = messages.slice(2, -1);
    const note = messages[1]!;
    assert.equal(note.role, 'system');
    const omitted = Number(/^(\d+) earlier message\(s\) of this conversation are not shown\.$/.exec(String(note.content))?.[1]);
    assert.ok(omitted > 0 && omitted < 24, `omitted ${omitted}`);
    assert.equal(history.length, 24 - omitted);
    // The newest, in order and whole; never the start of one cut off.
    const expected = Array.from({ length: 12 }, (_, i) => [said(i, 'question'), said(i, 'answer')])
      .flat()
      .slice(omitted);
    assert.deepEqual(
      history.map((m) => m.content),
      expected,
    );
    // As many as fit: the call counted as the window rule counts it fits what the answer leaves, and one more turn would not.
    const counted = messages.reduce((sum, m) => sum + messageTokens(JSON.stringify(m.content)), 0);
    // Whole turns: a question is never kept without its answer, nor an answer without its question.
    assert.equal(omitted % 2, 0, `${omitted} messages left out: a turn was cut`);
    const turn = omitted / 2 - 1;
    const nextOlder = messageTokens(JSON.stringify(said(turn, 'question'))) + messageTokens(JSON.stringify(said(turn, 'answer')));
    // The window, less the answer's allowance and the (empty) tools; the note is counted at its longest, a token or two more.
    const room = 8_192 - 4_096 - messageTokens('[]');
    assert.ok(counted <= room, `the call's messages count ${counted} tokens, more than ${room}`);
    assert.ok(counted + nextOlder > room - 3, `one more turn (${nextOlder} tokens) would have fit beside ${counted}`);
  });

  it('refuses what does not fit a thread with a clear 4xx, and keeps threads to their project', async () => {
    const client = stack.tenant.admin;
    const agent = await createAgent(client);
    const thread = (await client.post('/v1/threads', { subject_id: 'alice' })).body;
    stack.openai.enqueue({ text: ['Hi.'], usage: { input: 5, output: 5 } });
    const earlier = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Hi.' });

    const both = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Hi.', thread_id: thread.id, previous_run_id: earlier.body.id });
    assert.equal(both.status, 400);
    assert.equal(both.body.error.param, 'thread_id');
    const mismatch = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Hi.', thread_id: thread.id, subject_id: 'bob' });
    assert.equal(mismatch.status, 400);
    assert.equal(mismatch.body.error.code, 'subject_mismatch');
    const unknown = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Hi.', thread_id: 'thread_unknown' });
    assert.equal(unknown.status, 404);
    const stray = await client.post('/v1/threads', { subject_id: '', metadata: { a: 'b' } });
    assert.equal(stray.status, 400);

    const other = await newTenant(stack.api, 'threads-other');
    assert.equal((await other.admin.get(`/v1/threads/${thread.id}`)).status, 404);
    assert.equal((await other.admin.get(`/v1/threads/${thread.id}/messages`)).status, 404);
    assert.equal((await other.admin.delete(`/v1/threads/${thread.id}`)).status, 404);
    assert.deepEqual((await other.admin.get('/v1/threads')).body.data, []);
    const otherAgent = await createAgent(other.admin);
    const foreign = await other.admin.post(`/v1/agents/${otherAgent.id}/run`, { input: 'Hi.', thread_id: thread.id });
    assert.equal(foreign.status, 404);
  });

  it("deletes a thread with its messages and clears its runs' conversation, keeping what they cost", async () => {
    const client = stack.tenant.admin;
    const agent = await createAgent(client);
    const network = await client.post('/v1/networks', { name: 'desk', members: [agent.id], router: { type: 'sequential' } });
    assert.equal(network.status, 201, JSON.stringify(network.body));
    const thread = (await client.post('/v1/threads', {})).body;
    stack.openai.enqueue({ text: ['The code is swordfish.'], usage: { input: 5, output: 5 } });
    const run = await client.post(`/v1/agents/${agent.id}/run`, { input: 'What is the code?', thread_id: thread.id });
    assert.equal(run.body.status, 'completed');
    // A network run continues the same thread: its hop sees the conversation so far.
    stack.openai.enqueue({ text: ['Still swordfish.'], usage: { input: 5, output: 5 } });
    const networkRun = await client.post(`/v1/networks/${network.body.id}/run`, { input: 'And now?', thread_id: thread.id });
    assert.equal(networkRun.body.status, 'completed', JSON.stringify(networkRun.body.error));
    assert.deepEqual(sent(lastRequest()).slice(1), [
      ['user', 'What is the code?'],
      ['assistant', 'The code is swordfish.'],
      ['user', 'And now?'],
    ]);
    assert.equal((await client.get(`/v1/threads?network_id=${network.body.id}`)).body.data[0].id, thread.id);

    const deleted = await client.delete(`/v1/threads/${thread.id}`);
    assert.equal(deleted.status, 200, JSON.stringify(deleted.body));
    assert.deepEqual(deleted.body, {
      id: thread.id,
      object: 'thread',
      deleted: true,
      messages_removed: 4,
      memories_removed: 0,
      runs_cleared: 3,
      experiment_items_cleared: 0,
    });
    assert.equal((await client.get(`/v1/threads/${thread.id}`)).status, 404);
    const after = (await client.get(`/v1/runs/${run.body.id}`)).body;
    assert.deepEqual(after.input, []);
    assert.equal(after.output.text, '');
    assert.equal(after.cost, run.body.cost);
    assert.equal(JSON.stringify(after).includes('swordfish'), false);
    assert.deepEqual((await client.get('/v1/threads?q=swordfish')).body.data, []);
    const audit = await client.get(`/v1/audit-logs?target_id=${thread.id}`);
    assert.deepEqual(audit.body.data.map((e: { action: string }) => e.action).sort(), ['thread.create', 'thread.delete']);
  });
});
