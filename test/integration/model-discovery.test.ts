import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { ModelCatalogue } from '../../models/catalogue.js';
import { routeAuto } from '../../models/routing.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';

/** A logger whose lines the test can read. */
function recordingLog() {
  const lines: { level: number; msg: string; server?: string }[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString('utf8')));
      done();
    },
  });
  return { log: pino({ level: 'info' }, sink), lines };
}

describe('model discovery on an OpenAI-compatible server (OPENAI_BASE_URL)', () => {
  let server: OpenAiServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('adds the models the server lists and the catalogue does not, free and without vision, usable by their names', async () => {
    server = await startOpenAiServer({ models: ['llama3.2:3b', 'qwen2.5:7b', 'gpt-4o-mini'] });
    const { log } = recordingLog();
    const catalogue = await ModelCatalogue.load({ OPENAI_BASE_URL: server.url }, log);

    const llama = catalogue.find('llama3.2:3b');
    assert.equal(llama?.discovered, true);
    assert.equal(llama?.provider, 'openai');
    assert.equal(llama?.provider_model, 'llama3.2:3b');
    assert.deepEqual(llama?.capabilities, { tools: true, vision: false, context_window: 8192, max_output_tokens: 4096 });
    assert.deepEqual(catalogue.priceAt(llama!, new Date()), {
      version: 'local',
      effective_from: '1970-01-01',
      input_per_million: '0',
      output_per_million: '0',
      cached_input_per_million: '0',
    });
    assert.equal(catalogue.find('gpt-4o-mini')?.discovered, undefined, 'a model the catalogue lists is not added again');
    assert.equal(catalogue.list().filter((model) => model.id === 'gpt-4o-mini').length, 1);

    // With only the local server configured, auto picks its (free) models first.
    const route = routeAuto(catalogue, { tools: true, vision: false, input_tokens: 1000 });
    assert.deepEqual(route.candidates.slice(0, 2), ['llama3.2:3b', 'qwen2.5:7b']);
  });

  it('loads without the server when it is down, logs why, and finds its models on refresh() once it answers', async () => {
    const placeholder = await startOpenAiServer();
    const port = Number(new URL(placeholder.url).port);
    await placeholder.stop();

    const { log, lines } = recordingLog();
    const env = { OPENAI_BASE_URL: `http://127.0.0.1:${port}/v1` };
    const catalogue = await ModelCatalogue.load(env, log);
    assert.equal(
      catalogue.list().some((model) => model.discovered),
      false,
    );
    assert.ok(
      lines.some((line) => line.level === 40 && line.server === env.OPENAI_BASE_URL && /could not list the models/.test(line.msg)),
      JSON.stringify(lines),
    );

    server = await startOpenAiServer({ port, models: ['mistral:7b'] });
    await Promise.all([catalogue.refresh(), catalogue.refresh()]);
    assert.equal(catalogue.find('mistral:7b')?.discovered, true);
    assert.equal(catalogue.list().filter((model) => model.id === 'mistral:7b').length, 1);
  });

  it('keeps the models it found when a later refresh() cannot reach the server', async () => {
    server = await startOpenAiServer({ models: ['phi4'] });
    const catalogue = await ModelCatalogue.load({ OPENAI_BASE_URL: server.url }, recordingLog().log);
    await server.stop();
    server = undefined;
    await catalogue.refresh();
    assert.equal(catalogue.find('phi4')?.discovered, true);
  });
});
