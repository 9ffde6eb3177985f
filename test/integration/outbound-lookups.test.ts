import assert from 'node:assert/strict';
import { callHttpTool } from '../../tools/http-tool.js';
import { ToolUnavailableError } from '../../tools/outcomes.js';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.js';
import { eventually } from '../support/eventually.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';

describe('tool calls to names that AGENTPLANE_DNS_SERVERS resolve', () => {
  let dns: TestDnsServer;
  let tools: TestToolServer;
  const before = process.env.AGENTPLANE_DNS_SERVERS;
  // The tool server listens on loopback.
  const reach = (projectId: string) => ({ projectId, signal: new AbortController().signal, allowPrivate: true });
  const port = () => new URL(tools.url).port;

  beforeEach(async () => {
    tools = await startToolServer();
    // `tools.test` resolves; no server ever answers for `unanswered.test`.
    dns = await startDnsServer({ 'tools.test': '127.0.0.1' });
    process.env.AGENTPLANE_DNS_SERVERS = dns.address;
  });

  afterEach(async () => {
    if (before === undefined) delete process.env.AGENTPLANE_DNS_SERVERS;
    else process.env.AGENTPLANE_DNS_SERVERS = before;
    await dns.close();
    await tools.close();
  });

  it("go through for one project while another project's names are never answered, which fail as passing failures (tried again later)", async () => {
    // As many as one project may have under way: the next would wait for its turn.
    const stuck = Array.from({ length: 4 }, () =>
      callHttpTool({ type: 'http', name: 'stuck', url: `http://unanswered.test:${port()}/echo` }, {}, reach('proj_stuck')),
    );
    const settled = Promise.allSettled(stuck);
    await eventually(() => assert.ok(dns.asked.includes('unanswered.test'), 'the stuck names were not asked yet'), {
      message: 'the stuck lookups did not start',
    });
    const result = await callHttpTool(
      { type: 'http', name: 'echo', url: `http://tools.test:${port()}/echo` },
      { word: 'through' },
      reach('proj_other'),
    );
    assert.equal(result.is_error, false, result.content);
    assert.match(result.content, /through/);
    for (const outcome of await settled) {
      assert.equal(outcome.status, 'rejected');
      const err = (outcome as PromiseRejectedResult).reason as unknown;
      assert.ok(err instanceof ToolUnavailableError, String(err));
      assert.match(err.message, /stuck could not be reached: .*ETIMEOUT/);
    }
    assert.deepEqual(tools.received, ['/echo'], 'only the call whose name resolved was sent');
  });
});
