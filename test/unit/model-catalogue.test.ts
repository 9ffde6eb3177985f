import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { ModelCatalogue } from '../../models/catalogue.js';

const log = pino({ level: 'silent' });

const haiku = {
  id: 'house-haiku',
  provider: 'anthropic',
  provider_model: 'claude-haiku-4-5',
  capabilities: { tools: true, vision: true, context_window: 200000, max_output_tokens: 64000 },
  prices: [
    {
      version: 'v1',
      effective_from: '2025-10-15',
      input_per_million: '1.00',
      output_per_million: '5.00',
      cached_input_per_million: '0.10',
    },
    {
      version: 'v2',
      effective_from: '2026-03-01',
      input_per_million: '0.80',
      output_per_million: '4.00',
      cached_input_per_million: '0.08',
    },
  ],
};

describe('the model catalogue', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentplane-models-'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function fileWith(name: string, content: string): Promise<string> {
    const path = join(dir, name);
    await writeFile(path, content);
    return path;
  }

  it('lists the built-in OpenAI and Anthropic models, with capabilities and prices oldest first, when AGENTPLANE_MODELS is unset', async () => {
    const catalogue = await ModelCatalogue.load({}, log);
    const mini = catalogue.find('gpt-4o-mini');
    assert.deepEqual(mini?.capabilities, { tools: true, vision: true, context_window: 128000, max_output_tokens: 16384 });
    assert.equal(mini?.provider, 'openai');
    assert.equal(catalogue.find('claude-haiku-4-5')?.provider, 'anthropic');
    for (const model of catalogue.list()) {
      assert.ok(model.prices.length > 0, model.id);
      const days = model.prices.map((price) => price.effective_from);
      assert.deepEqual(days, [...days].sort(), `${model.id} prices are oldest first`);
      assert.equal(model.discovered, undefined);
    }
    assert.equal(catalogue.find('no-such-model'), undefined);
  });

  it('replaces the built-in catalogue whole with the models of the YAML file AGENTPLANE_MODELS names', async () => {
    const file = await fileWith(
      'models.yaml',
      `models:
  - id: house-haiku
    provider: anthropic
    provider_model: claude-haiku-4-5
    capabilities: { tools: true, vision: true, context_window: 200000, max_output_tokens: 64000 }
    prices:
      - { version: v1, effective_from: "2025-10-15", input_per_million: "1.00", output_per_million: "5.00", cached_input_per_million: "0.10" }
  - id: llama3.2
    provider: openai
    capabilities: { tools: true, vision: false, context_window: 131072, max_output_tokens: 4096 }
    prices:
      - { version: local, effective_from: "2024-01-01", input_per_million: "0", output_per_million: "0", cached_input_per_million: "0" }
`,
    );
    const catalogue = await ModelCatalogue.load({ AGENTPLANE_MODELS: file }, log);
    assert.deepEqual(
      catalogue.list().map((model) => model.id),
      ['house-haiku', 'llama3.2'],
    );
    assert.equal(catalogue.find('llama3.2')?.provider_model, 'llama3.2', 'provider_model defaults to the id');
    assert.equal(catalogue.find('gpt-4o-mini'), undefined);
  });

  it('reads a JSON catalogue file as well', async () => {
    const file = await fileWith('models.json', JSON.stringify({ models: [haiku] }));
    const catalogue = await ModelCatalogue.load({ AGENTPLANE_MODELS: file }, log);
    assert.deepEqual(catalogue.find('house-haiku'), haiku);
  });

  const mistakes: { what: string; models: unknown; says: RegExp }[] = [
    {
      what: 'a price given as a number',
      models: [{ ...haiku, prices: [{ ...haiku.prices[0], input_per_million: 1 }] }],
      says: /models\[0\]\.prices\[0\]\.input_per_million must be a decimal number of US dollars/,
    },
    {
      what: 'a missing price field',
      models: [{ ...haiku, prices: [{ ...haiku.prices[0], cached_input_per_million: undefined }] }],
      says: /models\[0\]\.prices\[0\]\.cached_input_per_million is missing/,
    },
    {
      what: 'an unknown provider',
      models: [{ ...haiku, provider: 'gemini' }],
      says: /models\[0\]\.provider must be one of openai, anthropic/,
    },
    {
      what: 'a misspelt field',
      models: [{ ...haiku, capabilites: haiku.capabilities }],
      says: /models\[0\]\.capabilites is not a known field/,
    },
    {
      what: 'a date that is not in the calendar',
      models: [{ ...haiku, prices: [{ ...haiku.prices[0], effective_from: '2025-02-30' }] }],
      says: /models\[0\]\.prices\[0\]\.effective_from "2025-02-30" is not a calendar date/,
    },
    {
      what: 'prices out of order',
      models: [{ ...haiku, prices: [haiku.prices[1], haiku.prices[0]] }],
      says: /models\[0\]\.prices\[1\]\.effective_from must be later than the price before it/,
    },
    { what: 'a model listed twice', models: [haiku, haiku], says: /models\[1\]\.id "house-haiku" is listed twice/ },
  ];
  for (const { what, models, says } of mistakes) {
    it(`refuses to load a catalogue file with ${what}, naming the file and the field`, async () => {
      const file = await fileWith('bad.json', JSON.stringify({ models }));
      await assert.rejects(ModelCatalogue.load({ AGENTPLANE_MODELS: file }, log), (err: Error) => {
        assert.ok(err.message.startsWith(`AGENTPLANE_MODELS file ${file}: `), err.message);
        assert.match(err.message, says);
        return true;
      });
    });
  }

  it('refuses to load a catalogue file that does not parse or does not exist, naming it', async () => {
    const broken = await fileWith('broken.yaml', 'models: [ { id: x');
    await assert.rejects(
      ModelCatalogue.load({ AGENTPLANE_MODELS: broken }, log),
      new RegExp(`AGENTPLANE_MODELS file ${broken}: cannot be parsed`),
    );
    const missing = join(dir, 'missing.yaml');
    await assert.rejects(
      ModelCatalogue.load({ AGENTPLANE_MODELS: missing }, log),
      new RegExp(`AGENTPLANE_MODELS file ${missing}: cannot be read`),
    );
  });

  it('prices a call with the version in effect on its (UTC) day, and with the first version before any took effect', async () => {
    const catalogue = await ModelCatalogue.load({}, log);
    const gpt4o = catalogue.find('gpt-4o')!;
    assert.equal(catalogue.priceAt(gpt4o, new Date('2024-10-01T23:59:59Z')).version, '2024-05-13');
    assert.equal(catalogue.priceAt(gpt4o, new Date('2024-10-02T00:00:00Z')).version, '2024-10-02');
    assert.equal(catalogue.priceAt(gpt4o, new Date('2026-11-22T12:00:00Z')).input_per_million, '2.50');
    assert.equal(catalogue.priceAt(gpt4o, new Date('2023-01-01T00:00:00Z')).version, '2024-05-13');
  });

  it('counts a provider as configured by its key or its base URL, and names the setting that is missing', async () => {
    const none = await ModelCatalogue.load({}, log);
    assert.equal(none.configured('openai'), false);
    assert.equal(none.configured('anthropic'), false);
    assert.equal(none.missingSetting('openai'), 'OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server)');
    assert.match(none.missingSetting('anthropic'), /^ANTHROPIC_API_KEY/);
    const keys = await ModelCatalogue.load({ OPENAI_API_KEY: 'sk-test', ANTHROPIC_BASE_URL: 'http://127.0.0.1:1' }, log);
    assert.equal(keys.configured('openai'), true);
    assert.equal(keys.configured('anthropic'), true);
  });
});
