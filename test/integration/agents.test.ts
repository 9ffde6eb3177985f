import assert from 'node:assert/strict';
import { newTenant, sharedApi, type Tenant } from '../support/api.js';
import { createAgent } from '../support/agents.js';
import { assertMarkedDeprecated } from '../support/deprecated-update.js';

describe('agents', () => {
  let tenant: Tenant;

  before(async () => {
    tenant = await newTenant(await sharedApi(), 'agents');
  });

  it('creates an agent at version 1 with its defaults, and retrieves it', async () => {
    const created = await tenant.admin.post('/v1/agents', { name: 'Researcher', model: 'auto', instructions: 'Be precise.' });
    assert.equal(created.status, 201);
    assert.match(created.body.id, /^agent_/);
    assert.deepEqual(
      { ...created.body, id: undefined, created_at: undefined, updated_at: undefined },
      {
        id: undefined,
        object: 'agent',
        name: 'Researcher',
        description: null,
        model: 'auto',
        instructions: 'Be precise.',
        tools: [],
        model_settings: {},
        concurrency: 'allow',
        max_steps: 10,
        approval_timeout_seconds: 604800,
        max_cost_usd: null,
        memory: { enabled: false },
        metadata: {},
        managed_by: null,
        managed_resource: null,
        version: 1,
        created_at: undefined,
        updated_at: undefined,
      },
    );
    const fetched = await tenant.admin.get(`/v1/agents/${created.body.id}`);
    assert.deepEqual(fetched.body, created.body);
  });

  it('refuses a model outside the catalogue with 400, naming the models it accepts', async () => {
    const refused = await tenant.admin.post('/v1/agents', { name: 'x', model: 'gpt-9-ultra' });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, 'model_not_found');
    assert.equal(refused.body.error.param, 'model');
    assert.match(refused.body.error.message, /auto/);
    assert.match(refused.body.error.message, /gpt-4\.1-mini/);
  });

  it('makes a new version on update, keeps unchanged fields, and hides tool header values', async () => {
    const agent = await createAgent(tenant.admin, {
      tools: [{ type: 'http', name: 'lookup', url: 'https://tools.example.com/lookup', headers: { Authorization: 'Bearer secret-token' } }],
    });
    const updated = await tenant.admin.patch(`/v1/agents/${agent.id}`, { instructions: 'Answer in French.', concurrency: 'enqueue' });
    assert.equal(updated.status, 200);
    assert.equal(updated.body.version, 2);
    assert.equal(updated.body.instructions, 'Answer in French.');
    assert.equal(updated.body.concurrency, 'enqueue');
    assert.equal(updated.body.name, agent.name);
    assert.deepEqual(updated.body.tools[0].headers, { Authorization: '********' });
    assert.doesNotMatch(JSON.stringify(updated.body), /secret-token/);
  });

  it('still updates with POST, the verb before PATCH, and says on the answer that POST is deprecated', async () => {
    const agent = await createAgent(tenant.admin);
    const path = `/v1/agents/${agent.id}`;
    const updated = await tenant.admin.post(path, { instructions: 'Answer in Dutch.' });
    assert.equal(updated.status, 200, JSON.stringify(updated.body));
    assert.deepEqual([updated.body.version, updated.body.instructions], [2, 'Answer in Dutch.']);
    assert.deepEqual((await tenant.admin.get(path)).body, updated.body);
    await assertMarkedDeprecated(tenant.admin.baseUrl, path, updated);
    const patched = await tenant.admin.patch(path, { instructions: 'Answer in Frisian.' });
    assert.equal(patched.headers.get('deprecation'), null);
  });

  it('refuses tools alike, tools with duplicate names or a loopback target, naming the tool', async () => {
    const duplicate = await tenant.admin.post('/v1/agents', {
      name: 'x',
      model: 'auto',
      tools: [
        { type: 'http', name: 'lookup', url: 'https://a.example.com/' },
        { type: 'http', name: 'lookup', url: 'https://b.example.com/' },
      ],
    });
    assert.equal(duplicate.status, 400);
    assert.equal(duplicate.body.error.code, 'invalid_tool');
    assert.match(duplicate.body.error.param, /^tools\.1/);
    // Two tools alike break the document's own rule (uniqueItems).
    const lookup = { type: 'http', name: 'lookup', url: 'https://a.example.com/' };
    const twice = await tenant.admin.post('/v1/agents', { name: 'x', model: 'auto', tools: [lookup, lookup] });
    assert.equal(twice.status, 400);
    assert.deepEqual([twice.body.error.code, twice.body.error.param], ['invalid_parameter', 'tools']);
    assert.match(twice.body.error.message, /^`tools` must not hold the same item twice: items 0 and 1 are the same\.$/);
    const schema = await tenant.admin.post('/v1/agents', {
      name: 'x',
      model: 'auto',
      tools: [
        {
          type: 'http',
          name: 'lookup',
          url: 'https://a.example.com/',
          parameters: { type: 'object', properties: { q: { type: 'nonsense' } } },
        },
      ],
    });
    assert.equal(schema.status, 400);
    assert.match(schema.body.error.param, /^tools\.0\.parameters/);
  });

  it('refuses with 400 invalid_tool parameters past 65,536 bytes or 32 levels, with a pattern that cannot be matched in linear time, or referring to themselves without end, and stores nothing', async () => {
    const before = (await tenant.admin.get('/v1/agents?limit=100')).body.data.length;
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 20; i++) deep = { type: 'object', properties: { p: deep } };
    const refused: [parameters: Record<string, unknown>, message: RegExp][] = [
      [{ type: 'object', description: 'x'.repeat(70_000) }, /^is \d+ bytes as JSON, more than the 65536 allowed$/],
      [deep, /^nests objects and arrays deeper than 32 levels/],
      [
        { type: 'object', properties: { q: { type: 'string', pattern: '^(?=a)(a+)+$' } } },
        /the pattern "\^\(\?=a\)\(a\+\)\+\$" is not supported/,
      ],
      [
        { type: 'object', patternProperties: { '^(\\w)\\1$': {} } },
        /is not supported \(patterns are matched in linear time, without backreferences or lookaround\)/,
      ],
      // Checking arguments against these would recurse until the worker's call stack gave out.
      [{ type: 'object', allOf: [{ $ref: '#' }] }, /^refers to itself without end: a `\$ref` or `\$dynamicRef` leads back to itself/],
      [{ type: 'object', $dynamicRef: '#meta' }, /^refers to itself without end/],
    ];
    for (const [parameters, message] of refused) {
      const answer = await tenant.admin.post('/v1/agents', {
        name: 'x',
        model: 'auto',
        tools: [{ type: 'http', name: 'lookup', url: 'https://a.example.com/', parameters }],
      });
      assert.equal(answer.status, 400, JSON.stringify(answer.body).slice(0, 300));
      assert.equal(answer.body.error.code, 'invalid_tool');
      assert.equal(answer.body.error.param, 'tools.0.parameters');
      assert.match(answer.body.error.message, message);
    }
    assert.equal((await tenant.admin.get('/v1/agents?limit=100')).body.data.length, before);
  });

  it('refuses with 400, saying why, the tool names, labels, headers, URLs and parameters the document rules out', async () => {
    const refusals: [tool: Record<string, unknown>, param: string, value: RegExp][] = [
      [{ type: 'http', name: 'read_file', url: 'https://a.example.com/' }, 'tools.0.name', /"read_file"/],
      // A name the pattern refuses is told by the rule it breaks, not by the one it keeps.
      [{ type: 'http', name: 'outil_é', url: 'https://a.example.com/' }, 'tools.0.name', /1 to 64 letters, digits, `_` and `-`/],
      [{ type: 'http', name: 'n'.repeat(65), url: 'https://a.example.com/' }, 'tools.0.name', /1 to 64 letters/],
      [{ type: 'a2a', name: 'two words', card_url: 'https://a.example.com/card.json' }, 'tools.0.name', /1 to 64 letters/],
      [{ type: 'http', name: 'lookup', url: 'https://a.example.com/', headers: { TE: 'trailers' } }, 'tools.0.headers', /"TE"/],
      [{ type: 'http', name: 'lookup', url: 'https://a.example.com/', parameters: { properties: {} } }, 'tools.0.parameters.type', /type/],
      [{ type: 'http', name: 'lookup', url: 'https://user:secret@a.example.com/' }, 'tools.0.url', /No user name or password/],
      [{ type: 'http', name: 'lookup', url: 'https://\u0018/' }, 'tools.0.url', /http or https URL/],
    ];
    for (const [tool, param, value] of refusals) {
      const refused = await tenant.admin.post('/v1/agents', { name: 'x', model: 'auto', tools: [tool] });
      assert.equal(refused.status, 400, JSON.stringify(tool));
      assert.equal(refused.body.error.param, param, JSON.stringify(refused.body));
      assert.match(refused.body.error.message, value);
    }
    for (const label of ['my__docs', 'docs_']) {
      const refused = await tenant.admin.post('/v1/agents', {
        name: 'x',
        model: 'auto',
        tools: [{ type: 'mcp', server_label: label, server_url: 'https://mcp.example.com/' }],
      });
      assert.equal(refused.status, 400, label);
    }
  });

  it('refuses with 400 a tool that is not an object or names no known type, and says what an MCP server lacks', async () => {
    for (const tool of [5, null, 'http', [], {}, { type: 'nope' }]) {
      const refused = await tenant.admin.post('/v1/agents', { name: 'x', model: 'auto', tools: [tool] });
      assert.equal(refused.status, 400, JSON.stringify(tool));
      assert.match(refused.body.error.param, /^tools\.0/, JSON.stringify(refused.body));
    }
    const partial = await tenant.admin.post('/v1/agents', { name: 'x', model: 'auto', tools: [{ type: 'mcp', server_label: 'docs' }] });
    assert.equal(partial.body.error.param, 'tools.0.server_url');
  });

  it('lists agents newest first and forgets a deleted one, which answers 404 after', async () => {
    const first = await createAgent(tenant.admin, { name: 'first' });
    const second = await createAgent(tenant.admin, { name: 'second' });
    const page = await tenant.admin.get('/v1/agents?limit=2');
    assert.deepEqual(
      page.body.data.map((a: { id: string }) => a.id),
      [second.id, first.id],
    );
    const deleted = await tenant.admin.delete(`/v1/agents/${second.id}`);
    assert.deepEqual(deleted.body, { id: second.id, object: 'agent', deleted: true });
    assert.equal((await tenant.admin.get(`/v1/agents/${second.id}`)).status, 404);
    assert.equal((await tenant.admin.delete(`/v1/agents/${second.id}`)).status, 404);
    const after = await tenant.admin.get('/v1/agents?limit=100');
    assert.ok(!after.body.data.some((a: { id: string }) => a.id === second.id));
  });

  it("answers 404 for another project's agent, and 403 without agents:write", async () => {
    const agent = await createAgent(tenant.admin);
    const other = await newTenant(await sharedApi(), 'agents-other');
    assert.equal((await other.admin.get(`/v1/agents/${agent.id}`)).status, 404);
    assert.equal((await other.admin.patch(`/v1/agents/${agent.id}`, { name: 'stolen' })).status, 404);
    const reader = await tenant.keyWith('agents:read');
    const refused = await reader.post('/v1/agents', { name: 'x', model: 'auto' });
    assert.equal(refused.status, 403);
  });

  it('returns the same agent for a repeated Idempotency-Key', async () => {
    const body = { name: 'once', model: 'auto' };
    const first = await tenant.admin.post('/v1/agents', body, { 'Idempotency-Key': 'agent-once' });
    const again = await tenant.admin.post('/v1/agents', body, { 'Idempotency-Key': 'agent-once' });
    assert.equal(again.status, 201);
    assert.equal(again.body.id, first.body.id);
  });

  it('lists the model catalogue with capabilities and prices', async () => {
    const models = await tenant.admin.get('/v1/models');
    assert.equal(models.status, 200);
    const mini = models.body.data.find((m: { id: string }) => m.id === 'gpt-4.1-mini');
    assert.equal(mini.provider, 'openai');
    assert.equal(mini.capabilities.tools, true);
    assert.equal(mini.pricing.currency, 'USD');
    assert.equal(mini.pricing.input_per_million, '0.40');
    assert.equal(mini.configured, false);
  });
});
