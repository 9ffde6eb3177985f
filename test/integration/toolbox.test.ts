import assert from 'node:assert/strict';
import { completeExtraction, insertFile, newFileId } from '../../records/files.js';
import { storePages } from '../../records/file-content.js';
import { MAX_JSON_DEPTH } from '../../records/json-depth.js';
import { insertProject } from '../../records/projects.js';
import type { ToolDefinition } from '../../tools/definitions.js';
import { invokeTool, offeredTools, ToolsTooLargeError, ToolUnavailableError, type ToolContext } from '../../tools/toolbox.js';
import { startToolServer, type EchoedRequest, type TestToolServer } from '../support/http-tool-server.js';
import { startMcpServer, type TestMcpServer } from '../support/mcp-server.js';
import { postgres } from '../support/services.js';

describe('the toolbox a run uses', () => {
  let tools: TestToolServer;
  let mcp: TestMcpServer;
  let definitions: ToolDefinition[];
  let ctx: ToolContext;
  let fileId: string;

  before(async () => {
    tools = await startToolServer();
    mcp = await startMcpServer({ extraTools: { count: 100 } });
    const { db } = await postgres();
    const projectId = (await insertProject(db, 'toolbox')).id;
    fileId = newFileId();
    await insertFile(db, {
      id: fileId,
      projectId,
      filename: 'brief.txt',
      bytes: 5,
      purpose: 'attachment',
      mimeType: 'text/plain',
      blobKey: `test/${fileId}`,
      metadata: {},
    });
    await storePages(db, fileId, [{ page: 1, text: 'brief', source: 'plain_text' }]);
    await completeExtraction(db, fileId, []);
    definitions = [
      {
        type: 'http',
        name: 'echo',
        description: 'Echoes its arguments.',
        url: `${tools.url}/echo`,
        parameters: { type: 'object', properties: { word: { type: 'string' } } },
      },
      { type: 'http', name: 'busy', url: `${tools.url}/status/503` },
      { type: 'mcp', server_label: 'calc', server_url: mcp.url, allowed_tools: ['add', 'fail'] },
    ];
    // The servers listen on loopback.
    ctx = { signal: new AbortController().signal, allowPrivate: true, db, projectId, attachmentIds: [fileId] };
  });

  after(async () => {
    await tools?.close();
    await mcp?.close();
  });

  const call = (name: string, args: string) => invokeTool(definitions, { id: 'call_1', name, arguments: args }, ctx);

  it('offers the HTTP tools, the allowed tools of each MCP server, and read_file when the run has attachments', async () => {
    const offered = await offeredTools(definitions, ctx);
    assert.deepEqual(
      offered.map((t) => t.name),
      ['echo', 'busy', 'calc__add', 'calc__fail', 'read_file'],
    );
    assert.deepEqual(offered[0], {
      name: 'echo',
      description: 'Echoes its arguments.',
      parameters: { type: 'object', properties: { word: { type: 'string' } } },
    });
    assert.deepEqual(offered[1]!.parameters, { type: 'object', properties: {} });
    assert.deepEqual(
      (await offeredTools(definitions, { ...ctx, attachmentIds: [] })).map((t) => t.name),
      ['echo', 'busy', 'calc__add', 'calc__fail'],
    );
  });

  it('carries each call to its tool by name', async () => {
    const echoed = await call('echo', '{"word":"hello"}');
    assert.deepEqual(JSON.parse((JSON.parse(echoed.content) as EchoedRequest).body), { word: 'hello' });
    assert.deepEqual(await call('calc__add', '{"a":1,"b":2}'), { content: '3', is_error: false });
    assert.deepEqual(await call('calc__fail', '{}'), { content: 'the tool failed on purpose', is_error: true });
    assert.match((await call('read_file', JSON.stringify({ file_id: fileId }))).content, /\nbrief\n/);
    await assert.rejects(call('busy', '{}'), ToolUnavailableError);
  });

  it('takes empty arguments as an empty object', async () => {
    assert.equal((await call('echo', '')).is_error, false);
  });

  it('answers an unknown tool, arguments that are not JSON, and arguments that are not an object with an error result', async () => {
    assert.deepEqual(await call('weather', '{}'), { content: 'There is no tool named weather.', is_error: true });
    assert.deepEqual(await call('calc__picture', '{}'), { content: 'There is no tool named calc__picture.', is_error: true });
    assert.deepEqual(await invokeTool(definitions, { id: 'c', name: 'read_file', arguments: '{}' }, { ...ctx, attachmentIds: [] }), {
      content: 'There is no tool named read_file.',
      is_error: true,
    });
    const broken = await call('echo', '{"word": "unterminated');
    assert.equal(broken.is_error, true);
    assert.match(broken.content, /^The arguments are not valid JSON \(.*\); send a JSON object\.$/);
    for (const args of ['[1,2]', 'null', '"word"', '7'])
      assert.deepEqual(await call('echo', args), { content: 'The arguments must be a JSON object.', is_error: true }, args);
    // Nested past what JSON.stringify can walk, the call threw (to be made again) instead of telling the model.
    const nested = (depth: number) => `{"word": ${'['.repeat(depth)}${']'.repeat(depth)}}`;
    for (const [tool, depth] of [
      ['echo', MAX_JSON_DEPTH],
      ['busy', MAX_JSON_DEPTH],
      ['busy', 100_000],
    ] as const) {
      assert.deepEqual(await call(tool, nested(depth)), {
        content: `The arguments are too deep: their object nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels, the most allowed; send a shallower one.`,
        is_error: true,
      });
    }
    assert.doesNotMatch((await call('echo', nested(MAX_JSON_DEPTH - 1))).content, /too deep/);
  });

  it('refuses to offer more than 128 tools in all, however they are spread over MCP servers', async () => {
    const servers: ToolDefinition[] = ['one', 'two'].map((label) => ({
      type: 'mcp',
      server_label: label,
      server_url: mcp.url,
      allowed_tools: Array.from({ length: 64 }, (_, i) => `extra_${i}`),
    }));
    assert.equal((await offeredTools(servers, { ...ctx, attachmentIds: [] })).length, 128);
    await assert.rejects(offeredTools(servers, ctx), (err: unknown) => {
      assert.ok(err instanceof ToolsTooLargeError);
      assert.equal(err.message, "The agent's tools come to 129 tools; a run may offer at most 128.");
      return true;
    });
  });
});
