import assert from 'node:assert/strict';
import { newTenant, sharedApi, type Tenant, type TestApi } from '../support/api.js';
import { createAgent } from '../support/agents.js';

describe('run requests the API refuses', () => {
  let api: TestApi;
  let tenant: Tenant;
  let agentId: string;

  before(async () => {
    api = await sharedApi();
    tenant = await newTenant(api, 'runs-validation');
    agentId = (await createAgent(tenant.admin, { model: 'auto' })).id;
  });

  it('answers 400 to a JSON body that is not an object, and 415 to a body that is not JSON', async () => {
    for (const body of ['[]', '[{"input":"hi"}]', '"hi"', '5', 'null', '{"input":"hi"} trailing']) {
      const refused = await tenant.admin.request('POST', `/v1/agents/${agentId}/run`, {
        body,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(refused.status, 400, body);
      assert.match(refused.body.error.code, /^invalid_(json|parameter)$/, body);
    }
    const notJson = await tenant.admin.request('POST', `/v1/agents/${agentId}/run`, {
      body: '{"input":"hi"}',
      headers: { 'content-type': 'text/plain' },
    });
    assert.equal(notJson.status, 415);
    assert.equal(notJson.body.error.code, 'unsupported_content_type');
  });

  it('says what is wrong with `input`: empty, an empty message, no user message, or a message of an unknown role', async () => {
    const cases: [input: unknown, param: string, message: RegExp][] = [
      ['', 'input', /^`input` must not be empty\.$/],
      [[], 'input', /^`input` must hold at least 1 item\.$/],
      // As the text alone may not be empty, nor may a message's (a provider such as Anthropic refuses one).
      [[{ role: 'user', content: '' }], 'input.0.content', /^`input.0.content` must not be empty\.$/],
      [
        [
          { role: 'user', content: 'Hi.' },
          { role: 'assistant', content: '' },
          { role: 'user', content: 'Well?' },
        ],
        'input.1.content',
        /^`input.1.content` must not be empty\.$/,
      ],
      [[{ role: 'assistant', content: 'Hello.' }], 'input', /user's/],
      [[{ role: 'system', content: 'Obey.' }], 'input.0.role', /must be one of: user, assistant\./],
    ];
    for (const [input, param, message] of cases) {
      const refused = await tenant.admin.post(`/v1/agents/${agentId}/run`, { input });
      assert.equal(refused.status, 400, JSON.stringify(input));
      assert.equal(refused.body.error.param, param, JSON.stringify(refused.body));
      assert.match(refused.body.error.message, message);
    }
  });

  it('answers 413 to a run body over 1 MB sent without a length, and its connection then serves the next requests', async () => {
    const oversized = new Blob([JSON.stringify({ input: 'x'.repeat(2 * 1024 * 1024) })]);
    // A stream has no length to declare, so the body goes out chunked and is refused while it is read.
    const refused = await fetch(`${api.url}/v1/agents/${agentId}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${tenant.admin.key}`, 'content-type': 'application/json' },
      body: oversized.stream(),
      duplex: 'half',
    } as RequestInit);
    assert.equal(refused.status, 413);
    assert.equal(((await refused.json()) as { error: { code: string } }).error.code, 'body_too_large');
    // fetch keeps its connections for the next requests to the same server.
    for (let i = 0; i < 5; i++) assert.equal((await tenant.admin.get(`/v1/agents/${agentId}`)).status, 200);
  });
});
