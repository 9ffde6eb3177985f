import assert from 'node:assert/strict';
import { pino } from 'pino';
import { ModelCatalogue } from '../../models/catalogue.js';
import { ModelCallError, ModelGateway, type ModelCallRequest } from '../../models/gateway.js';
import { MODEL_RETRY_MAX_INTERVAL_MS } from '../../models/retry-interval.js';
import { askForToolCall } from '../../models/tool-call-question.js';
import { startAnthropicServer } from '../support/model-servers/anthropic.js';
import { startOpenAiServer } from '../support/model-servers/openai.js';
import type { ModelServer } from '../support/model-servers/scripted-server.js';

const log = pino({ level: 'silent' });

const providers = [
  {
    provider: 'openai',
    model: 'gpt-4o-mini',
    start: () => startOpenAiServer(),
    env: (url: string) => ({ OPENAI_BASE_URL: url }),
    overloaded: 503,
  },
  {
    provider: 'anthropic',
    model: 'claude-haiku-4-5',
    start: () => startAnthropicServer(),
    env: (url: string) => ({ ANTHROPIC_BASE_URL: url }),
    overloaded: 529,
  },
] as const;

for (const { provider, model: modelId, start, env, overloaded } of providers) {
  describe(`the model gateway against a loopback ${provider} server`, () => {
    let server: ModelServer;
    let catalogue: ModelCatalogue;
    let gateway: ModelGateway;
    before(async () => {
      server = await start();
      catalogue = await ModelCatalogue.load(env(server.url), log);
      gateway = new ModelGateway(catalogue, env(server.url));
    });
    after(() => server.stop());

    function call(overrides: Partial<ModelCallRequest> = {}) {
      const deltas: string[] = [];
      const request: ModelCallRequest = {
        model: catalogue.find(modelId)!,
        messages: [{ role: 'user', content: 'Say hello.' }],
        tools: [],
        settings: {},
        signal: new AbortController().signal,
        loadImage: () => Promise.reject(new Error('no images in this call')),
        onTextDelta: (text) => deltas.push(text),
        ...overrides,
      };
      return { deltas, result: gateway.call(request) };
    }

    async function failure(promise: Promise<unknown>): Promise<ModelCallError> {
      const err = await promise.then(
        () => assert.fail('the call succeeded'),
        (e: unknown) => e,
      );
      assert.ok(err instanceof ModelCallError, String(err));
      return err;
    }

    it('streams the text to onTextDelta piece by piece and answers the whole message, its usage (cached tokens included) and request id', async () => {
      server.enqueue({ text: ['Hel', 'lo', ', world'], usage: { input: 1200, output: 4, cached: 1024 } });
      const { deltas, result } = call();
      const answer = await result;
      assert.deepEqual(deltas, ['Hel', 'lo', ', world']);
      assert.deepEqual(answer.message, { role: 'assistant', content: 'Hello, world' });
      assert.equal(answer.finish_reason, 'stop');
      assert.deepEqual(answer.usage, { input_tokens: 1200, output_tokens: 4, cached_tokens: 1024 });
      assert.match(answer.provider_request_id ?? '', /^req_/);
    });

    it('assembles parallel tool calls from their streamed pieces, in order, and stops for them', async () => {
      server.enqueue({
        text: ['Checking both.'],
        tool_calls: [
          { name: 'get_weather', arguments: '{"city":"Paris","unit":"celsius"}' },
          { name: 'get_time', arguments: '{"zone":"Europe/Paris"}' },
        ],
      });
      const answer = await call().result;
      assert.equal(answer.finish_reason, 'tool_calls');
      assert.equal(answer.message.content, 'Checking both.');
      const calls = answer.message.tool_calls ?? [];
      assert.deepEqual(
        calls.map(({ name, arguments: args }) => ({ name, args })),
        [
          { name: 'get_weather', args: '{"city":"Paris","unit":"celsius"}' },
          { name: 'get_time', args: '{"zone":"Europe/Paris"}' },
        ],
      );
      assert.ok(calls.every((c) => c.id.length > 0));
      assert.notEqual(calls[0]!.id, calls[1]!.id);
    });

    it('rejects with kind cancelled when the signal aborts mid-stream, and the server sees the client go', async () => {
      server.enqueue({ text: ['Once upon'], hang: true });
      const controller = new AbortController();
      const { result } = call({ signal: controller.signal, onTextDelta: () => controller.abort() });
      const err = await failure(result);
      assert.equal(err.kind, 'cancelled');
      assert.equal(err.retryable, false);
      await server.aborted();
    });

    it('rejects with kind cancelled, without calling the provider, when the signal has already aborted', async () => {
      const before = server.requests.length;
      const err = await failure(call({ signal: AbortSignal.abort() }).result);
      assert.equal(err.kind, 'cancelled');
      assert.equal(server.requests.length, before);
    });

    it('rejects with kind timeout (retryable) when the call outlasts timeoutMs, and ends the request', async () => {
      server.enqueue({ text: ['Thinking'], hang: true });
      const err = await failure(call({ timeoutMs: 300 }).result);
      assert.equal(err.kind, 'timeout');
      assert.equal(err.retryable, true);
      await server.aborted();
    });

    const statuses = [
      { status: 429, retry_after: 7, kind: 'rate_limited', retryable: true, retryAfterMs: 7000 },
      { status: overloaded, kind: 'unavailable', retryable: true },
      { status: 500, kind: 'unavailable', retryable: true },
      { status: 400, kind: 'rejected', retryable: false },
      { status: 404, kind: 'rejected', retryable: false },
      { status: 401, kind: 'unauthorized', retryable: false },
      { status: 403, kind: 'unauthorized', retryable: false },
    ] as const;
    for (const { status, kind, retryable, ...rest } of statuses) {
      const retryAfter = 'retry_after' in rest ? rest.retry_after : undefined;
      it(`classifies ${status}${retryAfter ? ` with Retry-After` : ''} as ${kind} (${retryable ? '' : 'not '}retryable)`, async () => {
        server.enqueue({ status, ...(retryAfter === undefined ? {} : { retry_after: retryAfter }) });
        const err = await failure(call().result);
        assert.equal(err.kind, kind);
        assert.equal(err.retryable, retryable);
        assert.equal(err.status, status);
        assert.equal(err.retryAfterMs, 'retryAfterMs' in rest ? rest.retryAfterMs : undefined);
        assert.match(err.message, new RegExp(`^${provider} answered ${status}`));
      });
    }

    it("waits no longer than the retry policy's longest interval, however long the provider's Retry-After", async () => {
      server.enqueue({ status: 429, retry_after: 999_999_999 });
      const err = await failure(call().result);
      assert.equal(err.kind, 'rate_limited');
      assert.equal(err.retryAfterMs, MODEL_RETRY_MAX_INTERVAL_MS);
      assert.equal(MODEL_RETRY_MAX_INTERVAL_MS, 30_000);
    });

    it('classifies a provider that cannot be reached as unavailable (retryable)', async () => {
      const gone = await start();
      await gone.stop();
      const unreachable = new ModelGateway(catalogue, env(gone.url));
      const err = await failure(
        unreachable.call({
          model: catalogue.find(modelId)!,
          messages: [{ role: 'user', content: 'hi' }],
          tools: [],
          settings: {},
          signal: new AbortController().signal,
          loadImage: () => Promise.reject(new Error('unused')),
          onTextDelta: () => {},
        }),
      );
      assert.equal(err.kind, 'unavailable');
      assert.equal(err.retryable, true);
    });

    it('refuses a model whose provider is not configured with kind not_configured, naming the variable to set, and sends nothing', async () => {
      const unconfigured = await ModelCatalogue.load({}, log);
      const before = server.requests.length;
      const err = await failure(
        new ModelGateway(unconfigured, {}).call({
          model: unconfigured.find(modelId)!,
          messages: [{ role: 'user', content: 'hi' }],
          tools: [],
          settings: {},
          signal: new AbortController().signal,
          loadImage: () => Promise.reject(new Error('unused')),
          onTextDelta: () => {},
        }),
      );
      assert.equal(err.kind, 'not_configured');
      assert.equal(err.retryable, false);
      assert.match(err.message, new RegExp(`set ${provider === 'openai' ? 'OPENAI_API_KEY' : 'ANTHROPIC_API_KEY'}`));
      assert.equal(server.requests.length, before);
    });

    it('asks a question answered by one tool call: its arguments parsed, or why there are none, with the usage and the price in effect', async () => {
      const model = catalogue.find(modelId)!;
      const tool = {
        name: 'record_verdict',
        description: 'Records the grade.',
        parameters: { type: 'object', properties: { score: { type: 'number' } } },
      };
      const ask = () =>
        askForToolCall(
          { catalogue, gateway },
          { model, instructions: 'Grade the answer.', prompt: 'Answer: 4', tool, signal: new AbortController().signal, timeoutMs: 10_000 },
        );
      server.enqueue({ tool_calls: [{ name: 'record_verdict', arguments: '{"score":0.5}' }], usage: { input: 30, output: 5 } });
      const answered = await ask();
      assert.deepEqual(answered.arguments, { called: true, value: { score: 0.5 } });
      assert.deepEqual(answered.usage, { input_tokens: 30, output_tokens: 5, cached_tokens: 0 });
      assert.deepEqual(answered.price, catalogue.priceAt(model, new Date()));
      const sent = server.requests.at(-1)!;
      assert.equal(JSON.stringify(sent).includes('Grade the answer.'), true, 'the instructions were sent');
      assert.equal(sent.temperature, 0);

      server.enqueue({ text: ['It is right.'], usage: { input: 30, output: 5 } });
      assert.deepEqual((await ask()).arguments, { called: false, reason: 'the model did not call record_verdict' });
      server.enqueue({ tool_calls: [{ name: 'record_verdict', arguments: '{"score":' }], usage: { input: 30, output: 5 } });
      assert.deepEqual((await ask()).arguments, { called: false, reason: "the model's record_verdict call is not JSON" });
    });
  });
}
