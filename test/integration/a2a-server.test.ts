import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { findTool } from '../../cli/tools.js';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { newTenant, type Tenant } from '../support/api.js';
import { eventually, withinDeadline } from '../support/eventually.js';
import { png } from '../support/fixtures.js';

const COST = 'https://agentplane.io/a2a/extensions/cost/v1';
const CLIENT_SCRIPT = fileURLToPath(new URL('../../../test/support/a2a_client.py', import.meta.url));

type Json = any;

/** The Python client, started once: a request a line in, its answer a line out, in order. */
class PythonClient {
  private readonly child: ChildProcessWithoutNullStreams;
  private readonly waiting: { resolve: (answer: Json) => void; reject: (err: Error) => void }[] = [];
  private stderr = '';

  constructor(python: string) {
    this.child = spawn(python, [CLIENT_SCRIPT]);
    this.child.stderr.on('data', (chunk: Buffer) => (this.stderr = (this.stderr + chunk.toString()).slice(-4000)));
    createInterface({ input: this.child.stdout }).on('line', (line) => this.waiting.shift()?.resolve(JSON.parse(line)));
    this.child.on('exit', (code) => {
      for (const waiter of this.waiting.splice(0)) waiter.reject(new Error(`the Python client exited (${code}): ${this.stderr}`));
    });
  }

  ask(request: Record<string, unknown>): Promise<Json> {
    return withinDeadline(
      new Promise((resolve, reject) => {
        this.waiting.push({ resolve, reject });
        this.child.stdin.write(`${JSON.stringify(request)}\n`);
      }),
      45_000,
      `the Python client did not answer ${JSON.stringify(request.op)}`,
    );
  }

  close(): void {
    this.child.stdin.end();
  }
}

