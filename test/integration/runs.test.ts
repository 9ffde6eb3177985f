import assert from 'node:assert/strict';
import { SseReader } from '../support/sse.js';
import { eventually } from '../support/eventually.js';
import { optionalTsToMs, tsToMs } from '@temporalio/common/lib/time.js';
import { runWorkflowId } from '../../workflows/runs/client.js';
import { HEARTBEAT_MS } from '../../workflows/heartbeats.js';
import type { ModelServer, ScriptedReply } from '../support/model-servers/scripted-server.js';
import { createAgent, runSatisfying, startRunsStack, type RunsStack } from '../support/runs.js';

/** Waits until the model server has received a request beyond the `seen` it had. */
function untilRequested(server: ModelServer, seen: number): Promise<void> {
  return eventually(() => assert.ok(server.requests.length > seen, 'no model request yet'), { message: 'the model was not called' });
}

describe('runs', function () {
  this.timeout(120_000);
  let stack: RunsStack;

  before(async () => {
    stack = await startRunsStack('runs');
  });

  after(async () => {
    await stack?.stop();
  });

  it('runs an agent to completion and answers 200 with the output, usage, and cost at the recorded price', async () => {
    const agent = await createAgent(stack.tenant.admin, { instructions: 'You are terse.' });
    stack.openai.enqueue({ text: ['Paris', ' is the capital.'], usage: { input: 1200, output: 300, cached: 200 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, {
      input: 'What is the capital of France?',
      metadata: { team: 'geo' },
    });
    assert.equal(run.status, 200, JSON.stringify(run.body));
    assert.equal(run.body.status, 'completed');
    assert.equal(run.body.output.text, 'Paris is the capital.');
    assert.deepEqual(run.body.usage, { input_tokens: 1200, output_tokens: 300, cached_tokens: 200 });
    // gpt-4.1-mini: $0.40 in, $0.10 cached in, $1.60 out per million: (1000 × 0.40 + 200 × 0.10 + 300 × 1.60) / 10⁶.
    assert.equal(run.body.cost, '0.0009');
    assert.equal(run.body.steps.length, 1);
    assert.equal(run.body.steps[0].type, 'model_call');
    assert.equal(run.body.steps[0].price_version, '2025-04-14');
    assert.equal(run.body.resolved_model, 'gpt-4.1-mini');
    assert.equal(run.body.agent_version, 1);
    const sent = stack.openai.requests.at(-1) as { model: string; messages: { role: string; content: unknown }[] };
    assert.equal(sent.model, 'gpt-4.1-mini');
    assert.deepEqual(
      sent.messages.slice(0, 2).map((m) => [m.role, m.content]),
      [
        ['system', 'You are terse.'],
        ['user', 'What is the capital of France?'],
      ],
    );
    const ledger = await stack.api.services.db.query(
      `SELECT u.source, u.step_index, u.agent_id, u.network_id, u.api_key_id IS NOT NULL AND u.api_key_id = r.api_key_id AS by_the_runs_key,
         u.model, u.price_version, u.cost::text, u.metadata
       FROM usage_records u JOIN runs r ON r.id = u.run_id WHERE u.run_id = $1`,
      [run.body.id],
    );
    assert.deepEqual(ledger.rows, [
      {
        source: 'run',
        step_index: 0,
        agent_id: agent.id,
        network_id: null,
        by_the_runs_key: true,
        model: 'gpt-4.1-mini',
        price_version: '2025-04-14',
        cost: '0.0009',
        metadata: { team: 'geo' },
      },
    ]);
    const history = await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?metadata[team]=geo`);
    assert.deepEqual(
      history.body.data.map((r: { id: string }) => r.id),
      [run.body.id],
    );
    assert.equal((await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs?metadata[team]=other`)).body.data.length, 0);
    // Its workflow is dispatched fairly among projects: the project is its fairness key.
    const workflow = await stack.api.services.temporal.workflow.getHandle(runWorkflowId(run.body.id)).describe();
    assert.equal(workflow.priority?.fairnessKey, stack.tenant.projectId);
  });

  it('streams the run as Server-Sent Events whose deltas add up to the output, and replays them after any event', async () => {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Once ', 'upon ', 'a time.'], usage: { input: 10, output: 5 } });
    const stream = await SseReader.open(`${stack.api.url}/v1/agents/${agent.id}/run`, {
      method: 'POST',
      headers: { authorization: `Bearer ${stack.tenant.admin.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: 'Tell a story.', stream: true }),
    });
    assert.equal(stream.response.status, 200);
    assert.match(stream.response.headers.get('content-type') ?? '', /^text\/event-stream/);
    await stream.done;
    const types = stream.events.map((e) => e.event);
    assert.deepEqual(
      types.filter((t) => t !== 'output_text.delta'),
      ['run.created', 'run.in_progress', 'step.started', 'step.completed', 'run.completed'],
    );
    const text = stream.events
      .filter((e) => e.event === 'output_text.delta')
      .map((e) => e.data.delta)
      .join('');
    assert.equal(text, 'Once upon a time.');
    const ids = stream.events.map((e) => Number(e.id));
    assert.deepEqual(
      ids,
      ids.map((_, i) => i + 1),
    );

    const runId = stream.events[0]!.data.run_id;
    const resumed = await SseReader.open(`${stack.api.url}/v1/runs/${runId}/events`, {
      headers: { authorization: `Bearer ${stack.tenant.admin.key}`, 'last-event-id': '3' },
    });
    await resumed.done;
    assert.deepEqual(
      resumed.events.map((e) => Number(e.id)),
      ids.slice(3),
    );
  });

  it("names each event's type in its data as in its `event` field, and a step's kind as `step_type`", async () => {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Hello.'], usage: { input: 2, output: 1 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Greet me.' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    const stream = await SseReader.open(`${stack.api.url}/v1/runs/${run.body.id}/events`, {
      headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
    });
    await stream.done;
    assert.deepEqual(
      stream.events.map((e) => e.data.type),
      stream.events.map((e) => e.event),
    );
    const steps = stream.events.filter((e) => e.event.startsWith('step.'));
    assert.deepEqual(
      steps.map((e) => [e.event, e.data.step_type]),
      [
        ['step.started', 'model_call'],
        ['step.completed', 'model_call'],
      ],
    );
  });

  it('resumes after Last-Event-ID when the URL also carries `after`, as an EventSource reconnecting to that URL does', async () => {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['One ', 'two.'], usage: { input: 2, output: 2 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Count.' });
    const all = await SseReader.open(`${stack.api.url}/v1/runs/${run.body.id}/events`, {
      headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
    });
    await all.done;
    const resumed = await SseReader.open(`${stack.api.url}/v1/runs/${run.body.id}/events?after=1`, {
      headers: { authorization: `Bearer ${stack.tenant.admin.key}`, 'last-event-id': '3' },
    });
    assert.equal(resumed.response.status, 200);
    await resumed.done;
    assert.deepEqual(
      resumed.events.map((e) => e.id),
      all.events.slice(3).map((e) => e.id),
    );
  });

  it('ends the stream of a finished run at once when Last-Event-ID is its last event or beyond', async () => {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Done.'], usage: { input: 1, output: 1 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Finish.' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    const all = await SseReader.open(`${stack.api.url}/v1/runs/${run.body.id}/events`, {
      headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
    });
    await all.done;
    const last = Number(all.events.at(-1)!.id);
    for (const lastEventId of [last, last + 5]) {
      const giveUp = new AbortController();
      const resumed = await SseReader.open(`${stack.api.url}/v1/runs/${run.body.id}/events`, {
        headers: { authorization: `Bearer ${stack.tenant.admin.key}`, 'last-event-id': String(lastEventId) },
        signal: giveUp.signal,
      });
      try {
        await eventually(() => assert.ok(resumed.ended, 'the stream is still open'), {
          timeoutMs: 10_000,
          message: `the stream after ${lastEventId} did not end`,
        });
        assert.deepEqual(resumed.events, []);
      } finally {
        giveUp.abort();
      }
    }
  });

  it('calls an HTTP tool with the arguments the model chose and gives the model its result', async () => {
    const { startToolServer } = await import('../support/http-tool-server.js');
    const tools = await startToolServer();
    try {
      const agent = await createAgent(stack.tenant.admin, {
        tools: [
          {
            type: 'http',
            name: 'weather',
            url: `${tools.url}/echo`,
            method: 'POST',
            parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
          },
        ],
      });
      stack.openai.enqueue({ tool_calls: [{ name: 'weather', arguments: '{"city":"Oslo"}' }], usage: { input: 50, output: 10 } });
      stack.openai.enqueue({ text: ['It is sunny in Oslo.'], usage: { input: 80, output: 8 } });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Weather in Oslo?' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      assert.deepEqual(
        run.body.steps.map((s: { type: string }) => s.type),
        ['model_call', 'tool_call', 'model_call'],
      );
      assert.equal(run.body.steps[1].tool_call.name, 'weather');
      assert.match(run.body.steps[1].output, /Oslo/);
      assert.equal(run.body.output.text, 'It is sunny in Oslo.');
      assert.deepEqual(run.body.usage, { input_tokens: 130, output_tokens: 18, cached_tokens: 0 });
      const second = stack.openai.requests.at(-1) as {
        messages: { role: string; content: string; tool_call_id?: string }[];
        tools: { function: { name: string } }[];
      };
      assert.equal(second.tools[0]!.function.name, 'weather');
      const toolMessage = second.messages.find((m) => m.role === 'tool');
      assert.match(toolMessage!.content, /Oslo/);
    } finally {
      await tools.close();
    }
  });

  it('keeps a tool answer, a model answer and arguments holding NUL characters without them, calling each once', async () => {
    const { startToolServer } = await import('../support/http-tool-server.js');
    const tools = await startToolServer();
    try {
      const agent = await createAgent(stack.tenant.admin, {
        tools: [
          { type: 'http', name: 'nul', url: `${tools.url}/nul`, method: 'GET' },
          { type: 'http', name: 'weather', url: `${tools.url}/echo`, method: 'POST' },
        ],
      });
      const calls = stack.openai.requests.length;
      stack.openai.enqueue({
        tool_calls: [
          { name: 'nul', arguments: '{}' },
          // A JSON escape of NUL, which parsing turns into the character.
          { name: 'weather', arguments: '{"city": "Os\\u0000lo"}' },
        ],
      });
      stack.openai.enqueue({ text: ['It said before', '\u0000', 'after.'] });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Call them.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      const [, nul, weather] = run.body.steps;
      assert.equal(nul.output, 'beforeafter');
      assert.equal(weather.tool_call.arguments, '{"city":"Oslo"}');
      assert.equal(JSON.parse(weather.output).body, '{"city":"Oslo"}', 'the tool was sent the arguments without NUL');
      assert.equal(run.body.output.text, 'It said beforeafter.');
      assert.deepEqual(tools.received.sort(), ['/echo', '/nul'], 'each tool was called once');
      assert.equal(stack.openai.requests.length - calls, 2, 'the model was called twice, once for each step');
      const stream = await SseReader.open(`${stack.api.url}/v1/runs/${run.body.id}/events`, {
        headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
      });
      await stream.done;
      const deltas = stream.events.filter((e) => e.event === 'output_text.delta').map((e) => e.data.delta);
      assert.equal(deltas.join(''), 'It said beforeafter.');
    } finally {
      await tools.close();
    }
  });

  it('keeps a model answer and arguments holding half of a surrogate pair with U+FFFD in its place, calling each once', async () => {
    const { startToolServer } = await import('../support/http-tool-server.js');
    const tools = await startToolServer();
    try {
      const agent = await createAgent(stack.tenant.admin, {
        tools: [{ type: 'http', name: 'weather', url: `${tools.url}/echo`, method: 'POST' }],
      });
      const calls = stack.openai.requests.length;
      // JSON escapes of one half of a pair, which parsing turns into a string jsonb cannot hold.
      stack.openai.enqueue({ tool_calls: [{ name: 'weather', arguments: '{"city": "Os\\ud800lo"}' }] });
      // An emoji's two halves in two deltas, as a server cutting its text by UTF-16 units streams it, then a lone half.
      stack.openai.enqueue({ text: ['Smile ', '\ud83d', '\ude00', ', half ', '\ud83d', '.'] });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Weather in Oslo?' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      const [, weather] = run.body.steps;
      assert.equal(weather.tool_call.arguments, '{"city":"Os\ufffdlo"}');
      assert.equal(JSON.parse(weather.output).body, '{"city":"Os\ufffdlo"}', 'the tool was sent the arguments as kept');
      assert.equal(run.body.output.text, 'Smile \u{1F600}, half \ufffd.');
      assert.deepEqual(tools.received, ['/echo'], 'the tool was called once');
      assert.equal(stack.openai.requests.length - calls, 2, 'the model was called twice, once for each step');
      const stream = await SseReader.open(`${stack.api.url}/v1/runs/${run.body.id}/events`, {
        headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
      });
      await stream.done;
      const deltas = stream.events.filter((e) => e.event === 'output_text.delta').map((e) => e.data.delta);
      assert.equal(deltas.join(''), 'Smile \u{1F600}, half \ufffd.');
    } finally {
      await tools.close();
    }
  });

  /**
   * A run of an agent with two echo tools whose model calls both at once, streamed as `streaming` says, then
   * answers "Sunny, at noon.".
   */
  async function weatherAndTimeRun(streaming: Pick<ScriptedReply, 'tool_call_deltas' | 'thought_signatures'>) {
    const { startToolServer } = await import('../support/http-tool-server.js');
    const tools = await startToolServer();
    try {
      const agent = await createAgent(stack.tenant.admin, {
        tools: [
          { type: 'http', name: 'weather', url: `${tools.url}/echo`, method: 'POST' },
          { type: 'http', name: 'time', url: `${tools.url}/echo`, method: 'GET' },
        ],
      });
      stack.openai.enqueue({
        tool_calls: [
          { name: 'weather', arguments: '{"city":"Oslo"}' },
          { name: 'time', arguments: '{"zone":"Europe/Oslo"}' },
        ],
        ...streaming,
      });
      stack.openai.enqueue({ text: ['Sunny, at noon.'] });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Weather and time in Oslo?' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      return run.body;
    } finally {
      await tools.close();
    }
  }

  for (const deltas of ['gemini', 'index_zero'] as const) {
    it(`calls each tool of parallel calls streamed as ${deltas === 'gemini' ? "Gemini's OpenAI-compatible endpoint streams them, without an index" : 'proxies stream them, every call numbered 0'}`, async () => {
      const run = await weatherAndTimeRun({ tool_call_deltas: deltas });
      const calls = run.steps.filter((s: { type: string }) => s.type === 'tool_call');
      assert.deepEqual(
        calls.map((s: { tool_call: { name: string; arguments: string } }) => [s.tool_call.name, s.tool_call.arguments]),
        [
          ['weather', '{"city":"Oslo"}'],
          ['time', '{"zone":"Europe/Oslo"}'],
        ],
      );
      assert.deepEqual(JSON.parse(calls[1].output).query, { zone: ['Europe/Oslo'] });
      assert.equal(run.output.text, 'Sunny, at noon.');
    });
  }

  it("sends Gemini's thought signature back with each tool call it came with, and shows it nowhere", async () => {
    const run = await weatherAndTimeRun({ tool_call_deltas: 'gemini', thought_signatures: true });
    type SentCall = { function: { name: string }; extra_content?: unknown };
    const second = stack.openai.requests.at(-1) as { messages: { role: string; tool_calls?: SentCall[] }[] };
    const asked = second.messages.find((m) => m.role === 'assistant' && m.tool_calls);
    assert.deepEqual(
      asked?.tool_calls?.map((call) => [call.function.name, call.extra_content]),
      [
        ['weather', { google: { thought_signature: 'signature-0' } }],
        ['time', { google: { thought_signature: 'signature-1' } }],
      ],
    );
    assert.doesNotMatch(JSON.stringify(run), /signature-|extra/, 'the run shows no signature');
  });

  it('sends back a thought signature holding what PostgreSQL cannot as it could be kept, calling the model once for each step', async () => {
    const calls = stack.openai.requests.length;
    const run = await weatherAndTimeRun({ tool_call_deltas: 'gemini', thought_signatures: ['sig\u0000-0', 'sig-1 \ud800'] });
    assert.deepEqual(
      run.steps.map((s: { type: string; tool_call?: { name: string } }) => s.tool_call?.name ?? s.type),
      ['model_call', 'weather', 'time', 'model_call'],
    );
    assert.equal(stack.openai.requests.length - calls, 2);
    type SentCall = { function: { name: string }; extra_content?: unknown };
    const second = stack.openai.requests.at(-1) as { messages: { role: string; tool_calls?: SentCall[] }[] };
    assert.deepEqual(
      second.messages.find((m) => m.role === 'assistant' && m.tool_calls)?.tool_calls?.map((call) => call.extra_content),
      [{ google: { thought_signature: 'sig-0' } }, { google: { thought_signature: 'sig-1 \ufffd' } }],
    );
  });

  it('records what a server reporting usage loosely reported, as whole counts from 0, calling the model once', async () => {
    const agent = await createAgent(stack.tenant.admin);
    const reported: [Record<string, unknown>, { input_tokens: number; output_tokens: number; cached_tokens: number }][] = [
      // No completion_tokens, as some OpenAI-compatible servers send it.
      [
        { prompt_tokens: 40, total_tokens: 40 },
        { input_tokens: 40, output_tokens: 0, cached_tokens: 0 },
      ],
      [
        { prompt_tokens: null, completion_tokens: 7.6 },
        { input_tokens: 0, output_tokens: 8, cached_tokens: 0 },
      ],
      [
        { prompt_tokens: -5, completion_tokens: '9' },
        { input_tokens: 0, output_tokens: 0, cached_tokens: 0 },
      ],
      // More cached tokens than input ones would book a negative cost.
      [
        { prompt_tokens: 10, completion_tokens: 2, prompt_tokens_details: { cached_tokens: 50 } },
        { input_tokens: 10, output_tokens: 2, cached_tokens: 10 },
      ],
    ];
    for (const [raw_usage, usage] of reported) {
      const calls = stack.openai.requests.length;
      stack.openai.enqueue({ text: ['Counted.'], raw_usage });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Count.' });
      assert.equal(run.body.status, 'completed', `${JSON.stringify(raw_usage)}: ${JSON.stringify(run.body.error)}`);
      assert.deepEqual(run.body.usage, usage, JSON.stringify(raw_usage));
      assert.ok(!run.body.cost.startsWith('-'), `cost ${run.body.cost}`);
      assert.equal(stack.openai.requests.length - calls, 1, 'the model was called once');
    }
  });

  it("stores a tool's result once, on its step, and its event stream still carries it", async () => {
    const { startToolServer } = await import('../support/http-tool-server.js');
    const tools = await startToolServer();
    try {
      const agent = await createAgent(stack.tenant.admin, {
        tools: [{ type: 'http', name: 'weather', url: `${tools.url}/echo`, method: 'POST' }],
      });
      stack.openai.enqueue({ tool_calls: [{ name: 'weather', arguments: '{"city":"Bergen"}' }] });
      stack.openai.enqueue({ text: ['Rain in Bergen.'] });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Weather in Bergen?' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      const stream = await SseReader.open(`${stack.api.url}/v1/runs/${run.body.id}/events`, {
        headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
      });
      await stream.done;
      const toolDone = stream.events.find((e) => e.event === 'step.completed' && e.data.step_type === 'tool_call');
      assert.equal(toolDone?.data.output, run.body.steps[1].output);
      assert.match(String(toolDone?.data.output), /Bergen/);
      const { rows } = await stack.api.services.db.query(
        `SELECT count(*)::int AS copies FROM run_events WHERE run_id = $1 AND data ? 'output'`,
        [run.body.id],
      );
      assert.equal(rows[0]?.copies, 0, 'the event log holds a second copy of the tool result');
    } finally {
      await tools.close();
    }
  });

  it('answers a tool call whose argument a pattern with nested quantifiers cannot match with an error result, and the process keeps answering', async () => {
    const { startToolServer } = await import('../support/http-tool-server.js');
    const tools = await startToolServer();
    try {
      const agent = await createAgent(stack.tenant.admin, {
        tools: [
          {
            type: 'http',
            name: 'probe',
            url: `${tools.url}/echo`,
            parameters: { type: 'object', properties: { q: { type: 'string', pattern: '^(a+)+$' } } },
          },
        ],
      });
      // A backtracking engine would take hours over this argument, holding the worker (and here the API) all along.
      stack.openai.enqueue({ tool_calls: [{ name: 'probe', arguments: JSON.stringify({ q: `${'a'.repeat(40)}!` }) }] });
      stack.openai.enqueue({ text: ['The probe refused it.'] });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Probe it.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      assert.equal(run.body.steps[1].is_error, true);
      assert.match(run.body.steps[1].output, /do not match the tool's parameters: arguments\/q must match pattern/);
      assert.deepEqual(tools.received, [], 'the tool was not called');
      assert.equal((await fetch(`${stack.api.url}/healthz`)).status, 200);
    } finally {
      await tools.close();
    }
  });

  it('fails a run whose MCP server lists more tools than a run may offer, with tools_too_large', async () => {
    const { startMcpServer } = await import('../support/mcp-server.js');
    const mcp = await startMcpServer({ extraTools: { count: 200 } });
    try {
      const agent = await createAgent(stack.tenant.admin, { tools: [{ type: 'mcp', server_label: 'big', server_url: mcp.url }] });
      const requests = stack.openai.requests.length;
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Use every tool.' });
      assert.equal(run.body.status, 'failed');
      assert.deepEqual(run.body.error, {
        code: 'tools_too_large',
        message: 'The MCP server big lists more than 128 tools; name the ones to offer in allowed_tools.',
      });
      assert.equal(stack.openai.requests.length, requests, 'the model was not called');
    } finally {
      await mcp.close();
    }
  });

  it('offers the tools an MCP server lists with NUL or half a surrogate pair in their descriptions as they can be kept', async () => {
    const { startMcpServer } = await import('../support/mcp-server.js');
    const mcp = await startMcpServer({
      extraTools: { count: 1, description: 'Finds\u0000 things \ud83d', argumentDescription: 'What\u0000 \ude00' },
    });
    try {
      const agent = await createAgent(stack.tenant.admin, {
        tools: [{ type: 'mcp', server_label: 'odd', server_url: mcp.url, allowed_tools: ['extra_0'] }],
      });
      stack.openai.enqueue({ text: ['Nothing to find.'] });
      const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Find it.' });
      assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
      const offered = (stack.openai.requests.at(-1) as { tools: { function: { description: string; parameters: unknown } }[] }).tools;
      assert.equal(offered[0]!.function.description, 'Finds things \ufffd');
      assert.equal(
        (offered[0]!.function.parameters as { properties: { q: { description: string } } }).properties.q.description,
        'What \ufffd',
      );
    } finally {
      await mcp.close();
    }
  });

  /** A run whose model call streams some text and then hangs, and its event stream read up to that text. */
  async function runStreamingThenHanging() {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Thinking'], hang: true });
    const started = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Think forever.', wait: false });
    assert.equal(started.status, 202);
    const stream = await SseReader.open(`${stack.api.url}/v1/runs/${started.body.id}/events`, {
      headers: { authorization: `Bearer ${stack.tenant.admin.key}` },
    });
    await stream.next((e) => e.event === 'output_text.delta');
    return { started, stream };
  }

  it('cancels a run mid-stream: the model request is aborted and the run ends cancelled; cancelling again is 409', async () => {
    const { started, stream } = await runStreamingThenHanging();
    const abortedBefore = stack.openai.abortedCount;
    const cancelled = await stack.tenant.admin.post(`/v1/runs/${started.body.id}/cancel`, {});
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    assert.equal(cancelled.body.status, 'cancelled');
    assert.equal(cancelled.body.steps[0].status, 'cancelled');
    await eventually(() => assert.ok(stack.openai.abortedCount > abortedBefore), { message: 'the model request was not aborted' });
    await stream.next((e) => e.event === 'run.cancelled');
    const again = await stack.tenant.admin.post(`/v1/runs/${started.body.id}/cancel`, {});
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'run_finished');
  });

  it("sends Temporal no heartbeat in a model call's first two seconds, however soon its text streams, and then one every two", async () => {
    const { started, stream } = await runStreamingThenHanging();
    const workflow = stack.api.services.temporal.workflow.getHandle(runWorkflowId(started.body.id));
    // When the call started and when Temporal last had a heartbeat of it (undefined: none yet), by Temporal's clock.
    const call = async () => {
      const pending = (await workflow.describe()).raw.pendingActivities ?? [];
      assert.equal(pending.length, 1, 'the model call is not under way');
      return { startedMs: tsToMs(pending[0]!.lastStartedTime), beatMs: optionalTsToMs(pending[0]!.lastHeartbeatTime) };
    };
    // Its text has streamed; a heartbeat, if any yet, is the one a second in.
    const streaming = await call();
    if (streaming.beatMs !== undefined)
      assert.ok(streaming.beatMs - streaming.startedMs >= HEARTBEAT_MS - 100, 'a heartbeat went out with the text');
    // A longer call still beats, so that a cancellation reaches it.
    await eventually(async () => assert.notEqual((await call()).beatMs, undefined, 'no heartbeat yet'), {
      message: 'the call sent no heartbeat',
    });
    const cancelled = await stack.tenant.admin.post(`/v1/runs/${started.body.id}/cancel`, {});
    assert.equal(cancelled.status, 200, JSON.stringify(cancelled.body));
    await stream.next((e) => e.event === 'run.cancelled');
  });

  it('creates one run for a repeated Idempotency-Key and answers it again', async () => {
    const agent = await createAgent(stack.tenant.admin);
    stack.openai.enqueue({ text: ['Once.'], usage: { input: 3, output: 1 } });
    const body = { input: 'Say once.' };
    const first = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, body, { 'Idempotency-Key': 'run-once' });
    const again = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, body, { 'Idempotency-Key': 'run-once' });
    assert.equal(again.body.id, first.body.id);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const runs = await stack.tenant.admin.get(`/v1/agents/${agent.id}/runs`);
    assert.equal(runs.body.data.length, 1);
    const conflict = await stack.tenant.admin.post(
      `/v1/agents/${agent.id}/run`,
      { input: 'Something else.' },
      { 'Idempotency-Key': 'run-once' },
    );
    assert.equal(conflict.status, 409);
  });

  it('fails a run at once, saying which variable to set, when no provider is configured', async () => {
    const { startTestApi, newTenant } = await import('../support/api.js');
    const { isolatedNamespace } = await import('../support/services.js');
    const api = await startTestApi({ namespace: await isolatedNamespace('runs-unconfigured'), modelEnv: {} });
    try {
      const tenant = await newTenant(api, 'bare');
      const named = await createAgent(tenant.admin, { model: 'claude-haiku-4-5' });
      const run = await tenant.admin.post(`/v1/agents/${named.id}/run`, { input: 'Hello?' });
      assert.equal(run.status, 200);
      assert.equal(run.body.status, 'failed');
      assert.equal(run.body.error.code, 'provider_not_configured');
      assert.match(run.body.error.message, /ANTHROPIC_API_KEY/);
      const routed = await createAgent(tenant.admin, { model: 'auto' });
      const auto = await tenant.admin.post(`/v1/agents/${routed.id}/run`, { input: 'Hello?' });
      assert.equal(auto.body.status, 'failed');
      assert.equal(auto.body.error.code, 'no_model_available');
      assert.match(auto.body.error.message, /OPENAI_API_KEY|OPENAI_BASE_URL/);
    } finally {
      await api.stop();
    }
  });

  it('refuses a second run with 409 agent_busy while one is in progress when concurrency is reject', async () => {
    const agent = await createAgent(stack.tenant.admin, { concurrency: 'reject' });
    stack.openai.enqueue({ text: ['…'], hang: true });
    const seen = stack.openai.requests.length;
    const first = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Long task.', wait: false });
    await untilRequested(stack.openai, seen);
    const second = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Another.' });
    assert.equal(second.status, 409);
    assert.equal(second.body.error.code, 'agent_busy');
    await stack.tenant.admin.post(`/v1/runs/${first.body.id}/cancel`, {});
  });

  it('queues runs one at a time in order when concurrency is enqueue', async () => {
    const agent = await createAgent(stack.tenant.admin, { concurrency: 'enqueue' });
    stack.openai.enqueue({ text: ['first'], hang: true });
    const seen = stack.openai.requests.length;
    const first = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'one', wait: false });
    await untilRequested(stack.openai, seen);
    const second = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'two', wait: false });
    assert.equal(second.body.status, 'queued');
    const requestsBefore = stack.openai.requests.length;
    stack.openai.enqueue({ text: ['second'], usage: { input: 1, output: 1 } });
    await stack.tenant.admin.post(`/v1/runs/${first.body.id}/cancel`, {});
    const done = await runSatisfying(stack.tenant.admin, second.body.id, (r) => r.status === 'completed', 'the queued run did not run');
    assert.equal(done.output.text, 'second');
    assert.equal(stack.openai.requests.length, requestsBefore + 1);
  });

  it('cancels the running run and starts the new one when concurrency is interrupt', async () => {
    const agent = await createAgent(stack.tenant.admin, { concurrency: 'interrupt' });
    stack.openai.enqueue({ text: ['old'], hang: true });
    const seen = stack.openai.requests.length;
    const first = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'old', wait: false });
    await untilRequested(stack.openai, seen);
    stack.openai.enqueue({ text: ['new'], usage: { input: 1, output: 1 } });
    const second = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'new' });
    assert.equal(second.body.status, 'completed');
    await runSatisfying(stack.tenant.admin, first.body.id, (r) => r.status === 'cancelled', 'the first run was not interrupted');
  });

  it('takes runs and changes of one agent that come at once: every run starts, and every change is a version of its own', async () => {
    const agent = await createAgent(stack.tenant.admin);
    for (let i = 0; i < 8; i++) stack.openai.enqueue({ text: ['Done.'] });
    // A request that waited for another's change used to find no agent, and answered 404.
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => [
        stack.tenant.admin.patch(`/v1/agents/${agent.id}`, { description: `change ${i}` }),
        stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: `Go ${i}.`, wait: false }),
      ]).flat(),
    );
    const changes = answers.filter((_, i) => i % 2 === 0);
    const runs = answers.filter((_, i) => i % 2 === 1);
    assert.deepEqual(
      answers.map((a) => a.status),
      Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? 200 : 202)),
      JSON.stringify(answers.map((a) => a.body)),
    );
    assert.deepEqual(
      changes.map((c) => c.body.version).sort((x, y) => x - y),
      [2, 3, 4, 5, 6, 7, 8, 9],
    );
    const last = changes.find((c) => c.body.version === 9)!;
    assert.deepEqual((await stack.tenant.admin.get(`/v1/agents/${agent.id}`)).body, last.body);
    for (const run of runs) {
      const ended = await runSatisfying(
        stack.tenant.admin,
        run.body.id,
        (r) => r.status === 'completed',
        `run ${run.body.id} did not complete`,
      );
      assert.ok(ended.agent_version >= 1 && ended.agent_version <= 9, String(ended.agent_version));
    }
  });

  it('finishes a run on the version it started with after the agent is updated and deleted', async () => {
    const agent = await createAgent(stack.tenant.admin, { instructions: 'Version one.' });
    stack.openai.enqueue({ text: ['…'], hang: true });
    const seen = stack.openai.requests.length;
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Go.', wait: false });
    await untilRequested(stack.openai, seen);
    await stack.tenant.admin.patch(`/v1/agents/${agent.id}`, { instructions: 'Version two.' });
    await stack.tenant.admin.delete(`/v1/agents/${agent.id}`);
    // The held call is cancelled; the run's next call reads version one.
    const cancelled = await stack.tenant.admin.post(`/v1/runs/${run.body.id}/cancel`, {});
    assert.equal(cancelled.body.agent_version, 1, JSON.stringify(cancelled.body));
    const fetched = await stack.tenant.admin.get(`/v1/runs/${run.body.id}`);
    assert.equal(fetched.status, 200);
    const sent = stack.openai.requests.at(-1) as { messages: { role: string; content: string }[] };
    assert.equal(sent.messages[0]!.content, 'Version one.');
    assert.equal((await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'again' })).status, 404);
  });

  it('runs on Anthropic through the Messages API', async () => {
    const agent = await createAgent(stack.tenant.admin, { model: 'claude-haiku-4-5', instructions: 'Be kind.' });
    stack.anthropic.enqueue({ text: ['Hello', ' there.'], usage: { input: 100, output: 20, cached: 40 } });
    const run = await stack.tenant.admin.post(`/v1/agents/${agent.id}/run`, { input: 'Hi!' });
    assert.equal(run.body.status, 'completed', JSON.stringify(run.body.error));
    assert.equal(run.body.output.text, 'Hello there.');
    const sent = stack.anthropic.requests.at(-1) as { system: unknown; model: string };
    assert.equal(sent.model, 'claude-haiku-4-5');
    assert.match(JSON.stringify(sent.system), /Be kind\./);
    assert.deepEqual(run.body.usage, { input_tokens: 100, output_tokens: 20, cached_tokens: 40 });
  });
});
