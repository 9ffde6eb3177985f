import assert from 'node:assert/strict';
import { loadImage } from '@napi-rs/canvas';
import { png, uncompressedPng } from '../support/fixtures.js';
import { startMcpServer } from '../support/mcp-server.js';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';

type SentMessage = { role: string; content: unknown; tool_calls?: unknown[] };
type SentRequest = { model: string; messages: SentMessage[]; tools?: { function: { name: string } }[] };

describe('runs: routing, attachments, MCP tools and conversations', function () {
  this.timeout(120_000);
  let stack: RunsStack;
  const lastRequest = () => stack.openai.requests.at(-1) as unknown as SentRequest;

  before(async () => {
    stack = await startRunsStack('runs-context');
  });

  after(async () => {
    await stack?.stop();
  });

  it('routes auto to the cheapest configured model that fits, and says why', async () => {
    const agent = await createAgent(stack.tenant.admin, { model: 'auto' });
    stack.openai.enqueue({ model: 'local-llama', text: ['Local answer.'], usage: { input: 5, output: 2 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Hi.' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    assert.equal(run.body.model, 'auto');
    assert.equal(run.body.resolved_model, 'local-llama');
    assert.match(run.body.routing_reason, /local-llama/);
    assert.equal(run.body.cost, '0');
  });

  it('falls back to the next candidate when the first keeps answering 503, and records why', async () => {
    const agent = await createAgent(stack.tenant.admin, { model: 'auto' });
    stack.openai.enqueue({ model: 'local-llama', status: 503 });
    stack.openai.enqueue({ model: 'local-llama', status: 503 });
    stack.openai.enqueue({ model: 'gpt-4.1-nano', text: ['Fallback answer.'], usage: { input: 1000, output: 100 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Hi.' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body));
    assert.equal(run.body.resolved_model, 'gpt-4.1-nano');
    assert.match(run.body.routing_reason, /Fell back from local-llama to gpt-4\.1-nano/);
    assert.deepEqual(
      run.body.steps.map((s: { status: string; model: string }) => [s.model, s.status]),
      [
        ['local-llama', 'failed'],
        ['gpt-4.1-nano', 'completed'],
      ],
    );
    // gpt-4.1-nano: $0.10 in and $0.40 out per million.
    assert.equal(run.body.cost, '0.00014');
  });

  it("puts an attachment's extracted text and, for a vision model, its image into the context", async () => {
    const text = await stack.tenant.admin.upload({
      purpose: 'attachment',
      file: { data: Buffer.from('The launch code is 7-4-1.'), filename: 'notes.txt', type: 'text/plain' },
    });
    const image = await stack.tenant.admin.upload({
      purpose: 'attachment',
      file: { data: png(), filename: 'chart.png', type: 'image/png' },
    });
    await stack.tenant.admin.settledFile(text.body.id);
    await stack.tenant.admin.settledFile(image.body.id);
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Noted.'], usage: { input: 10, output: 1 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, {
      input: 'What is in the files?',
      file_ids: [text.body.id, image.body.id],
    });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    assert.deepEqual(run.body.file_ids, [text.body.id, image.body.id]);
    const sent = JSON.stringify(lastRequest().messages);
    assert.match(sent, /The launch code is 7-4-1\./);
    assert.match(sent, /data:image\/png;base64,/);
    assert.ok(
      lastRequest().tools?.some((t) => t.function.name === 'read_file'),
      'read_file is offered with attachments',
    );
  });

  it('answers 403 naming files:read when a key that may run agents but not read files attaches a file, and starts nothing', async () => {
    const file = await stack.tenant.admin.upload({
      purpose: 'attachment',
      file: { data: Buffer.from('payroll'), filename: 'p.txt', type: 'text/plain' },
    });
    const agent = await createAgent(stack.tenant.admin);
    const runner = await stack.tenant.keyWith('agents:run', 'agents:read');
    const refused = await runner.post(`/v1/agents/${agent.id}/run`, { input: 'Repeat the file.', file_ids: [file.body.id], wait: false });
    assert.equal(refused.status, 403, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'missing_scope');
    assert.match(refused.body.error.message, /`files:read`/);
    assert.equal((await runner.get(`/v1/agents/${agent.id}/runs`)).body.data.length, 0);
    // Without attachments the same key runs the agent.
    stack.openai.enqueue({ text: ['ok'], usage: { input: 1, output: 1 } });
    assert.equal((await runner.post(`/v1/agents/${agent.id}/run`, { input: 'Hello.' })).status, 200);
  });

  it('sends a vision model a copy of a large PNG attachment within 2,000 pixels and 3.5 MB, whatever the upload', async () => {
    const large = uncompressedPng(2600, 1400);
    assert.ok(large.length > 3_500_000, `the upload is ${large.length} bytes`);
    const upload = await stack.tenant.admin.upload({
      purpose: 'attachment',
      file: { data: large, filename: 'scan.png', type: 'image/png' },
    });
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    assert.equal((await stack.tenant.admin.settledFile(upload.body.id)).status, 'processed');
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Static.'], usage: { input: 10, output: 1 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'What is this?', file_ids: [upload.body.id] });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));

    const urls = JSON.stringify(lastRequest().messages).match(/data:image\/(?:png|jpeg);base64,[A-Za-z0-9+/=]+/g) ?? [];
    assert.equal(urls.length, 1);
    const sent = Buffer.from(urls[0]!.slice(urls[0]!.indexOf(',') + 1), 'base64');
    assert.ok(sent.length <= 3_500_000, `${sent.length} bytes sent`);
    const image = await loadImage(sent);
    assert.ok(Math.max(image.width, image.height) <= 2000, `${image.width}×${image.height} sent`);
    assert.ok(Math.abs(image.width / image.height - 2600 / 1400) < 0.01, 'the aspect is kept');
  });

  it("answers 404 for another project's files, runs and agents, and for a run of another agent to continue", async () => {
    const other = await (await import('../support/api.js')).newTenant(stack.api, 'runs-context-other');
    const foreign = await other.admin.upload({
      purpose: 'attachment',
      file: { data: Buffer.from('secret'), filename: 's.txt', type: 'text/plain' },
    });
    const agent = await createAgent(stack.tenant.admin);
    const refused = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Read it.', file_ids: [foreign.body.id] });
    assert.equal(refused.status, 404);
    const unknownRun = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, {
      input: 'Go on.',
      previous_run_id: 'run_doesnotexist',
    });
    assert.equal(unknownRun.status, 404);
    // A run of another agent of the project is there to read, so it is not called unknown: it is the wrong one.
    const anotherAgent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['theirs'], usage: { input: 1, output: 1 } });
    const theirs = await stack.tenant.admin.post(`/v1/agents/${anotherAgent.id}/run`, { input: 'Theirs.' });
    const wrongAgent = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Go on.', previous_run_id: theirs.body.id });
    assert.equal(wrongAgent.status, 400, JSON.stringify(wrongAgent.body));
    assert.deepEqual(wrongAgent.body.error, {
      type: 'invalid_request_error',
      code: 'invalid_parameter',
      message: `Run ${theirs.body.id} is a run of agent ${anotherAgent.id}; \`previous_run_id\` continues a run of this agent.`,
      param: 'previous_run_id',
    });

    stack.openai.enqueue({ text: ['mine'], usage: { input: 1, output: 1 } });
    const mine = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Mine.' });
    for (const [method, path] of [
      ['GET', `/v1/runs/${mine.body.id}`],
      ['GET', `/v1/runs/${mine.body.id}/events`],
      ['POST', `/v1/runs/${mine.body.id}/cancel`],
      ['GET', `/v1/agents/${agent.id}/runs`],
      ['POST', `/v1/agents/${agent.id}/run`],
    ] as const) {
      const answer = await other.admin.request(method, path, method === 'POST' ? { json: { input: 'x' } } : {});
      assert.equal(answer.status, 404, `${method} ${path} from another project`);
    }
    const otherAgent = await createAgent(other.admin);
    const borrowed = await other.admin.post(`/v1/agents/${otherAgent.id}/run`, { input: 'Go on.', previous_run_id: mine.body.id });
    assert.equal(borrowed.status, 404);
  });

  it('waits for an attachment still being extracted, then runs with its text', async () => {
    const file = await stack.tenant.admin.upload({
      purpose: 'attachment',
      file: { data: Buffer.from('Late text.'), filename: 'late.txt', type: 'text/plain' },
    });
    await stack.tenant.admin.settledFile(file.body.id);
    // As if its extraction were still under way.
    await stack.api.services.db.query(`UPDATE files SET status = 'processing' WHERE id = $1`, [file.body.id]);
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Read it.'], usage: { input: 1, output: 1 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Read.', file_ids: [file.body.id], wait: false });
    await runSatisfying(stack.tenant.admin, run.body.id, (r) => r.status === 'in_progress', 'the run did not start');
    const seen = stack.openai.requests.length;
    assert.equal(
      (await stack.tenant.admin.get(`/v1/runs/${run.body.id}`)).body.steps.length,
      0,
      'no model call while the attachment is processing',
    );
    await stack.api.services.db.query(`UPDATE files SET status = 'processed' WHERE id = $1`, [file.body.id]);
    const done = await runSatisfying(stack.tenant.admin, run.body.id, (r) => r.status === 'completed', 'the run did not go on');
    assert.equal(done.output.text, 'Read it.');
    assert.equal(stack.openai.requests.length, seen + 1);
    assert.match(JSON.stringify(lastRequest().messages), /Late text\./);
  });

  it('lets the model read an attachment further with read_file', async () => {
    const long = `${'filler '.repeat(4000)}The secret word is marmalade.`;
    const file = await stack.tenant.admin.upload({
      purpose: 'attachment',
      file: { data: Buffer.from(long), filename: 'long.txt', type: 'text/plain' },
    });
    await stack.tenant.admin.settledFile(file.body.id);
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({
      tool_calls: [{ name: 'read_file', arguments: JSON.stringify({ file_id: file.body.id, offset: 27_990 }) }],
      usage: { input: 10, output: 5 },
    });
    stack.openai.enqueue({ text: ['marmalade'], usage: { input: 10, output: 1 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Find the secret word.', file_ids: [file.body.id] });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    assert.match(run.body.steps[1].output, /marmalade/);
  });

  it("calls a remote MCP server's tools and shows a tool's error to the model without failing the run", async () => {
    const mcp = await startMcpServer();
    try {
      const agent = await createAgent(stack.tenant.admin, { tools: [{ type: 'mcp', server_label: 'calc', server_url: mcp.url }] });
      stack.openai.enqueue({
        tool_calls: [
          { name: 'calc__add', arguments: '{"a":2,"b":40}' },
          { name: 'calc__fail', arguments: '{}' },
        ],
        usage: { input: 10, output: 5 },
      });
      stack.openai.enqueue({ text: ['42, and one tool failed.'], usage: { input: 10, output: 5 } });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Add 2 and 40.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      const [add, fail] = run.body.steps.slice(1, 3);
      assert.equal(add.output, '42');
      assert.equal(add.is_error, false);
      assert.equal(fail.is_error, true);
      const toolMessages = lastRequest().messages.filter((m) => m.role === 'tool');
      assert.equal(toolMessages.length, 2);
      assert.ok(lastRequest().tools?.some((t) => t.function.name === 'calc__add'));
    } finally {
      await mcp.close();
    }
  });

  it('continues a conversation from a previous run', async () => {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Nice to meet you, Ada.'], usage: { input: 5, output: 5 } });
    const first = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'My name is Ada.' });
    stack.openai.enqueue({ text: ['Your name is Ada.'], usage: { input: 5, output: 5 } });
    const second = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, {
      input: 'What is my name?',
      previous_run_id: first.body.id,
    });
    assert.equal(second.body.status, 'completed');
    assert.equal(second.body.previous_run_id, first.body.id);
    assert.deepEqual(
      lastRequest()
        .messages.map((m) => [m.role, m.content])
        .slice(1),
      [
        ['user', 'My name is Ada.'],
        ['assistant', 'Nice to meet you, Ada.'],
        ['user', 'What is my name?'],
      ],
    );
  });

  it('continues on Anthropic a run that answered nothing, leaving its empty answer out, and an agent without instructions', async () => {
    const agent = await createAgent(stack.tenant.admin, { instructions: '' });
    stack.openai.enqueue({ text: [''], usage: { input: 5, output: 0 } });
    const silent = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Say nothing.' });
    assert.equal(silent.body.status, 'completed', JSON.stringify(silent.body));
    assert.equal(silent.body.output.text, '');
    // Anthropic refuses a conversation holding an empty message (its double does too), so the run failed.
    stack.anthropic.enqueue({ text: ['Here I am.'] });
    const next = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, {
      input: 'Now speak.',
      previous_run_id: silent.body.id,
      model: 'claude-haiku-4-5',
    });
    assert.equal(next.body.status, 'completed', JSON.stringify(next.body));
    const sent = stack.anthropic.requests.at(-1) as { system?: unknown; messages: { role: string; content: unknown }[] };
    assert.deepEqual(
      sent.messages.map((m) => [m.role, m.content]),
      [
        ['user', 'Say nothing.'],
        ['user', 'Now speak.'],
      ],
    );
    assert.equal(sent.system, undefined);
  });

  it('ends a run that spends its max_steps without a final answer as failed max_steps_reached', async () => {
    const { startToolServer } = await import('../support/http-tool-server.js');
    const tools = await startToolServer();
    try {
      const agent = await createAgent(stack.tenant.admin, {
        max_steps: 3,
        tools: [{ type: 'http', name: 'echo', url: `${tools.url}/echo` }],
      });
      stack.openai.enqueue({ tool_calls: [{ name: 'echo', arguments: '{}' }], usage: { input: 1, output: 1 } });
      stack.openai.enqueue({ tool_calls: [{ name: 'echo', arguments: '{}' }], usage: { input: 1, output: 1 } });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Loop.' });
      assert.equal(run.body.status, 'failed');
      assert.equal(run.body.error.code, 'max_steps_reached');
      assert.equal(run.body.steps.length, 3);
      assert.deepEqual(run.body.usage, { input_tokens: 2, output_tokens: 2, cached_tokens: 0 });
    } finally {
      await tools.close();
    }
  });

  it('filters the run history by status and time, page by page', async () => {
    const agent = await createAgent(stack.tenant.admin);
    const ids: string[] = [];
    for (const word of ['one', 'two', 'three']) {
      stack.openai.enqueue({ text: [word], usage: { input: 1, output: 1 } });
      ids.push((await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: word })).body.id);
    }
    const page1 = await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?limit=2&status=completed`);
    assert.deepEqual(
      page1.body.data.map((r: { id: string }) => r.id),
      [ids[2], ids[1]],
    );
    assert.equal(page1.body.has_more, true);
    const page2 = await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?limit=2&status=completed&after=${page1.body.last_id}`);
    assert.deepEqual(
      page2.body.data.map((r: { id: string }) => r.id),
      [ids[0]],
    );
    assert.equal((await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?status=failed`)).body.data.length, 0);
    const future = Math.floor(Date.now() / 1000) + 3600;
    assert.equal((await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?created_after=${future}`)).body.data.length, 0);
    assert.equal((await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?created_before=${future}`)).body.data.length, 3);
  });

  // Last: the new model is free, so auto would choose it from here on.
  it('accepts and runs a model the local server started serving after start-up', async () => {
    stack.openai.setModels(['local-llama', 'fresh-model']);
    const agent = await createAgent(stack.tenant.admin, { model: 'fresh-model' });
    stack.openai.enqueue({ model: 'fresh-model', text: ['Fresh.'], usage: { input: 2, output: 1 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Hi.' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    assert.equal(run.body.resolved_model, 'fresh-model');
  });
});
