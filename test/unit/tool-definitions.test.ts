import assert from 'node:assert/strict';
import {
  toolDefinitionProblems,
  type A2aToolDefinition,
  type HttpToolDefinition,
  type McpToolDefinition,
  type ToolDefinition,
} from '../../tools/definitions.js';

const http = (over: Partial<HttpToolDefinition> = {}): HttpToolDefinition => ({
  type: 'http',
  name: 'lookup',
  url: 'https://tools.example.com/lookup',
  ...over,
});
const mcp = (over: Partial<McpToolDefinition> = {}): McpToolDefinition => ({
  type: 'mcp',
  server_label: 'docs',
  server_url: 'https://mcp.example.com/mcp',
  ...over,
});
const a2a = (over: Partial<A2aToolDefinition> = {}): A2aToolDefinition => ({
  type: 'a2a',
  name: 'reviewer',
  card_url: 'https://agents.example.com/.well-known/agent-card.json',
  ...over,
});
const problems = (tools: ToolDefinition[], allowPrivate = false) => toolDefinitionProblems(tools, { allowPrivate });
const params = (tools: ToolDefinition[], allowPrivate = false) => problems(tools, allowPrivate).map((p) => p.param);

describe('tool definition problems', () => {
  it('finds none in HTTP tools and MCP servers on public hosts with distinct names', () => {
    assert.deepEqual(
      problems([
        http(),
        http({ name: 'search', method: 'GET', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } }),
        mcp(),
      ]),
      [],
    );
  });

  it('refuses two HTTP tools with one name, and two MCP servers with one label', () => {
    assert.deepEqual(params([http(), http(), mcp(), mcp()]), ['tools.1.name', 'tools.3.server_label']);
    assert.match(problems([http(), http()])[0]!.message, /already used by tools\.0/);
  });

  it('refuses an HTTP tool named like the tools of an MCP server (<label>__<tool>), or like read_file', () => {
    assert.deepEqual(params([mcp(), http({ name: 'docs__search' }), http({ name: 'read_file' })]), ['tools.1.name', 'tools.2.name']);
  });

  it('refuses an A2A tool whose name an HTTP tool, a built-in tool or an MCP server has, or whose card is on a private host', () => {
    assert.deepEqual(problems([a2a(), http({ name: 'search' })]), []);
    assert.deepEqual(
      params([
        http({ name: 'reviewer' }),
        a2a(),
        mcp(),
        a2a({ name: 'docs__review' }),
        a2a({ name: 'read_file' }),
        a2a({ name: 'local', card_url: 'http://10.0.0.7/card' }),
        a2a({ name: 'creds', card_url: 'https://user:pw@agents.example.com/card' }),
        a2a({ name: 'headed', headers: { Host: 'x' } }),
      ]),
      ['tools.1.name', 'tools.3.name', 'tools.4.name', 'tools.5.card_url', 'tools.6.card_url', 'tools.7.headers.Host'],
    );
    assert.deepEqual(params([a2a({ card_url: 'http://10.0.0.7/card' })], true), []);
  });

  it('refuses a server label that would make <label>__<tool> ambiguous', () => {
    assert.deepEqual(params([mcp({ server_label: 'my__docs' }), mcp({ server_label: 'docs_' })]), [
      'tools.0.server_label',
      'tools.1.server_label',
    ]);
  });

  it('refuses parameters that are not an object schema, or that do not compile', () => {
    const found = problems([
      http({ parameters: { type: 'string' } }),
      http({ name: 'b', parameters: { type: 'object', properties: { q: { type: 'strin' } } } }),
      http({ name: 'c', parameters: { type: 'object', properties: { q: { $ref: '#/$defs/missing' } } } }),
      http({ name: 'd', parameters: { type: 'object', properties: { q: { type: 'string', 'x-ui': 'wide' } } } }),
    ]);
    assert.deepEqual(
      found.map((p) => p.param),
      ['tools.0.parameters', 'tools.1.parameters', 'tools.2.parameters'],
    );
    assert.match(found[0]!.message, /type is "object"/);
    assert.match(found[1]!.message, /not a usable JSON Schema/);
  });

  it('refuses URLs that are not absolute http(s) URLs, or that carry credentials', () => {
    const found = problems([
      http({ url: '/relative' }),
      http({ name: 'b', url: 'ftp://tools.example.com/x' }),
      http({ name: 'c', url: 'file:///etc/passwd' }),
      http({ name: 'd', url: 'https://user:secret@tools.example.com/x' }),
      mcp({ server_url: 'gopher://mcp.example.com' }),
    ]);
    assert.deepEqual(
      found.map((p) => p.param),
      ['tools.0.url', 'tools.1.url', 'tools.2.url', 'tools.3.url', 'tools.4.server_url'],
    );
    assert.match(found[3]!.message, /credentials/);
  });

  it('takes internationalized and double-hyphen host names, and says which label of a name is not valid punycode', () => {
    const hosts = ['xn--mnchen-3ya.de', 'deploy-preview-42--site.netlify.app', 'shop.xn--p1ai', 'XN--MNCHEN-3YA.DE'];
    assert.deepEqual(problems(hosts.map((host, i) => http({ name: `t${i}`, url: `https://${host}/hook` }))), []);
    const found = problems([http({ url: 'https://api.xn--a.example:8443/x' }), a2a({ card_url: 'https://xn--0.example/card' })]);
    assert.deepEqual(
      found.map((p) => [p.param, p.message]),
      [
        ['tools.0.url', 'api.xn--a.example is not a host name: its label xn--a is not valid punycode'],
        ['tools.1.card_url', 'xn--0.example is not a host name: its label xn--0 is not valid punycode'],
      ],
    );
  });

  const privateTargets = [
    'http://127.0.0.1/x',
    'http://localhost:8080/x',
    'http://api.localhost/x',
    'http://10.0.0.8/x',
    'http://192.168.1.1/x',
    'http://172.16.5.4/x',
    'http://169.254.169.254/latest/meta-data/',
    'http://0.0.0.0/x',
    'http://2130706433/x',
    'http://0x7f.1/x',
    'http://[::1]/x',
    'http://[::ffff:127.0.0.1]/x',
    'http://[fe80::1]/x',
    'http://[fd00:ec2::254]/x',
    'http://[::]/x',
    'http://100.100.100.200/x',
    'http://[::7f00:1]/x',
    'http://[::127.0.0.1]/x',
    'http://[::808:808]/x',
  ];
  it('refuses literal private, loopback, link-local and metadata addresses and localhost', () => {
    for (const url of privateTargets) {
      const found = problems([http({ url }), mcp({ server_url: url })]);
      assert.deepEqual(
        found.map((p) => p.param),
        ['tools.0.url', 'tools.1.server_url'],
        url,
      );
      assert.match(found[0]!.message, /public addresses/, url);
    }
  });

  it('accepts those targets when private addresses are allowed, and public literal addresses always', () => {
    for (const url of privateTargets) assert.deepEqual(problems([http({ url })], true), [], url);
    assert.deepEqual(problems([http({ url: 'http://8.8.8.8/x' }), mcp({ server_url: 'https://[2606:4700::1111]/mcp' })]), []);
  });

  it('refuses headers that would split the request or that the platform sets', () => {
    const found = problems([
      http({ headers: { Authorization: 'Bearer t0k3n', 'X-Trace': 'a\r\nInjected: yes' } }),
      mcp({ headers: { Host: 'internal', 'bad name': 'x' } }),
    ]);
    assert.deepEqual(
      found.map((p) => p.param),
      ['tools.0.headers.X-Trace', 'tools.1.headers.Host', 'tools.1.headers'],
    );
  });
});
