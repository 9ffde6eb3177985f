import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Progress } from '@modelcontextprotocol/sdk/types.js';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';
import { newTenant, type Tenant } from '../support/api.js';
import type { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';

type TextBlock = { type: 'text'; text: string };
type RunOutcome = { run_id: string; status: string; cost: string; thread_id: string | null };

describe('the MCP server: agents and networks as tools over streamable HTTP', function () {
  this.timeout(60_000);
  let stack: RunsStack;
  let other: Tenant;
  const open: Client[] = [];

  /** An SDK client speaking to /v1/mcp with `key`, as an IDE would be set up. */
  async function connect(key: ApiClient): Promise<Client> {
    const client = new Client({ name: 'agentplane-test', version: '1.0.0' });
    const transport = new StreamableHTTPClientTransport(new URL(`${stack.api.url}/v1/mcp`), {
      requestInit: { headers: { Authorization: `Bearer ${key.key}` } },
    });
    await client.connect(transport);
    open.push(client);
    return client;
  }

  type RpcAnswer = { jsonrpc: string; error: { code: number; data?: { code: string } } };
  const rpcOf = async (response: Response) => (await response.json()) as RpcAnswer;
  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${stack.api.url}/v1/mcp`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${stack.tenant.admin.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body,
    });

  const toolNameOf = async (client: Client, id: string) => {
    const { tools } = await client.listTools();
    const tool = tools.find((t) => t.name.endsWith(`__${id}`));
    assert.ok(tool, `no tool for ${id} in ${JSON.stringify(tools.map((t) => t.name))}`);
    return tool.name;
  };

  before(async () => {
    // Three streams a key, so that a test can run out of them.
    stack = await startRunsStack('mcp-server', {}, { eventStreamLimits: { perKey: 3, perProcess: 1000, stallSeconds: 30 } });
    other = await newTenant(stack.api, 'mcp-server-other');
  });
  afterEach(async () => {
    await Promise.all(open.splice(0).map((client) => client.close()));
  });
  after(async () => {
    await stack?.stop();
  });

  it("lists the key's own agents and networks as tools with valid, unique names, search_context, and pages them", async () => {
    const first = await createAgent(stack.tenant.admin, {
      name: 'Support bot: billing & refunds (EU) — v2',
      description: 'Answers billing questions.',
    });
    const twin = await createAgent(stack.tenant.admin, { name: 'Support bot: billing & refunds (EU) — v2' });
    const network = (await stack.tenant.admin.post('/v1/networks', { name: 'triage', members: [first.id], router: { type: 'sequential' } }))
      .body;
    const foreign = await createAgent(other.admin, { name: 'not yours' });

    const client = await connect(stack.tenant.admin);
    const { tools, nextCursor } = await client.listTools();
    assert.equal(nextCursor, undefined);
    const names = tools.map((t) => t.name);
    assert.equal(names[0], 'search_context');
    for (const name of names) assert.match(name, /^[A-Za-z0-9_-]{1,64}$/);
    assert.equal(new Set(names).size, names.length, 'tool names are unique');
    assert.ok(!names.some((n) => n.includes(foreign.id)), "another project's agent is not listed");
    const tool = tools.find((t) => t.name.endsWith(`__${first.id}`))!;
    // Cut to fit 64 characters with the id.
    assert.equal(tool.name, `support_bot_billing_refunds_eu_v__${first.id}`);
    assert.equal(tool.title, first.name);
    assert.equal(tool.description, 'Answers billing questions.');
    assert.deepEqual(tool.inputSchema.required, ['input']);
    assert.deepEqual(Object.keys(tool.inputSchema.properties ?? {}), ['input', 'thread_id']);
    assert.ok(names.includes(`support_bot_billing_refunds_eu_v__${twin.id}`));
    assert.ok(names.includes(`triage__${network.id}`));

    // Sixty agents take two pages; every one is listed once.
    const many = await Promise.all(Array.from({ length: 60 }, (_, i) => createAgent(other.admin, { name: `worker ${i}` })));
    const otherClient = await connect(other.admin);
    const page1 = await otherClient.listTools();
    assert.equal(page1.tools.length, 50);
    assert.ok(page1.nextCursor);
    const page2 = await otherClient.listTools({ cursor: page1.nextCursor });
    assert.equal(page2.nextCursor, undefined);
    const listed = [...page1.tools, ...page2.tools].map((t) => t.name.split('__')[1]).filter(Boolean);
    assert.deepEqual(listed.sort(), [foreign.id, ...many.map((a) => a.id)].sort());
    await assert.rejects(otherClient.listTools({ cursor: 'not-a-cursor' }), /Invalid cursor/);
    // A cursor made up to look like one: its position answers as any cursor this server did not make, never as a failure.
    const forged = (position: unknown) => Buffer.from(JSON.stringify(position)).toString('base64url');
    for (const after of ['agent_\u0000x', '\u0000', 'x'.repeat(5_000)])
      await assert.rejects(otherClient.listTools({ cursor: forged({ kind: 'agent', after }) }), /Invalid cursor: pass the nextCursor/);
  });

  it("calls an agent's tool: the run's output as text, its id, status and cost as structured content, progress on the way, audited", async () => {
    const agent = await createAgent(stack.tenant.admin);
    const thread = (await stack.tenant.admin.post('/v1/threads', {})).body;
    const client = await connect(stack.tenant.admin);
    const name = await toolNameOf(client, agent.id);
    stack.openai.enqueue({ text: ['The invoice ', 'is paid.'], usage: { input: 12, output: 4 } });
    const progress: Progress[] = [];
    const result = await client.callTool({ name, arguments: { input: 'Is invoice 7 paid?', thread_id: thread.id } }, undefined, {
      onprogress: (p) => progress.push(p),
    });
    assert.equal(result.isError, undefined);
    assert.equal((result.content as TextBlock[])[0]!.text, 'The invoice is paid.');
    const outcome = result.structuredContent as RunOutcome;
    assert.equal(outcome.status, 'completed');
    assert.equal(outcome.thread_id, thread.id);
    assert.match(outcome.run_id, /^run_/);
    const run = (await stack.tenant.admin.get(`/v1/runs/${outcome.run_id}`)).body;
    assert.equal(run.output.text, 'The invoice is paid.');
    assert.equal(run.cost, outcome.cost);
    assert.deepEqual(
      progress.map((p) => p.message),
      ['The run started.', 'Step 1: calling the model.', 'Step 1 done.', 'The run completed.'],
    );
    assert.deepEqual(
      progress.map((p) => p.progress),
      [1, 2, 3, 4],
    );
    const messages = (await stack.tenant.admin.get(`/v1/threads/${thread.id}/messages`)).body.data;
    assert.deepEqual(
      messages.map((m: { content: string }) => m.content),
      ['Is invoice 7 paid?', 'The invoice is paid.'],
    );
    const audit = (await stack.tenant.admin.get(`/v1/audit-logs?target_id=${outcome.run_id}`)).body.data;
    const { rows } = await stack.api.services.db.query<{ api_key_id: string }>('SELECT api_key_id FROM runs WHERE id = $1', [
      outcome.run_id,
    ]);
    assert.deepEqual(
      audit.map((e: { action: string; actor: { api_key_id: string } }) => [e.action, e.actor.api_key_id]),
      [['run.create', rows[0]!.api_key_id]],
    );

    // The same idempotency key gives back the same run; a network's tool runs the network.
    stack.openai.enqueue({ text: ['Once.'], usage: { input: 1, output: 1 } });
    const meta = { 'agentplane.io/idempotency-key': `mcp-${agent.id}` };
    const once = await client.callTool({ name, arguments: { input: 'Say once.' }, _meta: meta });
    const again = await client.callTool({ name, arguments: { input: 'Say once.' }, _meta: meta });
    assert.equal((again.structuredContent as RunOutcome).run_id, (once.structuredContent as RunOutcome).run_id);
    const network = (await stack.tenant.admin.post('/v1/networks', { name: 'relay', members: [agent.id], router: { type: 'sequential' } }))
      .body;
    stack.openai.enqueue({ text: ['Relayed.'], usage: { input: 1, output: 1 } });
    const relayed = await client.callTool({ name: `relay__${network.id}`, arguments: { input: 'Pass it on.' } });
    assert.equal((relayed.structuredContent as RunOutcome).status, 'completed', JSON.stringify(relayed));
  });

  it('answers a failed run, a refused run and bad arguments as tool errors, and an unknown tool as a protocol error', async () => {
    const agent = await createAgent(stack.tenant.admin);
    const client = await connect(stack.tenant.admin);
    const name = await toolNameOf(client, agent.id);
    stack.openai.enqueue({ status: 400 });
    const failed = await client.callTool({ name, arguments: { input: 'Fail, please.' } });
    assert.equal(failed.isError, true);
    assert.equal((failed.structuredContent as RunOutcome).status, 'failed');
    assert.match((failed.content as TextBlock[])[0]!.text, /failed/);

    const noThread = await client.callTool({ name, arguments: { input: 'Hi', thread_id: 'thread_doesnotexist' } });
    assert.equal(noThread.isError, true);
    assert.match((noThread.content as TextBlock[])[0]!.text, /No thread with id 'thread_doesnotexist'/);
    const empty = await client.callTool({ name, arguments: { input: '' } });
    assert.equal(empty.isError, true);
    const stray = await client.callTool({ name, arguments: { input: 'Hi', model: 'gpt-4.1' } });
    assert.equal(stray.isError, true);
    assert.match((stray.content as TextBlock[])[0]!.text, /Unknown argument `model`/);

    const foreign = await createAgent(other.admin);
    await assert.rejects(client.callTool({ name: `x__${foreign.id}`, arguments: { input: 'Hi' } }), /Unknown tool/);
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }), /Unknown tool/);
  });

  it("cancels the run when the client cancels the call, or closes the call's stream", async () => {
    const agent = await createAgent(stack.tenant.admin);
    const client = await connect(stack.tenant.admin);
    const name = await toolNameOf(client, agent.id);
    const runOf = async () => {
      const runs = (await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?status=in_progress`)).body.data;
      if (runs.length !== 1) throw new Error(`${runs.length} runs in progress`);
      return runs[0].id as string;
    };

    for (const how of ['cancel', 'close'] as const) {
      stack.openai.enqueue({ text: ['Thinking'], hang: true });
      const caller = how === 'cancel' ? client : await connect(stack.tenant.admin);
      const aborted = new AbortController();
      const call = caller.callTool({ name, arguments: { input: 'Take your time.' } }, undefined, { signal: aborted.signal });
      const ended = call.then(
        () => 'answered',
        () => 'refused',
      );
      const runId = await eventually(runOf, { message: 'the run did not start' });
      if (how === 'cancel') aborted.abort('changed my mind');
      else await caller.close();
      await runSatisfying(stack.tenant.admin, runId, (run) => run.status === 'cancelled', `the run was not cancelled on ${how}`, 15_000);
      assert.equal(await ended, 'refused');
      const audit = (await stack.tenant.admin.get(`/v1/audit-logs?target_id=${runId}`)).body.data;
      assert.deepEqual(audit.map((e: { action: string }) => e.action).sort(), ['run.cancel', 'run.create']);
    }
  });

  it("bounds a key's open run calls by its event stream slots, and leaves other keys theirs", async () => {
    const agent = await createAgent(stack.tenant.admin, { concurrency: 'allow' });
    const greedy = await stack.tenant.keyWith('agents:read', 'agents:run');
    const clients = await Promise.all([1, 2, 3].map(() => connect(greedy)));
    const name = await toolNameOf(clients[0]!, agent.id);
    const calls = clients.map((client) => {
      stack.openai.enqueue({ text: ['Holding'], hang: true });
      return client.callTool({ name, arguments: { input: 'Hold on.' } }).catch(() => 'ended');
    });
    await eventually(
      async () => {
        const runs = (await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?status=in_progress`)).body.data;
        if (runs.length !== 3) throw new Error(`${runs.length} runs in progress`);
      },
      { message: 'the three runs did not start' },
    );
    const fourth = await (await connect(greedy)).callTool({ name, arguments: { input: 'Me too.' } }).catch((err: unknown) => err);
    assert.ok(fourth instanceof StreamableHTTPError && fourth.code === 429, String(fourth));

    const modest = await connect(await stack.tenant.keyWith('agents:read', 'agents:run'));
    stack.openai.enqueue({ text: ['Served.'], usage: { input: 1, output: 1 } });
    const served = await modest.callTool({ name, arguments: { input: 'Just one.' } });
    assert.equal((served.content as TextBlock[])[0]!.text, 'Served.');
    await Promise.all(clients.map((client) => client.close()));
    assert.deepEqual(await Promise.all(calls), ['ended', 'ended', 'ended']);
  });

  it('holds keys to their scopes: 401 with a challenge without a key, 403 insufficient_scope without the scope', async () => {
    const agent = await createAgent(stack.tenant.admin);
    const name = `helper__${agent.id}`;

    const anonymous = await fetch(`${stack.api.url}/v1/mcp`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    assert.equal(anonymous.status, 401);
    assert.equal(anonymous.headers.get('www-authenticate'), 'Bearer realm="agentplane"');
    const wrong = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }), { authorization: 'Bearer ap_wrong' });
    assert.equal(wrong.status, 401);
    assert.match(wrong.headers.get('www-authenticate') ?? '', /^Bearer realm="agentplane", error="invalid_token"/);
    assert.equal((await rpcOf(wrong)).error.data?.code, 'invalid_api_key');

    // A reader lists only search_context (it may not run agents), and calling one is refused.
    const reader = await connect(await stack.tenant.keyWith('agents:read', 'files:read'));
    assert.deepEqual(
      (await reader.listTools()).tools.map((t) => t.name),
      ['search_context'],
    );
    const refused = await reader.callTool({ name, arguments: { input: 'Hi' } }).catch((err: unknown) => err);
    assert.ok(refused instanceof StreamableHTTPError, String(refused));
    assert.equal(refused.code, 403);
    const raw = await post(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name, arguments: { input: 'Hi' } } }), {
      authorization: `Bearer ${(await stack.tenant.keyWith('agents:read')).key}`,
    });
    assert.equal(raw.status, 403);
    assert.match(raw.headers.get('www-authenticate') ?? '', /error="insufficient_scope", scope="agents:run"/);

    // A runner that may not read cannot list, and cannot search.
    const runner = await connect(await stack.tenant.keyWith('agents:run'));
    await assert.rejects(runner.listTools(), (err: unknown) => err instanceof StreamableHTTPError && err.code === 403);
    await assert.rejects(
      runner.callTool({ name: 'search_context', arguments: { query: 'Acme' } }),
      (err: unknown) => err instanceof StreamableHTTPError && err.code === 403,
    );
    const { rows } = await stack.api.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM runs WHERE agent_id = $1', [
      agent.id,
    ]);
    assert.equal(rows[0]!.n, 0, 'no refused call made a run');
  });

  it("searches the project's context graph with search_context, as GET /v1/graph/search does", async () => {
    const upload = await stack.tenant.admin.upload({
      purpose: 'context',
      file: {
        data: Buffer.from('Maria Lopez, CEO of Acme Corporation, met the auditors in Berlin.'),
        filename: 'memo.txt',
        type: 'text/plain',
      },
    });
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    assert.equal((await stack.tenant.admin.settledFile(upload.body.id)).status, 'processed');
    const client = await connect(stack.tenant.admin);
    const found = await client.callTool({ name: 'search_context', arguments: { query: 'Acme', limit: 5 } });
    const rest = (await stack.tenant.admin.get('/v1/graph/search?q=Acme&limit=5')).body;
    assert.equal(found.isError, undefined);
    assert.deepEqual(found.structuredContent, rest);
    assert.ok(
      rest.entities.some((e: { name: string }) => /Acme/.test(e.name)),
      JSON.stringify(rest),
    );
    assert.deepEqual(JSON.parse((found.content as TextBlock[])[0]!.text), rest);
    const otherClient = await connect(other.admin);
    const nothing = await otherClient.callTool({ name: 'search_context', arguments: { query: 'Acme' } });
    assert.deepEqual((nothing.structuredContent as { entities: unknown[] }).entities, [], "another project's graph is not searched");
    const bad = await client.callTool({ name: 'search_context', arguments: { query: 'Acme', limit: 500 } });
    assert.equal(bad.isError, true);
    // A refused query is told as the tool's argument, `query`, not as the endpoint's `q`.
    for (const [query, why] of [
      ['', /^`query` must not be empty\. \(invalid_parameter\)$/],
      ['a'.repeat(201), /^`query` must be at most 200 characters long\. \(invalid_parameter\)$/],
      ['Ac\u0000me', /^`query` must not contain the NUL character \(U\+0000\)\. \(invalid_parameter\)$/],
    ] as const) {
      const refused = await client.callTool({ name: 'search_context', arguments: { query } });
      assert.equal(refused.isError, true);
      assert.match((refused.content as TextBlock[])[0]!.text, why);
    }
  });

  it('answers malformed JSON-RPC with protocol errors, never 500, and GET and DELETE with 405', async () => {
    const parse = await post('{"jsonrpc": "2.0", "id": 1, "method": ');
    assert.equal(parse.status, 400);
    assert.equal((await rpcOf(parse)).error.code, -32700);
    const invalid = await post(JSON.stringify({ jsonrpc: '1.0', id: 1 }));
    assert.equal(invalid.status, 400);
    assert.equal((await rpcOf(invalid)).error.code, -32600);
    const batch = await post(JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'ping' }]));
    assert.equal(batch.status, 400);
    assert.equal((await rpcOf(batch)).error.code, -32600);
    const deep = await post(
      `{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": ${'['.repeat(100_000)}${']'.repeat(100_000)}}}`,
    );
    assert.equal(deep.status, 400);
    assert.equal((await rpcOf(deep)).error.code, -32600);
    const unknown = await post(JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'no/such/method' }));
    assert.equal(unknown.status, 200);
    assert.deepEqual((await rpcOf(unknown)).error.code, -32601);
    const nameless = await post(JSON.stringify({ jsonrpc: '2.0', id: 8, method: 'tools/call', params: { arguments: {} } }));
    assert.equal(nameless.status, 200);
    assert.equal((await rpcOf(nameless)).error.code, -32602);
    const text = await post('hello', { 'content-type': 'text/plain' });
    assert.equal(text.status, 415);
    const large = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping', params: { pad: 'x'.repeat(2 * 1024 * 1024) } }));
    assert.equal(large.status, 413);
    assert.equal((await rpcOf(large)).jsonrpc, '2.0');
    const elsewhere = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), { origin: 'http://rebound.example' });
    assert.equal(elsewhere.status, 403);
    const own = await post(JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }), { origin: stack.api.url });
    assert.equal(own.status, 200);
    for (const method of ['GET', 'DELETE']) {
      const answer = await fetch(`${stack.api.url}/v1/mcp`, {
        method,
        headers: { authorization: `Bearer ${stack.tenant.admin.key}`, accept: 'text/event-stream' },
      });
      assert.equal(answer.status, 405);
      assert.equal(answer.headers.get('allow'), 'POST');
    }
  });
});