describe('A2A server: agents and networks as A2A agents, driven by the official Python SDK', function () {
  this.timeout(60_000);
  let stack: RunsStack;
  let client: PythonClient;
  let agent: Json;
  let url: string;
  let key: string;

  /** One operation of the official A2A Python client against this server (test/support/a2a_client.py). */
  function a2a(request: Record<string, unknown>): Promise<Json> {
    return client.ask({ url, key, ...request });
  }

  /** A JSON-RPC request as curl would send it. */
  async function rpc(
    body: unknown,
    headers: Record<string, string> = {},
    target = url,
  ): Promise<{ status: number; headers: Headers; body: Json }> {
    const response = await fetch(target, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'a2a-version': '1.0', ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, headers: response.headers, body: JSON.parse(text) };
  }

  before(async () => {
    client = new PythonClient(findTool('a2a-python'));
    stack = await startRunsStack('a2a-server');
    agent = await createAgent(stack.tenant.admin, { name: 'Support desk', description: 'Answers questions about orders.' });
    url = `${stack.api.url}/a2a/${agent.id}`;
    key = stack.tenant.admin.key!;
  });
  after(async () => {
    client?.close();
    await stack?.stop();
  });

  it('serves an Agent Card with its skill, both protocol versions, streaming, the bearer scheme and the cost extension', async () => {
    const card = await a2a({ op: 'card' });
    assert.equal(card.name, 'Support desk');
    assert.equal(card.description, 'Answers questions about orders.');
    assert.deepEqual(card.supportedInterfaces, [
      { url, protocolBinding: 'JSONRPC', protocolVersion: '1.0' },
      { url, protocolBinding: 'JSONRPC', protocolVersion: '0.3' },
    ]);
    assert.equal(card.capabilities.streaming, true);
    assert.equal(card.capabilities.pushNotifications ?? false, false);
    assert.deepEqual(card.capabilities.extensions, [{ uri: COST, description: 'Cost of the task in USD.' }]);
    assert.equal(card.securitySchemes.bearer.httpAuthSecurityScheme.scheme, 'Bearer');
    assert.deepEqual(card.securityRequirements, [{ schemes: { bearer: {} } }]);
    assert.deepEqual(
      card.skills.map((s: Json) => [s.id, s.name]),
      [[agent.id, 'Support desk']],
    );
    assert.deepEqual(card.defaultInputModes, [
      'text/plain',
      'application/json',
      'application/pdf',
      'image/png',
      'image/jpeg',
      'audio/wav',
      'audio/mp4',
    ]);

    // A 0.3 client sends no A2A-Version and reads the card as 0.3 wrote it.
    const legacy = await fetch(`${url}/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${key}` } });
    const legacyCard: Json = await legacy.json();
    assert.deepEqual([legacyCard.protocolVersion, legacyCard.url, legacyCard.preferredTransport], ['0.3', url, 'JSONRPC']);
    assert.deepEqual(legacyCard.securitySchemes.bearer, {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'Agentplane API key',
      description: 'An Agentplane API key of the project.',
    });
    assert.match(legacy.headers.get('vary') ?? '', /A2A-Version/);
    const etag = legacy.headers.get('etag')!;
    // (fetch adds `Cache-Control: no-cache` to a conditional request unless it is given one: that would ask past the cache.)
    const again = await fetch(`${url}/.well-known/agent-card.json`, {
      headers: { authorization: `Bearer ${key}`, 'if-none-match': etag, 'cache-control': 'max-age=0' },
    });
    assert.equal(again.status, 304);

    // Behind the ingress, the card names the address the client used.
    const forwarded = await fetch(`${url}/.well-known/agent-card.json`, {
      headers: {
        authorization: `Bearer ${key}`,
        'a2a-version': '1.0',
        'x-forwarded-proto': 'https',
        'x-forwarded-host': 'agents.example.com',
      },
    });
    assert.equal(((await forwarded.json()) as Json).supportedInterfaces[0].url, `https://agents.example.com/a2a/${agent.id}`);
  });

  it('answers without a key 401 with the bearer challenge, and another project’s key 404 for the card and the endpoint', async () => {
    const anonymous = await fetch(`${url}/.well-known/agent-card.json`);
    assert.equal(anonymous.status, 401);
    assert.match(anonymous.headers.get('www-authenticate') ?? '', /^Bearer /);
    const unauthenticated = await rpc({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: 'run_x' } }, { authorization: '' });
    assert.equal(unauthenticated.status, 401);
    // Refused before its body is read: the request's id is not known, so the answer's is null (JSON-RPC 2.0, 5).
    assert.deepEqual([unauthenticated.body.jsonrpc, unauthenticated.body.id, unauthenticated.body.error.code], ['2.0', null, -32000]);

    const other: Tenant = await newTenant(stack.api, 'a2a-other');
    const otherKey = other.admin.key!;
    const card = await fetch(`${url}/.well-known/agent-card.json`, { headers: { authorization: `Bearer ${otherKey}` } });
    assert.equal(card.status, 404);
    const resolved = await a2a({ op: 'card', key: otherKey });
    assert.equal(resolved.error, 'AgentCardResolutionError');
    const call = await rpc({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: 'run_x' } }, { authorization: `Bearer ${otherKey}` });
    assert.equal(call.status, 404);
    assert.equal(call.body.error.code, -32000);
  });

  it('runs a blocking message/send as a task: the answer as artifact, a thread as context, the cost; the context continues the thread', async () => {
    stack.openai.enqueue({ text: ['Order 1234 ', 'ships tomorrow.'], usage: { input: 1000, output: 300 } });
    const sent = await a2a({ op: 'send', text: 'When does order 1234 ship?' });
    assert.equal(sent.events.length, 1, JSON.stringify(sent));
    const task = sent.events[0].task;
    assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
    assert.match(task.id, /^run_/);
    assert.match(task.contextId, /^thread_/);
    assert.deepEqual(task.artifacts[0].parts, [{ text: 'Order 1234 ships tomorrow.', mediaType: 'text/plain' }]);
    assert.deepEqual(
      task.history.map((m: Json) => [m.role, m.parts[0].text]),
      [
        ['ROLE_USER', 'When does order 1234 ship?'],
        ['ROLE_AGENT', 'Order 1234 ships tomorrow.'],
      ],
    );
    const ledger = (await stack.tenant.admin.get(`/v1/runs/${task.id}`)).body;
    assert.equal(ledger.thread_id, task.contextId);
    assert.deepEqual(task.metadata[COST], {
      run_id: task.id,
      cost_usd: Number(ledger.cost),
      input_tokens: ledger.usage.input_tokens,
      output_tokens: ledger.usage.output_tokens,
    });
    assert.ok(task.metadata[COST].cost_usd > 0);
    const audit = await stack.tenant.admin.get(`/v1/audit-logs?target_id=${task.id}`);
    assert.deepEqual(
      audit.body.data.map((e: Json) => [e.action, e.outcome.status]),
      [['run.create', 202]],
    );

    // The same context is the same conversation: the next task's model call is given the first exchange.
    stack.openai.enqueue({ text: ['Yes, by noon.'], usage: { input: 10, output: 3 } });
    const next = (await a2a({ op: 'send', text: 'Before noon?', context_id: task.contextId })).events[0].task;
    assert.equal(next.contextId, task.contextId);
    assert.equal(next.status.state, 'TASK_STATE_COMPLETED');
    const messages = (stack.openai.requests.at(-1) as Json).messages.map((m: Json) => [m.role, m.content]);
    assert.deepEqual(messages.slice(-3), [
      ['user', 'When does order 1234 ship?'],
      ['assistant', 'Order 1234 ships tomorrow.'],
      ['user', 'Before noon?'],
    ]);

    // An A2A 0.3 client (the SDK's compat transport: `message/send`, `tasks/get`) reaches the same agent.
    stack.openai.enqueue({ text: ['Hello from 0.3.'], usage: { input: 5, output: 3 } });
    const legacy = (await a2a({ op: 'send', text: 'Hi', version: '0.3' })).events[0].task;
    const legacyRead = await a2a({ op: 'get', task_id: legacy.id, version: '0.3' });
    assert.equal(legacyRead.status.state, 'TASK_STATE_COMPLETED');
    assert.equal(legacyRead.artifacts[0].parts[0].text, 'Hello from 0.3.');
    assert.equal(legacyRead.metadata[COST].run_id, legacy.id);
  });

  it('streams a task: the task, its state, the answer as it is written, then the whole answer and the final status with its cost', async () => {
    stack.openai.enqueue({ text: ['Streaming ', 'works.'], usage: { input: 20, output: 4 } });
    const { events } = await a2a({ op: 'stream', text: 'Stream it.' });
    const first = events[0].task;
    assert.ok(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'].includes(first.status.state), first.status.state);
    // The text as the model writes it, appended to the output artifact; then the whole of it, in their place.
    const chunks = events.filter((e: Json) => e.artifactUpdate).map((e: Json) => e.artifactUpdate);
    assert.ok(chunks.every((c: Json) => c.artifact.artifactId === `${first.id}-output`));
    const whole = chunks.at(-1);
    assert.deepEqual(whole.artifact.parts, [{ text: 'Streaming works.', mediaType: 'text/plain' }]);
    assert.deepEqual([whole.append ?? false, whole.lastChunk], [false, true]);
    const written = chunks.slice(0, -1);
    assert.ok(written.length > 0, 'no text was streamed before the end');
    assert.equal(written.map((c: Json) => c.artifact.parts[0].text).join(''), 'Streaming works.');
    assert.deepEqual(
      written.map((c: Json) => c.append ?? false),
      written.map((_: Json, i: number) => i > 0),
    );
    const last = events.at(-1).statusUpdate;
    assert.equal(last.status.state, 'TASK_STATE_COMPLETED');
    assert.equal(last.taskId, first.id);
    assert.deepEqual(last.metadata[COST], { run_id: first.id, cost_usd: last.metadata[COST].cost_usd, input_tokens: 20, output_tokens: 4 });
    const states = events.filter((e: Json) => e.statusUpdate).map((e: Json) => e.statusUpdate.status.state);
    assert.deepEqual(states.slice(-1), ['TASK_STATE_COMPLETED']);
  });

  it('serves a network as one A2A agent: its members as skills, its task the network run, costed with every hop', async () => {
    const members = [await createAgent(stack.tenant.admin, { name: 'drafter' }), await createAgent(stack.tenant.admin, { name: 'editor' })];
    const created = await stack.tenant.admin.post('/v1/networks', {
      name: 'Writers',
      members: members.map((m) => m.id),
      router: { type: 'sequential' },
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const network = { url: `${stack.api.url}/a2a/${created.body.id}` };
    const card = await a2a({ op: 'card', ...network });
    assert.equal(card.name, 'Writers');
    assert.deepEqual(
      card.skills.map((s: Json) => [s.id, s.name]),
      members.map((m) => [m.id, m.name]),
    );

    stack.openai.enqueue({ text: ['draft'], usage: { input: 1000, output: 100 } });
    stack.openai.enqueue({ text: ['edited'], usage: { input: 2000, output: 200 } });
    const { events } = await a2a({ op: 'stream', text: 'Write about otters.', ...network });
    const last = events.at(-1).statusUpdate;
    assert.equal(last.status.state, 'TASK_STATE_COMPLETED');
    const whole = events.filter((e: Json) => e.artifactUpdate).at(-1).artifactUpdate;
    assert.equal(whole.artifact.parts[0].text, 'edited');
    const ledger = (await stack.tenant.admin.get(`/v1/runs/${last.taskId}`)).body;
    assert.equal(ledger.network_id, created.body.id);
    assert.deepEqual(last.metadata[COST], { run_id: last.taskId, cost_usd: Number(ledger.cost), input_tokens: 3000, output_tokens: 300 });
    // Its tasks are its network runs: the hops are the members' runs, not tasks of their own.
    const listed = await a2a({ op: 'list', ...network });
    assert.deepEqual(
      listed.tasks.map((t: Json) => t.id),
      [last.taskId],
    );
  });

  it('cancels a long task; a task that has ended is not cancelable; another project cannot read or cancel it', async () => {
    stack.openai.enqueue({ text: ['Thinking'], hang: true });
    const started = (await a2a({ op: 'send', text: 'Think forever.', return_immediately: true })).events[0].task;
    assert.ok(['TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING'].includes(started.status.state));

    const other = await newTenant(stack.api, 'a2a-intruder');
    const theirs = await createAgent(other.admin);
    const intruder = { url: `${stack.api.url}/a2a/${theirs.id}`, key: other.admin.key };
    assert.equal((await a2a({ op: 'get', task_id: started.id, ...intruder })).error, 'TaskNotFoundError');
    assert.equal((await a2a({ op: 'cancel', task_id: started.id, ...intruder })).error, 'TaskNotFoundError');

    await eventually(async () => assert.equal((await stack.tenant.admin.get(`/v1/runs/${started.id}`)).body.status, 'in_progress'), {
      message: 'the run did not start',
    });
    // A subscriber that goes away leaves the task running: closing a stream is not cancelling.
    const closing = new AbortController();
    const subscribed = await fetch(url, {
      method: 'POST',
      signal: closing.signal,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', 'a2a-version': '1.0' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 'sub', method: 'SubscribeToTask', params: { id: started.id } }),
    });
    assert.equal(subscribed.headers.get('content-type'), 'text/event-stream');
    const reader = subscribed.body!.getReader();
    let text = '';
    while (!text.includes('\n\n')) text += new TextDecoder().decode((await reader.read()).value);
    assert.equal(JSON.parse(text.slice('data: '.length, text.indexOf('\n'))).result.task.id, started.id);
    closing.abort();
    assert.equal((await stack.tenant.admin.get(`/v1/runs/${started.id}`)).body.status, 'in_progress');

    const cancelled = await a2a({ op: 'cancel', task_id: started.id });
    assert.equal(cancelled.status.state, 'TASK_STATE_CANCELED', JSON.stringify(cancelled));
    assert.equal((await stack.tenant.admin.get(`/v1/runs/${started.id}`)).body.status, 'cancelled');
    const again = await a2a({ op: 'cancel', task_id: started.id });
    assert.equal(again.error, 'TaskNotCancelableError');
    const read = await a2a({ op: 'get', task_id: started.id });
    assert.equal(read.status.state, 'TASK_STATE_CANCELED');
    assert.equal((await a2a({ op: 'get', task_id: 'run_doesnotexist' })).error, 'TaskNotFoundError');
  });

  it('answers a task waiting for a tool call’s approval as auth-required, and goes on once a person has decided', async () => {
    const approver = await createAgent(stack.tenant.admin, {
      name: 'Payer',
      tools: [
        {
          type: 'http',
          name: 'pay',
          url: 'http://127.0.0.1:9/pay',
          parameters: { type: 'object', properties: { amount: { type: 'number' } }, required: ['amount'] },
          approval: { mode: 'always' },
        },
      ],
    });
    stack.openai.enqueue({ tool_calls: [{ name: 'pay', arguments: '{"amount":250}' }] });
    stack.openai.enqueue({ text: ['Not paid: it was refused.'] });
    const payer = { url: `${stack.api.url}/a2a/${approver.id}` };
    const waiting = (await a2a({ op: 'send', text: 'Pay 250.', ...payer })).events[0].task;
    assert.equal(waiting.status.state, 'TASK_STATE_AUTH_REQUIRED', JSON.stringify(waiting.status));
    assert.equal((await a2a({ op: 'get', task_id: waiting.id, ...payer })).status.state, 'TASK_STATE_AUTH_REQUIRED');

    const pending = await stack.tenant.admin.get(`/v1/approvals?status=pending&run_id=${waiting.id}`);
    const decided = await stack.tenant.admin.post(`/v1/approvals/${pending.body.data[0].id}`, { decision: 'reject' });
    assert.equal(decided.status, 200, JSON.stringify(decided.body));
    const done = await eventually(
      async () => {
        const task = await a2a({ op: 'get', task_id: waiting.id, ...payer });
        assert.equal(task.status.state, 'TASK_STATE_COMPLETED');
        return task;
      },
      { message: 'the task did not complete after the decision' },
    );
    assert.equal(done.artifacts[0].parts[0].text, 'Not paid: it was refused.');
  });

  it('answers a message sent again (the same messageId) with the same task, and refuses the id for another message', async () => {
    stack.openai.enqueue({ text: ['Once.'], usage: { input: 3, output: 1 } });
    const send = (text: string) =>
      rpc({
        jsonrpc: '2.0',
        id: 1,
        method: 'SendMessage',
        params: { message: { messageId: 'msg-once', role: 'ROLE_USER', parts: [{ text }] } },
      });
    const calls = stack.openai.requests.length;
    const first = (await send('Say it once.')).body.result.task;
    const again = (await send('Say it once.')).body.result.task;
    assert.equal(again.id, first.id);
    assert.equal(again.status.state, 'TASK_STATE_COMPLETED');
    assert.equal(stack.openai.requests.length, calls + 1, 'the model was called once');
    // A client that asks for the cost extension is told it has it.
    const read = await rpc({ jsonrpc: '2.0', id: 2, method: 'GetTask', params: { id: first.id } }, { 'a2a-extensions': COST });
    assert.equal(read.headers.get('a2a-extensions'), COST);
    assert.equal(read.body.result.metadata[COST].run_id, first.id);
    const other = await send('Something else.');
    assert.equal(other.body.error.code, -32602);
  });

  it('keeps the HTTP status of a run the platform refuses (409 for a busy agent whose concurrency is reject)', async () => {
    const busy = await createAgent(stack.tenant.admin, { name: 'One at a time', concurrency: 'reject' });
    stack.openai.enqueue({ text: ['…'], hang: true });
    const going = await stack.tenant.admin.post(`/v1/agents/${busy.id}/run`, { input: 'Take your time.', wait: false });
    const message = { messageId: 'msg-busy', role: 'ROLE_USER', parts: [{ text: 'And this?' }] };
    const refused = await rpc({ jsonrpc: '2.0', id: 7, method: 'SendMessage', params: { message } }, {}, `${stack.api.url}/a2a/${busy.id}`);
    assert.equal(refused.status, 409);
    assert.deepEqual([refused.body.id, refused.body.error.code, refused.body.error.data[0].reason], [7, -32000, 'AGENT_BUSY']);
    await stack.tenant.admin.post(`/v1/runs/${going.body.id}/cancel`, {});
  });

  it('lists the agent’s tasks, the last changed first, paged by token, by context and state, and none of another project', async () => {
    const lister = await createAgent(stack.tenant.admin, { name: 'Lister' });
    const target = { url: `${stack.api.url}/a2a/${lister.id}` };
    const sent: Json[] = [];
    const exchanges: [string, string][] = [
      ['First.', 'One.'],
      ['Second.', 'Two.'],
      ['Third.', 'Three.'],
    ];
    for (const [text, answer] of exchanges) {
      stack.openai.enqueue({ text: [answer], usage: { input: 2, output: 1 } });
      const contextId = sent.length === 1 ? sent[0].contextId : undefined;
      sent.push((await a2a({ op: 'send', text, context_id: contextId, ...target })).events[0].task);
    }
    const [first, second, third] = sent;
    assert.equal(second.contextId, first.contextId);

    // Two pages of two: the task that ended last first, each once; the token is where the last page ended.
    const page1 = await a2a({ op: 'list', page_size: 2, ...target });
    assert.deepEqual(
      page1.tasks.map((t: Json) => t.id),
      [third.id, second.id],
    );
    assert.deepEqual([page1.pageSize, page1.totalSize], [2, 3]);
    assert.ok(page1.nextPageToken);
    // Artifacts only when asked for; the whole history unless limited.
    assert.equal(page1.tasks[0].artifacts, undefined);
    assert.deepEqual(
      page1.tasks[0].history.map((m: Json) => m.parts[0].text),
      ['Third.', 'Three.'],
    );
    const page2 = await a2a({
      op: 'list',
      page_size: 2,
      page_token: page1.nextPageToken,
      include_artifacts: true,
      history_length: 0,
      ...target,
    });
    assert.deepEqual(
      page2.tasks.map((t: Json) => t.id),
      [first.id],
    );
    assert.equal(page2.nextPageToken ?? '', '');
    assert.equal(page2.tasks[0].artifacts[0].parts[0].text, 'One.');
    assert.equal(page2.tasks[0].history, undefined);

    const context = await a2a({ op: 'list', context_id: first.contextId, ...target });
    assert.deepEqual(
      context.tasks.map((t: Json) => t.id),
      [second.id, first.id],
    );
    assert.equal((await a2a({ op: 'list', status: 'TASK_STATE_COMPLETED', ...target })).totalSize, 3);
    assert.deepEqual((await a2a({ op: 'list', status: 'TASK_STATE_WORKING', ...target })).tasks ?? [], []);
    const listed = async (params: Json) => (await rpc({ jsonrpc: '2.0', id: 'l', method: 'ListTasks', params }, {}, target.url)).body;
    const since = await listed({ statusTimestampAfter: third.status.timestamp });
    assert.deepEqual(
      since.result.tasks.map((t: Json) => t.id),
      [third.id],
    );
    assert.equal((await listed({ pageToken: 'not-a-token' })).error.code, -32602);
    assert.equal((await listed({ pageSize: 101 })).error.code, -32602);

    // Another project's key lists its own agent's tasks, and is not told that this agent exists.
    const other = await newTenant(stack.api, 'a2a-lister');
    const theirs = await createAgent(other.admin);
    const foreign = await a2a({ op: 'list', url: `${stack.api.url}/a2a/${theirs.id}`, key: other.admin.key });
    assert.deepEqual(foreign.tasks ?? [], []);
    assert.ok((await a2a({ op: 'list', ...target, key: other.admin.key })).error);
    const refused = await rpc(
      { jsonrpc: '2.0', id: 'x', method: 'ListTasks', params: {} },
      { authorization: `Bearer ${other.admin.key}` },
      target.url,
    );
    assert.equal(refused.status, 404);
  });

  it('takes a message’s files as the run’s attachments: stored, extracted, and given to the model, in A2A 1.0 and 0.3', async () => {
    const note = { base64: Buffer.from('The launch code is 7-4-1.').toString('base64'), media_type: 'text/plain', filename: 'note.txt' };
    const chart = { base64: png().toString('base64'), media_type: 'image/png', filename: 'chart.png' };
    stack.openai.enqueue({ text: ['It says 7-4-1.'], usage: { input: 30, output: 5 } });
    const task = (await a2a({ op: 'send', text: 'What do the files say?', files: [note, chart] })).events[0].task;
    assert.equal(task.status.state, 'TASK_STATE_COMPLETED', JSON.stringify(task.status));
    const sentToModel = JSON.stringify((stack.openai.requests.at(-1) as Json).messages);
    assert.match(sentToModel, /Attached file note\.txt .*The launch code is 7-4-1\./);
    assert.match(sentToModel, /data:image\/png;base64,/);

    const run = (await stack.tenant.admin.get(`/v1/runs/${task.id}`)).body;
    assert.equal(run.file_ids.length, 2);
    const files = await Promise.all(run.file_ids.map(async (id: string) => (await stack.tenant.admin.get(`/v1/files/${id}`)).body));
    assert.deepEqual(
      files.map((f: Json) => [f.filename, f.mime_type, f.purpose, f.status]),
      [
        ['note.txt', 'text/plain', 'attachment', 'processed'],
        ['chart.png', 'image/png', 'attachment', 'processed'],
      ],
    );
    const audit = await stack.tenant.admin.get(`/v1/audit-logs?target_id=${run.file_ids[0]}`);
    assert.deepEqual(
      audit.body.data.map((e: Json) => e.action),
      ['file.create'],
    );

    // An A2A 0.3 client sends the file as a FilePart (`file.bytes`); a file alone is what the message is about.
    stack.openai.enqueue({ text: ['Noted.'], usage: { input: 10, output: 1 } });
    const legacy = (await a2a({ op: 'send', files: [note], version: '0.3' })).events[0].task;
    assert.equal(legacy.status.state, 'TASK_STATE_COMPLETED');
    assert.match(JSON.stringify((stack.openai.requests.at(-1) as Json).messages), /The launch code is 7-4-1\./);
    assert.equal((await stack.tenant.admin.get(`/v1/runs/${legacy.id}`)).body.file_ids.length, 1);

    // The same message sent again is the same task, and its file is not stored twice.
    const filesBefore = (await stack.tenant.admin.get('/v1/files?limit=100')).body.data.length;
    stack.openai.enqueue({ text: ['Once.'], usage: { input: 10, output: 1 } });
    const parts = [{ text: 'Read it.' }, { raw: note.base64, mediaType: 'text/plain', filename: 'note.txt' }];
    const send = () =>
      rpc({ jsonrpc: '2.0', id: 's', method: 'SendMessage', params: { message: { messageId: 'msg-file', role: 'ROLE_USER', parts } } });
    const once = (await send()).body.result.task;
    assert.equal((await send()).body.result.task.id, once.id);
    assert.equal((await stack.tenant.admin.get('/v1/files?limit=100')).body.data.length, filesBefore + 1);
  });

  it('refuses a file the platform does not take, or a key that may not upload, and stores nothing', async () => {
    const filesBefore = (await stack.tenant.admin.get('/v1/files?limit=100')).body.data.length;
    const gif = Buffer.from('R0lGODlhAQABAAAAACw=', 'base64');
    const refused = await a2a({
      op: 'send',
      text: 'Look.',
      files: [{ base64: gif.toString('base64'), media_type: 'image/gif', filename: 'a.gif' }],
    });
    assert.equal(refused.error, 'ContentTypeNotSupportedError', JSON.stringify(refused));
    const send = (part: Json, headers: Record<string, string> = {}) =>
      rpc(
        {
          jsonrpc: '2.0',
          id: 'f',
          method: 'SendMessage',
          params: { message: { messageId: `m-${Math.random()}`, role: 'ROLE_USER', parts: [{ text: 'Look.' }, part] } },
        },
        headers,
      );
    // The content decides: GIF bytes declared as anything else, or as nothing, are refused all the same.
    assert.equal((await send({ raw: gif.toString('base64'), mediaType: 'application/octet-stream' })).body.error.code, -32005);
    assert.equal((await send({ raw: png().toString('base64'), mediaType: 'application/pdf' })).body.error.code, -32005);
    const runner = await stack.tenant.keyWith('agents:run', 'agents:read');
    const noUpload = await send(
      { raw: Buffer.from('hi').toString('base64'), mediaType: 'text/plain' },
      { authorization: `Bearer ${runner.key}` },
    );
    assert.equal(noUpload.status, 403);
    assert.match(noUpload.body.error.message, /files:write/);
    assert.equal((await stack.tenant.admin.get('/v1/files?limit=100')).body.data.length, filesBefore);
  });

  it("answers bad requests with the protocol's JSON-RPC errors", async () => {
    const error = async (body: unknown, headers: Record<string, string> = {}) => {
      const answer = await rpc(body, headers);
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      return [answer.body.id, answer.body.error.code];
    };
    const runsBefore0 = (await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?limit=100`)).body.data.length;
    assert.deepEqual(await error('{"jsonrpc": "2.0", "id": 1,'), [null, -32700]);
    assert.deepEqual(await error({ id: 1, method: 'GetTask', params: { id: 'x' } }), [1, -32600]);
    assert.deepEqual(await error([{ jsonrpc: '2.0', id: 1, method: 'GetTask' }]), [null, -32600]);
    const huge = { jsonrpc: '2.0', id: 1, method: 'SendMessage', params: { message: { parts: [{ text: 'x'.repeat(16_000_000) }] } } };
    assert.deepEqual(await error(huge), [null, -32600]);
    const deep = `{"jsonrpc": "2.0", "id": 12, "method": "SendMessage", "params": {"message": {"messageId": "m-deep", "role": "ROLE_USER", "parts": [{"data": ${'{"a": '.repeat(100_000)}1${'}'.repeat(100_000)}}]}}}`;
    assert.deepEqual(await error(deep), [12, -32600]);
    assert.deepEqual(await error({ jsonrpc: '2.0', id: 2, method: 'Dance', params: {} }), [2, -32601]);
    assert.deepEqual(await error({ jsonrpc: '2.0', id: 3, method: 'message/send', params: {} }), [3, -32601]);
    assert.deepEqual(await error({ jsonrpc: '2.0', id: 4, method: 'SendMessage', params: {} }, { 'a2a-version': '' }), [4, -32601]);
    assert.deepEqual(await error({ jsonrpc: '2.0', id: 5, method: 'GetTask', params: {} }), [5, -32602]);
    assert.deepEqual(await error({ jsonrpc: '2.0', id: 6, method: 'GetTask', params: { id: 'run_none' } }), [6, -32001]);
    // No string in a request may hold NUL, which PostgreSQL cannot keep: ids and texts alike, each named.
    const nul = (message: Record<string, unknown>) => ({ messageId: 'm-nul', role: 'ROLE_USER', parts: [{ text: 'Hi.' }], ...message });
    for (const [method, params, where] of [
      ['SendMessage', { message: nul({ messageId: 'm-\u0000' }) }, 'params.message.messageId'],
      ['SendMessage', { message: nul({ contextId: 'thread_\u0000' }) }, 'params.message.contextId'],
      ['SendMessage', { message: nul({ parts: [{ text: 'a\u0000b' }] }) }, 'params.message.parts.0.text'],
      ['GetTask', { id: 'run_\u0000' }, 'params.id'],
      ['CancelTask', { id: 'run_\u0000' }, 'params.id'],
      ['ListTasks', { contextId: '\u0000' }, 'params.contextId'],
    ] as const) {
      const answer = await rpc({ jsonrpc: '2.0', id: 16, method, params });
      assert.equal(answer.body.error?.code, -32602, `${method}: ${JSON.stringify(answer.body)}`);
      assert.equal(answer.body.error.message, `\`${where}\` holds the NUL character (U+0000), which no string in a request may.`);
    }
    // Nor half of a surrogate pair (a lone `\ud83d`), which is not a character and which jsonb cannot keep.
    for (const [method, params, where] of [
      ['SendMessage', { message: nul({ parts: [{ text: 'Smile \ud83d' }] }) }, 'params.message.parts.0.text'],
      ['SendMessage', { message: nul({ messageId: 'm-\ude00' }) }, 'params.message.messageId'],
    ] as const) {
      const answer = await rpc({ jsonrpc: '2.0', id: 17, method, params });
      assert.equal(answer.body.error?.code, -32602, `${method}: ${JSON.stringify(answer.body)}`);
      assert.match(answer.body.error.message, new RegExp(`^\`${where.replaceAll('.', '\\.')}\` holds half of a surrogate pair`));
    }
    assert.equal((await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?limit=100`)).body.data.length, runsBefore0);
    // historyLength is an int32 from 0 up, whichever method takes it; a message with a wrong one starts no run.
    const runsBefore = (await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?limit=100`)).body.data.length;
    for (const historyLength of [-1, 2.5, 'many', 2 ** 31]) {
      assert.deepEqual(await error({ jsonrpc: '2.0', id: 13, method: 'GetTask', params: { id: 'run_none', historyLength } }), [13, -32602]);
      assert.deepEqual(await error({ jsonrpc: '2.0', id: 14, method: 'ListTasks', params: { historyLength } }), [14, -32602]);
      const message = { messageId: `m-history-${historyLength}`, role: 'ROLE_USER', parts: [{ text: 'Hi.' }] };
      const configuration = { historyLength };
      assert.deepEqual(await error({ jsonrpc: '2.0', id: 15, method: 'SendMessage', params: { message, configuration } }), [15, -32602]);
    }
    assert.equal((await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?limit=100`)).body.data.length, runsBefore);
    assert.deepEqual(
      await error({ jsonrpc: '2.0', id: 7, method: 'GetTask', params: { id: 'run_none' } }, { 'a2a-version': '2.0' }),
      [7, -32009],
    );
    const file = { messageId: 'm-file', role: 'ROLE_USER', parts: [{ url: 'https://example.com/a.pdf', mediaType: 'application/pdf' }] };
    assert.deepEqual(await error({ jsonrpc: '2.0', id: 8, method: 'SendMessage', params: { message: file } }), [8, -32005]);
    const push = { taskId: 'run_none', url: 'https://example.com/hook' };
    assert.deepEqual(await error({ jsonrpc: '2.0', id: 9, method: 'CreateTaskPushNotificationConfig', params: push }), [9, -32003]);
    assert.deepEqual(await error({ jsonrpc: '2.0', id: 'x', method: 'tasks/get', params: { id: 'run_none' } }, { 'a2a-version': '0.3' }), [
      'x',
      -32001,
    ]);
    assert.deepEqual(
      await error({ jsonrpc: '2.0', id: 10, method: 'GetTask', params: { id: 'run_none' } }, { 'content-type': 'text/plain' }),
      [null, -32005],
    );

    const reader = await stack.tenant.keyWith('agents:read');
    const refused = await rpc({ jsonrpc: '2.0', id: 11, method: 'SendMessage', params: {} }, { authorization: `Bearer ${reader.key}` });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, -32000);
  });
});
