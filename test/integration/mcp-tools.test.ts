import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MAX_JSON_DEPTH } from '../../records/json-depth.js';
import type { McpToolDefinition } from '../../tools/definitions.js';
import { callMcpTool, listMcpTools } from '../../tools/mcp.js';
import { PrivateTargetError } from '../../tools/network-guard.js';
import { MAX_DESCRIPTION_CHARS, MAX_LISTING_BYTES, MAX_TOOLS_PER_SERVER, ToolsTooLargeError } from '../../tools/offer-limits.js';
import { ToolUnavailableError } from '../../tools/outcomes.js';
import { eventually } from '../support/eventually.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';

// The MCP server listens on loopback, so these calls allow private targets unless they test the refusal.
const reach = (signal = new AbortController().signal) => ({ projectId: 'proj_tools', signal, allowPrivate: true });

/** An HTTP server that answers every request with `status`; closed by the caller. */
async function answering(status: number): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((_req, res) => res.writeHead(status, { 'content-type': 'text/plain' }).end(`status ${status}`));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

describe('remote MCP servers', () => {
  let server: TestMcpServer;
  const mcp = (over: Partial<McpToolDefinition> = {}): McpToolDefinition => ({
    type: 'mcp',
    server_label: 'calc',
    server_url: server.url,
    ...over,
  });

  before(async () => (server = await startMcpServer()));
  after(() => server.close());

  it("lists the server's tools as <label>__<tool>, with their descriptions and argument schemas", async () => {
    const tools = await listMcpTools(mcp(), reach());
    assert.deepEqual(tools.map((t) => t.name).sort(), [
      'calc__add',
      'calc__fail',
      'calc__flood',
      'calc__picture',
      'calc__wait',
      'calc__whoami',
    ]);
    const add = tools.find((t) => t.name === 'calc__add')!;
    assert.equal(add.description, 'Adds two numbers.');
    assert.equal(add.parameters.type, 'object');
    assert.deepEqual(Object.keys(add.parameters.properties as object).sort(), ['a', 'b']);
  });

  it('offers only allowed_tools when the definition names them, and refuses a call to any other', async () => {
    const def = mcp({ allowed_tools: ['add', 'nonexistent'] });
    assert.deepEqual(
      (await listMcpTools(def, reach())).map((t) => t.name),
      ['calc__add'],
    );
    const before = server.methods.length;
    assert.deepEqual(await callMcpTool(def, 'fail', {}, reach()), { content: 'There is no tool named calc__fail.', is_error: true });
    assert.equal(server.methods.length, before, 'the server was not asked');
  });

  it('calls a tool and returns its text', async () => {
    assert.deepEqual(await callMcpTool(mcp(), 'add', { a: 2, b: 40 }, reach()), { content: '42', is_error: false });
  });

  it('returns an isError result as an error result the model reads', async () => {
    assert.deepEqual(await callMcpTool(mcp(), 'fail', {}, reach()), { content: 'the tool failed on purpose', is_error: true });
  });

  it('describes content that is not text', async () => {
    assert.deepEqual(await callMcpTool(mcp(), 'picture', {}, reach()), {
      content: 'a picture:\n[image content: image/png, 8 bytes, not shown]',
      is_error: false,
    });
  });

  it('shows structured content as JSON, and describes instead content nested deeper than it can be shown', async () => {
    // Past what JSON.stringify can walk, the call threw, to be made again, instead of answering.
    const levels = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    assert.deepEqual(await callMcpTool(mcp(), 'nested', { depth: MAX_JSON_DEPTH - 1 }, reach()), {
      content: `{"levels":${levels(MAX_JSON_DEPTH - 1)}}`,
      is_error: false,
    });
    for (const depth of [MAX_JSON_DEPTH, 100_000]) {
      assert.deepEqual(await callMcpTool(mcp(), 'nested', { depth }, reach()), {
        content: `[structured content that nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels, the most allowed, not shown]`,
        is_error: false,
      });
    }
  });

  it('stops reading an answer past 4 MiB and tells the model', async () => {
    const result = await callMcpTool(mcp(), 'flood', {}, reach());
    assert.deepEqual(result, {
      content: 'The MCP server calc answered with more than 4194304 bytes; the answer was not read',
      is_error: true,
    });
  });

  it('sends the headers of the definition to the server', async () => {
    const result = await callMcpTool(mcp({ headers: { Authorization: 'Bearer mcp-secret' } }), 'whoami', {}, reach());
    assert.deepEqual(result, { content: 'Bearer mcp-secret', is_error: false });
  });

  it('shows the model arguments the server refused and tools the server does not have', async () => {
    const bad = await callMcpTool(mcp(), 'add', { a: 'two' }, reach());
    assert.equal(bad.is_error, true);
    assert.match(bad.content, /Invalid arguments for tool add: .*expected number/);
    const missing = await callMcpTool(mcp(), 'divide', { a: 1, b: 2 }, reach());
    assert.equal(missing.is_error, true);
    assert.match(missing.content, /Tool divide not found/);
  });

  it('throws ToolUnavailableError when the server is down, for a listing and for a call', async () => {
    const gone = await startMcpServer();
    await gone.close();
    await assert.rejects(listMcpTools(mcp({ server_url: gone.url }), reach()), ToolUnavailableError);
    await assert.rejects(callMcpTool(mcp({ server_url: gone.url }), 'add', { a: 1, b: 2 }, reach()), ToolUnavailableError);
  });

  it('throws ToolUnavailableError when the server answers 503, and shows the model a 404', async () => {
    const failing = await answering(503);
    const missing = await answering(404);
    try {
      await assert.rejects(listMcpTools(mcp({ server_url: failing.url }), reach()), ToolUnavailableError);
      await assert.rejects(callMcpTool(mcp({ server_url: failing.url }), 'add', { a: 1, b: 2 }, reach()), ToolUnavailableError);
      const result = await callMcpTool(mcp({ server_url: missing.url }), 'add', { a: 1, b: 2 }, reach());
      assert.equal(result.is_error, true);
      assert.match(result.content, /404/);
    } finally {
      await failing.close();
      await missing.close();
    }
  });

  it('tells the model the server did not answer within timeout_ms', async () => {
    const result = await callMcpTool(mcp({ timeout_ms: 300 }), 'wait', {}, reach());
    assert.deepEqual(result, { content: 'The MCP server calc did not answer within 300 ms', is_error: true });
    server.waiting.splice(0).forEach((release) => release());
  });

  it("aborts a call when the run is cancelled, with the run's reason", async () => {
    const run = new AbortController();
    const call = callMcpTool(mcp({ timeout_ms: 60_000 }), 'wait', {}, reach(run.signal));
    await eventually(() => assert.equal(server.waiting.length, 1), { message: 'the call did not arrive' });
    const reason = new Error('run cancelled');
    run.abort(reason);
    await assert.rejects(call, (err: unknown) => err === reason);
    server.waiting.splice(0).forEach((release) => release());
  });

  it('refuses a server on a loopback address when private addresses are not allowed', async () => {
    const guarded = { projectId: 'proj_tools', signal: new AbortController().signal, allowPrivate: false };
    const before = server.methods.length;
    const result = await callMcpTool(mcp(), 'add', { a: 1, b: 2 }, guarded);
    assert.equal(result.is_error, true);
    assert.match(result.content, /^The request was refused: 127\.0\.0\.1 is not a public address/);
    await assert.rejects(listMcpTools(mcp({ server_url: server.url.replace('127.0.0.1', 'localhost') }), guarded), PrivateTargetError);
    assert.equal(server.methods.length, before, 'the server was not reached');
  });
});

