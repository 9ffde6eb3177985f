import assert from 'node:assert/strict';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { startToolServer, type TestToolServer } from '../support/http-tool-server.js';
import { newTenant } from '../support/api.js';
import type { ApiClient, ApiResponse } from '../support/client.js';
import { MAX_JSON_DEPTH } from '../../records/json-depth.js';

function assertError(response: ApiResponse, status: number, code: string, param: string | null) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error.code, code);
  assert.equal(response.body.error.param, param);
}

describe('datasets', function () {
  this.timeout(60_000);
  let stack: RunsStack;
  let tools: TestToolServer;
  let client: ApiClient;

  before(async () => {
    stack = await startRunsStack('datasets');
    tools = await startToolServer();
    client = stack.tenant.admin;
  });
  after(async () => {
    await tools?.close();
    await stack?.stop();
  });

  const newDataset = async (fields: Record<string, unknown> = {}) => {
    const created = await client.post('/v1/datasets', { name: 'support answers', ...fields });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    return created.body;
  };
  const lookup = () => ({
    type: 'http',
    name: 'lookup_order',
    url: `${tools.url}/echo`,
    parameters: { type: 'object', properties: { id: { type: 'string' } } },
  });
  /** A completed run of a new agent that called its tool once. */
  const runWithToolCall = async (fields: Record<string, unknown> = {}) => {
    const agent = await createAgent(client, { tools: [lookup()] });
    stack.openai.enqueue({ tool_calls: [{ name: 'lookup_order', arguments: '{"id":"1234"}' }] });
    stack.openai.enqueue({ text: ['Order 1234 ships tomorrow.'] });
    const run = await client.post(`/v1/agents/${agent.id}/run`, { input: 'Where is order 1234?', ...fields });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body));
    return run.body;
  };

  it('creates, lists, reads and deletes datasets, keeps their scorers in full, and audits the changes', async () => {
    const dataset = await newDataset({
      description: 'Questions customers asked.',
      metadata: { team: 'support' },
      scorers: ['completion', { name: 'exact_match', case_sensitive: false }, { name: 'judge', rubric: 'Polite and correct.' }],
    });
    assert.deepEqual(
      { object: dataset.object, item_count: dataset.item_count, scorers: dataset.scorers },
      {
        object: 'dataset',
        item_count: 0,
        scorers: [
          { name: 'completion' },
          { name: 'exact_match', case_sensitive: false, trim: true },
          { name: 'judge', rubric: 'Polite and correct.' },
        ],
      },
    );
    const other = await newDataset({ name: 'billing' });
    const listed = await client.get('/v1/datasets?limit=1');
    assert.deepEqual([listed.body.data[0].id, listed.body.has_more], [other.id, true]);
    const next = await client.get(`/v1/datasets?limit=1&after=${other.id}`);
    assert.equal(next.body.data[0].id, dataset.id);
    assert.equal((await client.get(`/v1/datasets/${dataset.id}`)).body.description, 'Questions customers asked.');

    const deleted = await client.delete(`/v1/datasets/${other.id}`);
    assert.deepEqual(deleted.body, { id: other.id, object: 'dataset', deleted: true, items_removed: 0 });
    assertError(await client.get(`/v1/datasets/${other.id}`), 404, 'resource_not_found', 'id');
    const audit = await client.get(`/v1/audit-logs?target_id=${other.id}`);
    assert.deepEqual(audit.body.data.map((e: { action: string }) => e.action).sort(), ['dataset.create', 'dataset.delete']);
  });

  it('refuses scorers it cannot use, naming which, and creates nothing', async () => {
    const before = (await client.get('/v1/datasets?limit=100')).body.data.length;
    const refuse = async (scorers: unknown[], code: string, param: string) =>
      assertError(await client.post('/v1/datasets', { name: 'x', scorers }), 400, code, param);
    await refuse([{ name: 'json_schema', schema: { type: 'string', pattern: '(a)\\1' } }], 'invalid_scorer', 'scorers.0.schema');
    await refuse(['latency', { name: 'latency' }], 'duplicate_scorer', 'scorers.1');
    // The request's schema already names the operations and metrics there are.
    await refuse([{ name: 'string_check', operation: 'glob' }], 'invalid_parameter', 'scorers.0.operation');
    await refuse([{ name: 'text_similarity', metric: 'meteor' }], 'invalid_parameter', 'scorers.0.metric');
    await refuse([{ name: 'judge', rubric: 'Fair.', model: 'no-such-model' }], 'model_not_found', 'scorers.0.model');
    assert.equal(((await client.post('/v1/datasets', { name: 'x', scorers: ['bleu'] })) as ApiResponse).status, 400);
    assert.equal((await client.get('/v1/datasets?limit=100')).body.data.length, before);
  });

  it('adds items in a batch, all or nothing, pages them, and removes one with the count following', async () => {
    const dataset = await newDataset();
    const refused = await client.post(`/v1/datasets/${dataset.id}/items`, {
      items: [{ input: 'What is the capital of France?', expected: 'Paris' }, { input: [{ role: 'assistant', content: 'Hello.' }] }],
    });
    assertError(refused, 400, 'invalid_parameter', 'items.1.input');
    assertError(
      await client.post(`/v1/datasets/${dataset.id}/items`, { items: [{ input: 'Hi', expected: 'x'.repeat(70_000) }] }),
      400,
      'expected_too_large',
      'items.0.expected',
    );
    assertError(
      await client.post(`/v1/datasets/${dataset.id}/items`, { items: [{ input: 'Hi' }, { input: 'Hi', file_ids: ['file_none'] }] }),
      404,
      'resource_not_found',
      'items.1.file_ids.0',
    );
    assert.equal((await client.get(`/v1/datasets/${dataset.id}`)).body.item_count, 0, 'a refused batch adds nothing');

    const added = await client.post(`/v1/datasets/${dataset.id}/items`, {
      items: [
        { input: 'What is the capital of France?', expected: 'Paris', metadata: { topic: 'geography' } },
        { input: [{ role: 'user', content: 'Give the order total as JSON.' }], expected: { total: 42 } },
        { input: 'Say hello.' },
      ],
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    assert.deepEqual(
      added.body.data.map((i: any) => [i.input, i.expected, i.source_run_id, i.tool_calls, i.tool_call_count]),
      [
        [[{ role: 'user', content: 'What is the capital of France?' }], 'Paris', null, null, 0],
        [[{ role: 'user', content: 'Give the order total as JSON.' }], { total: 42 }, null, null, 0],
        [[{ role: 'user', content: 'Say hello.' }], null, null, null, 0],
      ],
    );
    const ids = added.body.data.map((i: { id: string }) => i.id);
    const page = await client.get(`/v1/datasets/${dataset.id}/items?limit=2`);
    assert.deepEqual([page.body.data.map((i: { id: string }) => i.id), page.body.has_more], [ids.slice(0, 2), true]);
    assert.equal(page.body.data[0].tool_calls, undefined, 'a list leaves the tool calls to the item itself');
    const rest = await client.get(`/v1/datasets/${dataset.id}/items?after=${ids[1]}`);
    assert.deepEqual(
      rest.body.data.map((i: { id: string }) => i.id),
      [ids[2]],
    );

    const removed = await client.delete(`/v1/datasets/${dataset.id}/items/${ids[0]}`);
    assert.deepEqual(removed.body, { id: ids[0], object: 'dataset.item', deleted: true });
    assertError(await client.get(`/v1/datasets/${dataset.id}/items/${ids[0]}`), 404, 'resource_not_found', 'item_id');
    assert.equal((await client.get(`/v1/datasets/${dataset.id}`)).body.item_count, 2);
    const audit = await client.get(`/v1/audit-logs?target_id=${dataset.id}`);
    assert.ok(audit.body.data.some((e: any) => e.action === 'dataset_item.create' && e.outcome.status === 201));
  });

  it('takes an item from a finished run with every tool call and its answer; a run still going answers 409, another project 404', async () => {
    const dataset = await newDataset();
    const run = await runWithToolCall();
    const added = await client.post(`/v1/datasets/${dataset.id}/items`, {
      items: [{ from_run_id: run.id, expected: 'It ships tomorrow.' }],
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const item = (await client.get(`/v1/datasets/${dataset.id}/items/${added.body.data[0].id}`)).body;
    assert.deepEqual(
      [item.input, item.source_run_id, item.expected, item.tool_call_count],
      [[{ role: 'user', content: 'Where is order 1234?' }], run.id, 'It ships tomorrow.', 1],
    );
    assert.deepEqual(
      [item.tool_calls[0].tool, item.tool_calls[0].arguments, item.tool_calls[0].is_error],
      ['lookup_order', '{"id":"1234"}', false],
    );
    assert.match(item.tool_calls[0].content, /1234/, 'the tool answer is kept');

    const waiting = await createAgent(client, { tools: [{ ...lookup(), approval: { mode: 'always' } }] });
    stack.openai.enqueue({ tool_calls: [{ name: 'lookup_order', arguments: '{"id":"9"}' }] });
    const held = await client.post(`/v1/agents/${waiting.id}/run`, { input: 'Where is order 9?' });
    assert.equal(held.body.status, 'requires_action');
    assertError(
      await client.post(`/v1/datasets/${dataset.id}/items`, { items: [{ from_run_id: held.body.id }] }),
      409,
      'run_active',
      'items.0.from_run_id',
    );
    await client.post(`/v1/runs/${held.body.id}/cancel`, {});

    const stranger = await newTenant(stack.api, 'datasets stranger');
    assertError(
      await client.post(`/v1/datasets/${dataset.id}/items`, { items: [{ input: 'x', from_run_id: run.id }] }),
      400,
      'invalid_item',
      'items.0',
    );
    const theirs = await stranger.admin.post('/v1/datasets', { name: 'theirs' });
    assertError(
      await stranger.admin.post(`/v1/datasets/${theirs.body.id}/items`, { items: [{ from_run_id: run.id }] }),
      404,
      'resource_not_found',
      'items.0.from_run_id',
    );
    assertError(await stranger.admin.get(`/v1/datasets/${dataset.id}`), 404, 'resource_not_found', 'id');
  });

  it('gives datasets scopes of their own: datasets:read reads, datasets:write writes, and copying a run needs agents:read', async () => {
    const dataset = await newDataset();
    const reader = await stack.tenant.keyWith('datasets:read');
    assert.equal((await reader.get(`/v1/datasets/${dataset.id}/items`)).status, 200);
    assertError(await reader.post('/v1/datasets', { name: 'no' }), 403, 'missing_scope', null);
    const agentsOnly = await stack.tenant.keyWith('agents:read');
    assertError(await agentsOnly.get('/v1/datasets'), 403, 'missing_scope', null);
    const writer = await stack.tenant.keyWith('datasets:write');
    assert.equal((await writer.get('/v1/datasets')).status, 200);
    const run = await runWithToolCall();
    assertError(await writer.post(`/v1/datasets/${dataset.id}/items`, { items: [{ from_run_id: run.id }] }), 403, 'missing_scope', null);
  });

  it('deletes the items taken from the runs of a forgotten subject or a deleted thread, and refuses to take them again', async () => {
    const dataset = await newDataset();
    const subjectRun = await runWithToolCall({ subject_id: 'customer-ada' });
    const thread = await client.post('/v1/threads', {});
    const threadRun = await runWithToolCall({ thread_id: thread.body.id });
    const kept = await runWithToolCall();
    const added = await client.post(`/v1/datasets/${dataset.id}/items`, {
      items: [{ from_run_id: subjectRun.id }, { from_run_id: threadRun.id }, { from_run_id: kept.id }, { input: 'By hand.' }],
    });
    assert.equal(added.status, 201, JSON.stringify(added.body));
    const sources = async () =>
      (await client.get(`/v1/datasets/${dataset.id}/items`)).body.data.map((i: { source_run_id: string | null }) => i.source_run_id);

    assert.equal((await client.delete('/v1/memories?subject_id=customer-ada')).status, 200);
    assert.deepEqual(await sources(), [threadRun.id, kept.id, null]);
    assert.equal((await client.delete(`/v1/threads/${thread.body.id}`)).status, 200);
    assert.deepEqual(await sources(), [kept.id, null]);
    assert.equal((await client.get(`/v1/datasets/${dataset.id}`)).body.item_count, 2);
    assertError(
      await client.post(`/v1/datasets/${dataset.id}/items`, { items: [{ from_run_id: subjectRun.id }] }),
      409,
      'run_cleared',
      'items.0.from_run_id',
    );
  });

  it('imports an OpenAI Evals export: items from JSONL, expected answers from the reference, criteria mapped or listed with why', async () => {
    const evalDefinition = {
      object: 'eval',
      id: 'eval_67e1b8a2c6f08190',
      name: 'Order questions',
      created_at: 1742824610,
      metadata: {},
      data_source_config: {
        type: 'custom',
        schema: { type: 'object', properties: { item: { type: 'object' }, sample: { type: 'object' } } },
        item_schema: {
          type: 'object',
          properties: { question: { type: 'string' }, answer: { type: 'string' }, difficulty: { type: 'string' } },
        },
        include_sample_schema: true,
      },
      testing_criteria: [
        {
          type: 'string_check',
          name: 'Exact',
          id: 'Exact-1',
          input: '{{sample.output_text}}',
          reference: '{{item.answer}}',
          operation: 'eq',
        },
        {
          type: 'text_similarity',
          name: 'ROUGE',
          id: 'ROUGE-2',
          input: '{{sample.output_text}}',
          reference: '{{item.answer}}',
          evaluation_metric: 'rouge_l',
          pass_threshold: 0.6,
        },
        {
          type: 'score_model',
          name: 'Helpful',
          id: 'Helpful-3',
          model: 'o3-mini',
          input: [{ role: 'system', content: 'Rate how helpful {{sample.output_text}} is for {{item.question}}.' }],
          range: [0, 10],
          pass_threshold: 7,
        },
      ],
    };
    const lines = [
      { item: { question: 'When does order 1234 ship?', answer: 'Tomorrow.', difficulty: 'easy', trace: { steps: 2 } } },
      { item: { question: 'Can I return shoes?', answer: 'Yes, within 30 days.', difficulty: 'hard' } },
    ];
    const imported = await client.post('/v1/datasets/import', {
      eval: evalDefinition,
      items_jsonl: lines.map((line) => JSON.stringify(line)).join('\n') + '\n',
    });
    assert.equal(imported.status, 201, JSON.stringify(imported.body));
    const body = imported.body;
    assert.deepEqual([body.dataset.name, body.dataset.item_count, body.items_imported], ['Order questions', 2, 2]);
    // A JSONL file saved with a byte order mark (as editors on Windows save UTF-8) reads the same, lines ending in CRLF too.
    const marked = await client.post('/v1/datasets/import', {
      eval: evalDefinition,
      items_jsonl: '\uFEFF' + lines.map((line) => JSON.stringify(line)).join('\r\n') + '\r\n',
    });
    assert.equal(marked.status, 201, JSON.stringify(marked.body));
    assert.equal(marked.body.items_imported, 2);
    assert.deepEqual(body.mapped, [
      { criterion: 'Exact', type: 'string_check', scorer: 'string_check' },
      { criterion: 'ROUGE', type: 'text_similarity', scorer: 'text_similarity' },
      { criterion: 'Helpful', type: 'score_model', scorer: 'judge' },
    ]);
    assert.deepEqual(body.dataset.scorers.slice(0, 2), [
      { name: 'string_check', operation: 'eq' },
      { name: 'text_similarity', metric: 'rouge_l', threshold: 0.6 },
    ]);
    assert.deepEqual(body.unmapped, []);
    assert.deepEqual(body.unmapped_fields, [
      {
        field: 'item.trace',
        reason: 'it holds objects or lists, and metadata holds text; it is neither the input nor the expected answer',
      },
    ]);
    const items = (await client.get(`/v1/datasets/${body.id}/items`)).body.data;
    assert.deepEqual(
      items.map((i: any) => [i.input[0].content, i.expected, i.metadata]),
      [
        ['When does order 1234 ship?', 'Tomorrow.', { difficulty: 'easy' }],
        ['Can I return shoes?', 'Yes, within 30 days.', { difficulty: 'hard' }],
      ],
    );

    const before = (await client.get('/v1/datasets?limit=100')).body.data.length;
    const broken = await client.post('/v1/datasets/import', {
      eval: evalDefinition,
      items_jsonl: `${JSON.stringify(lines[0])}\n{"item": {`,
    });
    assertError(broken, 400, 'invalid_import', 'items_jsonl (line 2)');
    const missing = await client.post('/v1/datasets/import', {
      eval: evalDefinition,
      items: [{ item: { prompt: 'Hi' } }],
      input: '{{item.question}}',
    });
    assertError(missing, 400, 'invalid_import', 'items.0');
    const mismatched = await client.post('/v1/datasets/import', {
      eval: evalDefinition,
      items_jsonl: [lines[0], { item: { question: 'Where is my order?', answer: 7 } }].map((line) => JSON.stringify(line)).join('\n'),
    });
    assertError(mismatched, 400, 'invalid_import', 'items_jsonl (line 2)');
    // A line is read on its own: one nested past the limit is refused for it, as a body would be.
    const deep = `{"item": {"question": "Hi", "answer": "x", "extra": ${'['.repeat(20_000)}${']'.repeat(20_000)}}}`;
    const nested = await client.post('/v1/datasets/import', { eval: evalDefinition, items_jsonl: `${JSON.stringify(lines[0])}\n${deep}` });
    assertError(nested, 400, 'invalid_import', 'items_jsonl (line 2)');
    assert.match(
      nested.body.error.message,
      new RegExp(`^Line 2 of \`items_jsonl\` nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels`),
    );
    assert.match(mismatched.body.error.message, /^The item at index 1 .*item_schema`: item\/answer must be string\.$/);
    // A line's text is JSON of its own: half of a surrogate pair in it (a lone `\ud83d` escape) is refused for that line.
    const halved = await client.post('/v1/datasets/import', {
      eval: evalDefinition,
      items_jsonl: `${JSON.stringify(lines[0])}\n{"item": {"question": "Smile \\ud83d", "answer": "x"}}`,
    });
    assertError(halved, 400, 'invalid_import', 'items_jsonl (line 2)');
    assert.match(halved.body.error.message, /^Line 2 of `items_jsonl` holds half of a surrogate pair/);
    const unsafe = await client.post('/v1/datasets/import', {
      eval: {
        ...evalDefinition,
        data_source_config: { type: 'custom', item_schema: { type: 'object', properties: { question: { pattern: '^(a+)\\1$' } } } },
      },
      items: lines,
    });
    assertError(unsafe, 400, 'invalid_import', 'eval.data_source_config.item_schema');
    // An item schema that refers to itself without end is refused as the export's, not checked until the stack gives out.
    for (const itemSchema of [{ $dynamicRef: '#item' }, { type: 'object', not: { $ref: '#' } }]) {
      const endless = await client.post('/v1/datasets/import', {
        eval: { ...evalDefinition, data_source_config: { type: 'custom', item_schema: itemSchema } },
        items: lines,
      });
      assertError(endless, 400, 'invalid_import', 'eval.data_source_config.item_schema');
      assert.match(endless.body.error.message, /refers to itself without end/);
    }
    assert.equal((await client.get('/v1/datasets?limit=100')).body.data.length, before, 'a refused import makes no dataset');

    // The path is not a dataset's id: it offers POST alone.
    const read = await client.get('/v1/datasets/import');
    assert.deepEqual([read.status, read.headers.get('allow')], [405, 'POST']);
    const options = await fetch(`${stack.api.url}/v1/datasets/import`, {
      method: 'OPTIONS',
      headers: { authorization: `Bearer ${client.key}` },
    });
    assert.deepEqual([options.status, options.headers.get('allow')], [200, 'POST']);
  });
});
