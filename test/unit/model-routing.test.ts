import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { ModelCatalogue } from '../../models/catalogue.js';
import { routeAuto } from '../../models/routing.js';

const log = pino({ level: 'silent' });
const bothProviders = { OPENAI_API_KEY: 'sk-test', ANTHROPIC_API_KEY: 'sk-ant-test' };

describe('model: "auto" routing', () => {
  it('keeps the configured models with the capabilities needed, cheapest first (input + output per million tokens), and says why', async () => {
    const catalogue = await ModelCatalogue.load(bothProviders, log);
    const route = routeAuto(catalogue, { tools: true, vision: true, input_tokens: 1000 });
    assert.deepEqual(route.candidates, [
      'gpt-4.1-nano',
      'gpt-4o-mini',
      'gpt-4.1-mini',
      'claude-haiku-4-5',
      'gpt-4.1',
      'gpt-4o',
      'claude-sonnet-4-6',
      'claude-opus-4-5',
    ]);
    assert.equal(
      route.reason,
      'auto: needs tools and vision and room for 1,000 input tokens; cheapest configured model with them is gpt-4.1-nano ' +
        '($0.10 in / $0.40 out per million tokens); fallbacks: gpt-4o-mini, gpt-4.1-mini, claude-haiku-4-5 and 4 more',
    );
  });

  it('leaves out models whose context window cannot hold the input', async () => {
    const catalogue = await ModelCatalogue.load(bothProviders, log);
    const route = routeAuto(catalogue, { tools: false, vision: false, input_tokens: 500_000 });
    assert.deepEqual(route.candidates, ['gpt-4.1-nano', 'gpt-4.1-mini', 'gpt-4.1', 'claude-sonnet-4-6']);
    assert.match(
      route.reason,
      /^auto: needs no tools or vision and room for 500,000 input tokens; cheapest configured model with them is gpt-4.1-nano/,
    );
  });

  it('skips the models of a provider that is not configured', async () => {
    const catalogue = await ModelCatalogue.load({ ANTHROPIC_API_KEY: 'sk-ant-test' }, log);
    const route = routeAuto(catalogue, { tools: true, vision: false, input_tokens: 10 });
    assert.deepEqual(route.candidates, ['claude-haiku-4-5', 'claude-sonnet-4-6', 'claude-opus-4-5']);
    assert.match(
      route.reason,
      /is claude-haiku-4-5 \(\$1\.00 in \/ \$5\.00 out per million tokens\); fallbacks: claude-sonnet-4-6, claude-opus-4-5$/,
    );
  });

  it('orders models of the same price by id, and leaves out those without the capabilities needed', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agentplane-routing-'));
    try {
      const model = (id: string, vision: boolean, input: string) => ({
        id,
        provider: 'openai',
        capabilities: { tools: true, vision, context_window: 8192, max_output_tokens: 1024 },
        prices: [
          { version: 'v1', effective_from: '2025-01-01', input_per_million: input, output_per_million: '1', cached_input_per_million: '0' },
        ],
      });
      const file = join(dir, 'models.json');
      await writeFile(
        file,
        JSON.stringify({
          models: [
            model('zeta', true, '0.5'),
            model('alpha', true, '0.50'),
            model('blind', false, '0.01'),
            model('cheap', true, '0.499999999'),
          ],
        }),
      );
      const catalogue = await ModelCatalogue.load({ AGENTPLANE_MODELS: file, OPENAI_API_KEY: 'sk-test' }, log);
      const route = routeAuto(catalogue, { tools: true, vision: true, input_tokens: 100 });
      assert.deepEqual(route.candidates, ['cheap', 'alpha', 'zeta']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('returns no candidates when no provider is configured, naming the settings that would help', async () => {
    const catalogue = await ModelCatalogue.load({}, log);
    const route = routeAuto(catalogue, { tools: true, vision: true, input_tokens: 1000 });
    assert.deepEqual(route.candidates, []);
    assert.equal(
      route.reason,
      'auto: no model can serve this request: it needs tools and vision and room for 1,000 input tokens, and the models that have them belong to providers ' +
        'that are not configured: set OPENAI_API_KEY (or OPENAI_BASE_URL for an OpenAI-compatible server) to use gpt-4.1 or gpt-4.1-mini; ' +
        'set ANTHROPIC_API_KEY (or ANTHROPIC_BASE_URL for an Anthropic-compatible server) to use claude-sonnet-4-6 or claude-haiku-4-5',
    );
  });

  it('returns no candidates when no model in the catalogue has what is needed, and says so', async () => {
    const catalogue = await ModelCatalogue.load(bothProviders, log);
    const route = routeAuto(catalogue, { tools: true, vision: false, input_tokens: 5_000_000 });
    assert.deepEqual(route.candidates, []);
    assert.match(
      route.reason,
      /^auto: no model can serve this request: it needs tools and room for 5,000,000 input tokens, and no model in the catalogue has them \(AGENTPLANE_MODELS/,
    );
  });
});