describe('remote MCP servers that keep sessions', () => {
  let server: TestMcpServer;
  const mcp = (): McpToolDefinition => ({ type: 'mcp', server_label: 'calc', server_url: server.url });

  before(async () => (server = await startMcpServer({ sessions: true })));
  after(() => server.close());

  it('lists and calls over event streams, and ends each session it opened', async () => {
    assert.equal((await listMcpTools(mcp(), reach())).length, 6);
    assert.deepEqual(await callMcpTool(mcp(), 'add', { a: 20, b: 22 }, reach()), { content: '42', is_error: false });
    assert.equal(server.methods.filter((m) => m === 'DELETE').length, 2);
    assert.equal(server.sessions, 0);
  });
});

describe('remote MCP servers that list too much', () => {
  const mcp = (server: TestMcpServer, over: Partial<McpToolDefinition> = {}): McpToolDefinition => ({
    type: 'mcp',
    server_label: 'big',
    server_url: server.url,
    ...over,
  });

  /** Runs `work` against a server listing `extraTools` beyond the usual six. */
  async function listing<T>(
    extraTools: { count: number; descriptionChars?: number },
    work: (server: TestMcpServer) => Promise<T>,
  ): Promise<T> {
    const server = await startMcpServer({ extraTools });
    try {
      return await work(server);
    } finally {
      await server.close();
    }
  }

  it(`refuses a listing of more than ${MAX_TOOLS_PER_SERVER} tools from one server, and takes the ones allowed_tools names`, () =>
    listing({ count: MAX_TOOLS_PER_SERVER }, async (server) => {
      await assert.rejects(listMcpTools(mcp(server), reach()), (err: unknown) => {
        assert.ok(err instanceof ToolsTooLargeError);
        assert.equal(
          err.message,
          `The MCP server big lists more than ${MAX_TOOLS_PER_SERVER} tools; name the ones to offer in allowed_tools.`,
        );
        return true;
      });
      assert.deepEqual((await listMcpTools(mcp(server, { allowed_tools: ['add', 'extra_7'] }), reach())).map((t) => t.name).sort(), [
        'big__add',
        'big__extra_7',
      ]);
    }));

  it(`refuses a listing whose answers pass ${MAX_LISTING_BYTES} bytes, reading no further`, () =>
    listing({ count: 3, descriptionChars: 1024 * 1024 }, async (server) => {
      await assert.rejects(listMcpTools(mcp(server, { allowed_tools: ['add'] }), reach()), (err: unknown) => {
        assert.ok(err instanceof ToolsTooLargeError);
        assert.equal(err.message, `The MCP server big answered its tool listing with more than ${MAX_LISTING_BYTES} bytes.`);
        return true;
      });
    }));

  it(`refuses a listed tool whose description is longer than ${MAX_DESCRIPTION_CHARS} characters`, () =>
    listing({ count: 1, descriptionChars: MAX_DESCRIPTION_CHARS + 1 }, async (server) => {
      await assert.rejects(
        listMcpTools(mcp(server), reach()),
        /lists big__extra_0 with a description of 8193 characters; at most 8192 are allowed/,
      );
    }));
});
