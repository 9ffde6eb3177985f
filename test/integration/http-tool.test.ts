import assert from 'node:assert/strict';
import { callHttpTool } from '../../tools/http-tool.js';
import type { HttpToolDefinition } from '../../tools/definitions.js';
import { TOOL_RETRY_MAX_INTERVAL_MS, ToolUnavailableError } from '../../tools/outcomes.js';
import { eventually } from '../support/eventually.js';
import { startToolServer, type EchoedRequest, type TestToolServer } from '../support/http-tool-server.js';

// The tool server listens on loopback, so these calls allow private targets unless they test the refusal.
const reach = (signal = new AbortController().signal) => ({ projectId: 'proj_tools', signal, allowPrivate: true });

describe('HTTP tools', () => {
  let server: TestToolServer;
  const tool = (path: string, over: Partial<HttpToolDefinition> = {}): HttpToolDefinition => ({
    type: 'http',
    name: 'probe',
    url: `${server.url}${path}`,
    ...over,
  });

  before(async () => (server = await startToolServer()));
  after(() => server.close());

  it('sends GET arguments in the query string, with the headers of the definition', async () => {
    const def = tool('/echo?fixed=1', { method: 'GET', headers: { Authorization: 'Bearer tool-secret' } });
    const result = await callHttpTool(def, { q: 'red fox', tags: ['a', 'b'], n: 3, filter: { lang: 'en' } }, reach());
    assert.equal(result.is_error, false);
    const echoed = JSON.parse(result.content) as EchoedRequest;
    assert.equal(echoed.method, 'GET');
    assert.deepEqual(echoed.query, { fixed: ['1'], q: ['red fox'], tags: ['a', 'b'], n: ['3'], filter: ['{"lang":"en"}'] });
    assert.equal(echoed.headers.authorization, 'Bearer tool-secret');
    assert.equal(echoed.body, '');
  });

  it('sends the arguments of other methods as a JSON body (POST by default)', async () => {
    for (const method of [undefined, 'PUT', 'PATCH', 'DELETE'] as const) {
      const result = await callHttpTool(tool('/echo', { method }), { city: 'Oslo', days: 2 }, reach());
      const echoed = JSON.parse(result.content) as EchoedRequest;
      assert.equal(echoed.method, method ?? 'POST');
      assert.equal(echoed.headers['content-type'], 'application/json');
      assert.deepEqual(JSON.parse(echoed.body), { city: 'Oslo', days: 2 });
    }
  });

  it('shows the model why arguments that do not match the parameters were refused, and sends nothing', async () => {
    const parameters = { type: 'object', properties: { city: { type: 'string' } }, required: ['city'], additionalProperties: false };
    const result = await callHttpTool(tool('/hang', { parameters }), { town: 'Oslo' }, reach());
    assert.equal(result.is_error, true);
    assert.match(result.content, /do not match the tool's parameters: .*city/);
    assert.equal(server.hanging, 0);
  });

  it('tells the model a stored tool whose parameters schema is now refused cannot be called, and sends nothing', async () => {
    const before = server.received.length;
    const parameters = { type: 'object', properties: { q: { type: 'string', pattern: '^(?=a)a+$' } } };
    const result = await callHttpTool(tool('/echo', { parameters }), { q: 'aaa' }, reach());
    assert.equal(result.is_error, true);
    assert.match(
      result.content,
      /^The tool cannot be called: its parameters schema is not a usable JSON Schema: the pattern "\^\(\?=a\)a\+\$" is not supported/,
    );
    assert.equal(server.received.length, before);
  });

  it('answers a 4xx as an error result the model reads, with the status and the body', async () => {
    assert.deepEqual(await callHttpTool(tool('/status/404'), {}, reach()), { content: 'HTTP 404: status 404 on purpose', is_error: true });
    assert.deepEqual(await callHttpTool(tool('/status/422'), {}, reach()), { content: 'HTTP 422: status 422 on purpose', is_error: true });
  });

  it('throws ToolUnavailableError on 503 and 429, with the Retry-After the tool gave', async () => {
    await assert.rejects(callHttpTool(tool('/status/503?retry-after=7'), {}, reach()), (err: unknown) => {
      assert.ok(err instanceof ToolUnavailableError);
      assert.equal(err.retryable, true);
      assert.equal(err.retryAfterMs, 7000);
      return true;
    });
    await assert.rejects(
      callHttpTool(tool('/status/429'), {}, reach()),
      (err: unknown) => err instanceof ToolUnavailableError && err.retryAfterMs === undefined,
    );
  });

  it("waits no longer than the retry policy's longest interval, however long the Retry-After a tool gives", async () => {
    for (const retryAfter of ['999999999', encodeURIComponent(new Date(Date.now() + 365 * 86_400_000).toUTCString())]) {
      await assert.rejects(callHttpTool(tool(`/status/429?retry-after=${retryAfter}`), {}, reach()), (err: unknown) => {
        assert.ok(err instanceof ToolUnavailableError);
        assert.equal(err.retryAfterMs, TOOL_RETRY_MAX_INTERVAL_MS);
        return true;
      });
    }
    assert.equal(TOOL_RETRY_MAX_INTERVAL_MS, 20_000);
  });

  it('throws ToolUnavailableError when the connection is refused', async () => {
    const gone = await startToolServer();
    await gone.close();
    await assert.rejects(callHttpTool({ type: 'http', name: 'gone', url: `${gone.url}/echo` }, {}, reach()), ToolUnavailableError);
  });

  it('tells the model the tool did not answer within timeout_ms', async () => {
    const result = await callHttpTool(tool('/hang', { timeout_ms: 300 }), {}, reach());
    assert.deepEqual(result, { content: 'probe did not answer within 300 ms', is_error: true });
  });

  it('reads no more than max_response_bytes and says the response was cut', async () => {
    const result = await callHttpTool(tool('/bytes/200000', { max_response_bytes: 1001 }), {}, reach());
    assert.equal(result.is_error, false);
    const [text, note] = result.content.split('\n\n');
    // 1001 bytes hold 500 two-byte characters and half of the next, which is left out.
    assert.equal(text, 'é'.repeat(500));
    assert.equal(note, '[The response was longer than 1001 bytes; only the first 1001 bytes are shown.]');
    const whole = await callHttpTool(tool('/bytes/1000', { max_response_bytes: 1000 }), {}, reach());
    assert.equal(whole.content, 'é'.repeat(500));
  });

  it('describes a binary answer instead of showing its bytes, and does not follow redirects', async () => {
    assert.deepEqual(await callHttpTool(tool('/picture'), {}, reach()), {
      content: 'The tool answered with image/png content, which is not text.',
      is_error: false,
    });
    const redirected = await callHttpTool(tool('/redirect'), {}, reach());
    assert.equal(redirected.is_error, true);
    assert.match(redirected.content, /^HTTP 302: the tool redirected to \/echo; redirects are not followed$/);
  });

  it("aborts the request when the run is cancelled, with the run's reason", async () => {
    const run = new AbortController();
    const before = server.hanging;
    const call = callHttpTool(tool('/hang', { timeout_ms: 60_000 }), {}, reach(run.signal));
    await eventually(() => assert.equal(server.hanging, before + 1), { message: 'the request did not arrive' });
    const reason = new Error('run cancelled');
    run.abort(reason);
    await assert.rejects(call, (err: unknown) => err === reason);
  });

  it('refuses loopback, private and metadata targets when private addresses are not allowed, and says why', async () => {
    const targets = [
      `${server.url}/echo`,
      server.url.replace('127.0.0.1', 'localhost') + '/echo',
      server.url.replace('127.0.0.1', '[::ffff:127.0.0.1]') + '/echo',
      'http://169.254.169.254/latest/meta-data/',
      'http://10.255.255.1/x',
      'http://[::1]:9/x',
    ];
    for (const url of targets) {
      const result = await callHttpTool(
        { type: 'http', name: 'probe', url },
        {},
        { projectId: 'proj_tools', signal: new AbortController().signal, allowPrivate: false },
      );
      assert.equal(result.is_error, true, url);
      assert.match(result.content, /^The request was refused: .* is not a public address; only public addresses may be reached$/, url);
    }
  });
});
