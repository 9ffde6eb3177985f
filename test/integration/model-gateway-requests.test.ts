import assert from 'node:assert/strict';
import { pino } from 'pino';
import { ModelCatalogue } from '../../models/catalogue.js';
import { ModelGateway, type ModelCallRequest } from '../../models/gateway.js';
import type { ChatMessage, ToolSpec } from '../../models/messages.js';
import { startAnthropicServer } from '../support/model-servers/anthropic.js';
import { startOpenAiServer } from '../support/model-servers/openai.js';
import type { ModelServer } from '../support/model-servers/scripted-server.js';

const log = pino({ level: 'silent' });
const png = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

/** A conversation with everything a provider must translate: system, an image, two tool calls and their results. */
const conversation: ChatMessage[] = [
  { role: 'system', content: 'You are terse.' },
  {
    role: 'user',
    content: [
      { type: 'text', text: 'What is in the picture, and the weather there?' },
      { type: 'image', file_id: 'file_abc', media_type: 'image/png' },
    ],
  },
  {
    role: 'assistant',
    content: '',
    tool_calls: [
      { id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}' },
      { id: 'call_2', name: 'get_time', arguments: '{"zone":"Europe/Paris"}' },
    ],
  },
  { role: 'tool', tool_call_id: 'call_1', name: 'get_weather', content: '18°C, cloudy' },
  { role: 'tool', tool_call_id: 'call_2', name: 'get_time', content: 'unknown zone', is_error: true },
];
const tools: ToolSpec[] = [
  {
    name: 'get_weather',
    description: 'The weather in a city.',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

async function callWith(
  server: ModelServer,
  env: NodeJS.ProcessEnv,
  modelId: string,
  overrides: Partial<ModelCallRequest> = {},
): Promise<Record<string, unknown>> {
  const catalogue = await ModelCatalogue.load(env, log);
  server.enqueue({ text: ['ok'] });
  const loaded: string[] = [];
  await new ModelGateway(catalogue, env).call({
    model: catalogue.find(modelId)!,
    messages: conversation,
    tools,
    settings: {},
    signal: new AbortController().signal,
    loadImage: async (fileId) => {
      loaded.push(fileId);
      return { data: png, media_type: 'image/png' };
    },
    onTextDelta: () => {},
    ...overrides,
  });
  assert.deepEqual(loaded, ['file_abc']);
  return server.requests.at(-1)!;
}

describe('what the model gateway sends to OpenAI', () => {
  let server: ModelServer;
  before(async () => {
    server = await startOpenAiServer();
  });
  after(() => server.stop());

  it('sends the conversation as chat messages: system first, the image as a base64 data URL, tool calls and their results, the tools as functions, streamed with usage', async () => {
    const body = await callWith(server, { OPENAI_API_KEY: 'sk-test', OPENAI_BASE_URL: server.url }, 'gpt-4o-mini', {
      settings: { temperature: 0.2, top_p: 0.9, max_output_tokens: 300 },
    });
    assert.equal(body.model, 'gpt-4o-mini');
    assert.equal(body.stream, true);
    assert.deepEqual(body.stream_options, { include_usage: true });
    assert.equal(body.temperature, 0.2);
    assert.equal(body.top_p, 0.9);
    assert.equal(body.max_completion_tokens, 300);
    assert.deepEqual(body.messages, [
      { role: 'system', content: 'You are terse.' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in the picture, and the weather there?' },
          { type: 'image_url', image_url: { url: `data:image/png;base64,${png.toString('base64')}` } },
        ],
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
          { id: 'call_2', type: 'function', function: { name: 'get_time', arguments: '{"zone":"Europe/Paris"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '18°C, cloudy' },
      { role: 'tool', tool_call_id: 'call_2', content: 'unknown zone' },
    ]);
    assert.deepEqual(body.tools, [
      { type: 'function', function: { name: 'get_weather', description: 'The weather in a city.', parameters: tools[0]!.parameters } },
    ]);
  });

  it('leaves out the settings and tools a call does not have', async () => {
    const body = await callWith(server, { OPENAI_BASE_URL: server.url }, 'gpt-4o-mini', { tools: [] });
    for (const field of ['tools', 'temperature', 'top_p', 'max_completion_tokens']) assert.equal(field in body, false, field);
  });
});

describe('what the model gateway sends to Anthropic', () => {
  let server: ModelServer;
  before(async () => {
    server = await startAnthropicServer();
  });
  after(() => server.stop());

  it('sends system apart, the image as a base64 source, tool calls as tool_use blocks, and consecutive tool results merged into one user turn', async () => {
    const body = await callWith(server, { ANTHROPIC_BASE_URL: server.url }, 'claude-haiku-4-5', {
      settings: { temperature: 0.2, top_p: 0.9, max_output_tokens: 300 },
    });
    assert.equal(body.model, 'claude-haiku-4-5');
    assert.equal(body.stream, true);
    assert.equal(body.system, 'You are terse.');
    assert.equal(body.max_tokens, 300);
    assert.equal(body.temperature, 0.2);
    assert.equal(body.top_p, 0.9);
    assert.deepEqual(body.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'What is in the picture, and the weather there?' },
          { type: 'image', source: { type: 'base64', media_type: 'image/png', data: png.toString('base64') } },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          { type: 'tool_use', id: 'call_2', name: 'get_time', input: { zone: 'Europe/Paris' } },
        ],
      },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'call_1', content: '18°C, cloudy' },
          { type: 'tool_result', tool_use_id: 'call_2', content: 'unknown zone', is_error: true },
        ],
      },
    ]);
    assert.deepEqual(body.tools, [{ name: 'get_weather', description: 'The weather in a city.', input_schema: tools[0]!.parameters }]);
  });

  it('asks for 4,096 output tokens when the call sets no limit (Anthropic requires one), and sends no sampling setting it was not given', async () => {
    const body = await callWith(server, { ANTHROPIC_API_KEY: 'sk-ant-test', ANTHROPIC_BASE_URL: server.url }, 'claude-haiku-4-5');
    assert.equal(body.max_tokens, 4096);
    for (const field of ['temperature', 'top_p']) assert.equal(field in body, false, field);
  });
});
