import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createAgent, startRunsStack, type RunsStack } from '../support/runs.js';
import { newTenant, startTestApi, type Tenant, type TestApi } from '../support/api.js';
import { scratch } from '../support/services.js';
import { builtinModels } from '../../models/builtin-models.js';

const DAY = 86_400;
const HOUR = 3_600;
// The synthetic ledger's ten days start here: thirty days ago at midnight UTC, well within the usage ledger's
// retention whenever the suite runs.
const BASE = Math.floor(Date.now() / 86_400_000) * 86_400 - 30 * 86_400;

interface LedgerRow {
  id: string;
  at: number;
  source: string;
  agent_id: string | null;
  network_id: string | null;
  model: string;
  api_key_id: string | null;
  metadata: Record<string, string>;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  /** Millionths of a dollar: sums by hand are exact in integers. */
  micros: bigint;
}

/** A small deterministic generator, so that a failure can be reproduced. */
function generator(seed: number) {
  let state = seed;
  return (n: number) => {
    state = (state * 1_103_515_245 + 12_345) % 2_147_483_648;
    return state % n;
  };
}

const decimal = (micros: bigint) => {
  const sign = micros < 0n ? '-' : '';
  const abs = micros < 0n ? -micros : micros;
  const fraction = String(abs % 1_000_000n)
    .padStart(6, '0')
    .replace(/0+$/, '');
  return `${sign}${abs / 1_000_000n}${fraction ? `.${fraction}` : ''}`;
};

function syntheticLedger(projectId: string, count: number): LedgerRow[] {
  const pick = generator(7);
  const of = <T>(values: T[]) => values[pick(values.length)]!;
  return Array.from({ length: count }, (_, i) => ({
    id: `usage_synthetic_${projectId}_${i}`,
    at: BASE + pick(10 * DAY),
    source: of(['run', 'run', 'extraction', 'judge']),
    agent_id: of<string | null>(['agent_a', 'agent_b', 'agent_c', null]),
    network_id: of<string | null>(['network_x', null, null]),
    model: of(['gpt-4.1-mini', 'gpt-4.1-nano', 'claude-haiku-4-5']),
    api_key_id: of<string | null>(['key_1', 'key_2', null]),
    metadata: of<Record<string, string>>([
      { team: 'search' },
      { team: 'billing', tier: 'gold' },
      {},
      { team: 'search', 'cost[centre]': 'r&d' },
    ]),
    input_tokens: 100 + pick(5000),
    output_tokens: pick(800),
    cached_tokens: pick(100),
    micros: BigInt(1 + pick(250_000)),
  }));
}

type Dimension = 'agent_id' | 'network_id' | 'model' | 'api_key_id' | 'source' | `metadata.${string}`;

function valueOf(row: LedgerRow, dimension: Dimension): string | null {
  return dimension.startsWith('metadata.')
    ? (row.metadata[dimension.slice(9)] ?? null)
    : (row[dimension as keyof LedgerRow] as string | null);
}

interface Sums {
  cost: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  num_model_requests: number;
}

/** The report by hand: bucket start → group key → sums. */
function byHand(
  rows: LedgerRow[],
  from: number,
  to: number,
  width: number,
  groupBy: Dimension[],
  keep: (row: LedgerRow) => boolean = () => true,
) {
  const buckets = new Map<number, Map<string, { micros: bigint; input: number; output: number; cached: number; calls: number }>>();
  for (const row of rows) {
    if (row.at < from || row.at >= to || !keep(row)) continue;
    const bucket = from + Math.floor((row.at - from) / width) * width;
    const key = JSON.stringify(groupBy.map((d) => valueOf(row, d)));
    const groups = buckets.get(bucket) ?? new Map();
    buckets.set(bucket, groups);
    const sums = groups.get(key) ?? { micros: 0n, input: 0, output: 0, cached: 0, calls: 0 };
    groups.set(key, {
      micros: sums.micros + row.micros,
      input: sums.input + row.input_tokens,
      output: sums.output + row.output_tokens,
      cached: sums.cached + row.cached_tokens,
      calls: sums.calls + 1,
    });
  }
  const result = new Map<number, Map<string, Sums>>();
  for (const [bucket, groups] of buckets) {
    result.set(
      bucket,
      new Map(
        [...groups].map(([key, s]) => [
          key,
          { cost: decimal(s.micros), input_tokens: s.input, output_tokens: s.output, cached_tokens: s.cached, num_model_requests: s.calls },
        ]),
      ),
    );
  }
  return result;
}

interface Result extends Sums {
  amount: { value: string; currency: string };
  metadata?: Record<string, string | null>;
  [dimension: string]: unknown;
}

/** The report as the API gives it, every page followed, in the same form. */
async function fromApi(tenant: Tenant, query: Record<string, string | number>, groupBy: Dimension[]) {
  const result = new Map<number, Map<string, Sums>>();
  const starts: number[] = [];
  let page: string | null = null;
  do {
    const params: URLSearchParams = new URLSearchParams(
      Object.entries({ ...query, ...(page ? { page } : {}) }).map(([k, v]): [string, string] => [k, String(v)]),
    );
    if (groupBy.length > 0) params.set('group_by', groupBy.join(','));
    const response: { status: number; body: any } = await tenant.admin.get(`/v1/analytics/costs?${params}`);
    assert.equal(response.status, 200, JSON.stringify(response.body));
    assert.equal(response.body.object, 'page');
    for (const bucket of response.body.data as { start_time: number; results: Result[] }[]) {
      starts.push(bucket.start_time);
      if (bucket.results.length === 0) continue;
      const groups = new Map<string, Sums>();
      for (const r of bucket.results) {
        const key = JSON.stringify(
          groupBy.map((d) => (d.startsWith('metadata.') ? (r.metadata?.[d.slice(9)] ?? null) : (r[d] as string | null))),
        );
        assert.ok(!groups.has(key), `group ${key} listed twice`);
        assert.equal(r.amount.currency, 'usd');
        groups.set(key, {
          cost: r.amount.value,
          input_tokens: r.input_tokens,
          output_tokens: r.output_tokens,
          cached_tokens: r.cached_tokens,
          num_model_requests: r.num_model_requests,
        });
      }
      result.set(bucket.start_time, groups);
    }
    page = response.body.next_page;
    assert.equal(response.body.has_more, page !== null);
  } while (page);
  return { result, starts };
}

describe('cost analytics', function () {
  this.timeout(180_000);
  let stack: RunsStack;
  let ledger: LedgerRow[];
  let synthetic: Tenant;

  before(async () => {
    stack = await startRunsStack('cost-analytics');
    synthetic = await newTenant(stack.api, 'costs-synthetic');
    ledger = syntheticLedger(synthetic.projectId, 600);
    await stack.api.services.db.query(
      `INSERT INTO usage_records (id, project_id, source, agent_id, network_id, api_key_id, model, provider, price_version,
         input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
       SELECT r.id, $1, r.source, r.agent_id, r.network_id, r.api_key_id, r.model, 'openai', 'test', r.input_tokens, r.output_tokens, r.cached_tokens,
         r.cost, r.metadata, to_timestamp(r.at)
       FROM jsonb_to_recordset($2::jsonb) AS r(id text, source text, agent_id text, network_id text, api_key_id text, model text,
         input_tokens bigint, output_tokens bigint, cached_tokens bigint, cost numeric, metadata jsonb, at bigint)`,
      [synthetic.projectId, JSON.stringify(ledger.map((r) => ({ ...r, cost: decimal(r.micros), micros: undefined })))],
    );
  });

  after(async () => {
    await stack?.stop();
  });

  it('attributes real runs to their agent, network, model, key and metadata, in exact decimals', async () => {
    const tenant = stack.tenant;
    const since = Math.floor(Date.now() / 1000) - 60;
    const geo = await createAgent(tenant.admin, { name: 'geo' });
    const runner = await tenant.keyWith('agents:run', 'agents:read');
    stack.openai.enqueue({ text: ['Paris'], usage: { input: 1200, output: 300, cached: 200 } });
    const first = await runner.post(`/v1/agents/${geo.id}/run`, { input: 'Capital of France?', metadata: { team: 'geo' } });
    assert.equal(first.body.status, 'completed', JSON.stringify(first.body));
    const members = [await createAgent(tenant.admin, { name: 'drafter' }), await createAgent(tenant.admin, { name: 'editor' })];
    const network = await tenant.admin.post('/v1/networks', {
      name: 'pipeline',
      members: members.map((m) => m.id),
      router: { type: 'sequential' },
    });
    stack.openai.enqueue({ text: ['draft'], usage: { input: 1000, output: 100 } });
    stack.openai.enqueue({ text: ['edited'], usage: { input: 2000, output: 200, cached: 1000 } });
    const second = await tenant.admin.post(`/v1/networks/${network.body.id}/run`, { input: 'Write.' });
    assert.equal(second.body.status, 'completed', JSON.stringify(second.body));

    const report = await tenant.admin.get(
      `/v1/analytics/costs?start_time=${since}&bucket_width=1d&group_by=agent_id,network_id,model,metadata.team`,
    );
    assert.equal(report.status, 200, JSON.stringify(report.body));
    const results = (report.body.data as { results: Result[] }[]).flatMap((b) => b.results);
    const summary = results.map((r) => [r.agent_id, r.network_id, r.model, r.metadata?.team, r.amount.value, r.num_model_requests]);
    // gpt-4.1-mini: $0.40 in, $0.10 cached in, $1.60 out per million tokens.
    assert.deepEqual(
      summary.sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      [
        [geo.id, null, 'gpt-4.1-mini', 'geo', '0.0009', 1],
        [members[0]!.id, network.body.id, 'gpt-4.1-mini', null, '0.00056', 1],
        [members[1]!.id, network.body.id, 'gpt-4.1-mini', null, '0.00082', 1],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    const byKey = await tenant.admin.get(`/v1/analytics/costs?start_time=${since}&group_by=api_key_id`);
    const keys = (byKey.body.data as { results: Result[] }[]).flatMap((b) => b.results).map((r) => [r.api_key_id, r.amount.value]);
    assert.equal(keys.length, 2, JSON.stringify(keys));
    assert.deepEqual(keys.map((k) => k[1]).sort(), ['0.0009', '0.00138']);
  });

  for (const width of ['1d', '1h'] as const) {
    for (const aligned of [true, false]) {
      it(`sums every grouping exactly as by hand, ${width} buckets starting ${aligned ? 'on the hour' : 'off the hour'}`, async () => {
        const from = BASE + (aligned ? 0 : 1_234);
        const to = width === '1d' ? BASE + 10 * DAY : BASE + 2 * DAY + (aligned ? 0 : 77);
        const size = width === '1d' ? DAY : HOUR;
        const groupings: Dimension[][] = [
          [],
          ['agent_id'],
          ['network_id'],
          ['model'],
          ['api_key_id'],
          ['source'],
          ['metadata.team'],
          ['agent_id', 'model'],
          ['metadata.tier', 'api_key_id'],
        ];
        for (const groupBy of groupings) {
          const { result, starts } = await fromApi(
            synthetic,
            { start_time: from, end_time: to, bucket_width: width, limit: width === '1d' ? 4 : 30 },
            groupBy,
          );
          assert.deepEqual(result, byHand(ledger, from, to, size, groupBy), `grouped by [${groupBy.join(', ')}]`);
          // Every bucket of the range is listed once, in order, empty or not.
          assert.deepEqual(
            starts,
            Array.from({ length: Math.ceil((to - from) / size) }, (_, i) => from + i * size),
          );
        }
      });
    }
  }

  it('filters by agents, models, keys, source and metadata, alone and together', async () => {
    const range = { start_time: BASE, end_time: BASE + 10 * DAY, limit: 10 };
    const cases: [Record<string, string>, (row: LedgerRow) => boolean][] = [
      [{ agent_id: 'agent_a,agent_c' }, (r) => r.agent_id === 'agent_a' || r.agent_id === 'agent_c'],
      [{ model: 'gpt-4.1-nano' }, (r) => r.model === 'gpt-4.1-nano'],
      [{ api_key_id: 'key_2', source: 'run,judge' }, (r) => r.api_key_id === 'key_2' && r.source !== 'extraction'],
      [{ network_id: 'network_x' }, (r) => r.network_id === 'network_x'],
      [{ 'metadata[team]': 'billing' }, (r) => r.metadata.team === 'billing'],
      [{ 'metadata[team]': 'search', agent_id: 'agent_b' }, (r) => r.metadata.team === 'search' && r.agent_id === 'agent_b'],
      // A key may hold brackets: it is what stands between `metadata[` and the last `]`.
      [{ 'metadata[cost[centre]]': 'r&d' }, (r) => r.metadata['cost[centre]'] === 'r&d'],
    ];
    for (const [filters, keep] of cases) {
      const { result } = await fromApi(synthetic, { ...range, ...filters }, ['model']);
      assert.deepEqual(result, byHand(ledger, BASE, BASE + 10 * DAY, DAY, ['model'], keep), JSON.stringify(filters));
    }
  });

  it('keeps each project to its own ledger', async () => {
    const report = await stack.tenant.admin.get(`/v1/analytics/costs?start_time=${BASE}&end_time=${BASE + 10 * DAY}&limit=10`);
    assert.equal(report.status, 200);
    assert.deepEqual(
      (report.body.data as { results: unknown[] }[]).flatMap((b) => b.results),
      [],
    );
  });

  it('refuses a bad range, dimension, cursor or scope with 400 or 403', async () => {
    const get = (query: string) => synthetic.admin.get(`/v1/analytics/costs?${query}`);
    const cases: [string, string][] = [
      [`start_time=${BASE}&end_time=${BASE}`, 'end_time'],
      [`start_time=${BASE}&group_by=colour`, 'group_by'],
      [`start_time=${BASE}&group_by=metadata.`, 'group_by'],
      [`start_time=${BASE}&bucket_width=1w`, 'bucket_width'],
      [`start_time=${BASE}&end_time=${BASE + 10 * DAY}&page=bkt_${BASE + 1}`, 'page'],
      [`start_time=${BASE}&end_time=${BASE + 10 * DAY}&page=bkt_${BASE + 11 * DAY}`, 'page'],
      [`start_time=${BASE}&limit=181`, 'limit'],
      [`start_time=${BASE}&source=robots`, 'source'],
      [`end_time=${BASE}`, 'start_time'],
    ];
    for (const [query, param] of cases) {
      const response = await get(query);
      assert.equal(response.status, 400, `${query}: ${JSON.stringify(response.body)}`);
      assert.match(response.body.error.param ?? '', new RegExp(`^${param}`), query);
    }
    const filesOnly = await synthetic.keyWith('files:read');
    assert.equal((await filesOnly.get(`/v1/analytics/costs?start_time=${BASE}`)).status, 403);
    const analyst = await synthetic.keyWith('analytics:read');
    assert.equal((await analyst.get(`/v1/analytics/costs?start_time=${BASE}&end_time=${BASE + DAY}`)).status, 200);
  });

  describe('repricing', () => {
    let repriced: TestApi;
    let priced: Tenant;
    const RANGE = { start_time: BASE, end_time: BASE + 10 * DAY };

    before(async () => {
      // The operator's new catalogue: gpt-4.1-mini gets cheaper from the fifth day of the range; claude-haiku-4-5 is gone.
      const catalogue = join(await scratch, 'repriced-models.json');
      const models = builtinModels
        .filter((m) => m.id !== 'claude-haiku-4-5')
        .map((m) =>
          m.id === 'gpt-4.1-mini'
            ? {
                ...m,
                prices: [
                  ...m.prices,
                  {
                    version: 'cut-2026-09',
                    effective_from: new Date((BASE + 4 * DAY) * 1000).toISOString().slice(0, 10),
                    input_per_million: '0.2',
                    cached_input_per_million: '0.05',
                    output_per_million: '0.8',
                  },
                ],
              }
            : m,
        );
      await writeFile(catalogue, JSON.stringify({ models }));
      repriced = await startTestApi({ worker: false, modelEnv: { AGENTPLANE_MODELS: catalogue } });
      priced = await newTenant(repriced, 'costs-repriced');
      // Each call charged at the price of its day under the built-in catalogue.
      await repriced.services.db.query(
        `INSERT INTO usage_records (id, project_id, source, agent_id, model, provider, price_version, input_tokens, output_tokens, cached_tokens, cost, created_at)
         SELECT $1 || m || '_' || i, $2, 'run', 'agent_a', m, 'openai', v, 1000 * i, 100 * i, 0, c * i, to_timestamp($3 + i * 86400 - 3600)
         FROM generate_series(1, 10) i,
           (VALUES ('gpt-4.1-mini', '2025-04-14', 0.00056), ('gpt-4.1-nano', '2025-04-14', 0.00014), ('claude-haiku-4-5', '2025-10-01', 0.0015)) AS p(m, v, c)`,
        [`usage_reprice_${priced.projectId}_`, priced.projectId, BASE],
      );
    });

    after(async () => {
      await repriced?.stop();
    });

    const total = async () => {
      const { result } = await fromApi(priced, { ...RANGE, limit: 10 }, []);
      return decimal([...result.values()].reduce((sum, groups) => sum + BigInt(Math.round(Number(groups.get('[]')!.cost) * 1e6)), 0n));
    };

    it('reports what the prices in effect change, per model, without changing anything on a dry run', async () => {
      const before = await total();
      const dry = await priced.admin.post('/v1/analytics/costs/reprice', RANGE);
      assert.equal(dry.status, 200, JSON.stringify(dry.body));
      // gpt-4.1-mini from the fifth day (days 5 to 10, i = 5…10): 1000i × 0.2 + 100i × 0.8 = 280i millionths instead of 560i.
      // Σ i for 5…10 = 45: 45 × 280 = 12,600 millionths less.
      assert.equal(dry.body.dry_run, true);
      const mini = dry.body.models.find((m: { model: string }) => m.model === 'gpt-4.1-mini');
      assert.deepEqual(
        {
          records: mini.records,
          changed: mini.changed,
          previous: mini.previous_cost,
          repriced: mini.repriced_cost,
          difference: mini.difference,
          versions: mini.price_versions.sort(),
        },
        { records: 10, changed: 6, previous: '0.0308', repriced: '0.0182', difference: '-0.0126', versions: ['2025-04-14', 'cut-2026-09'] },
      );
      const nano = dry.body.models.find((m: { model: string }) => m.model === 'gpt-4.1-nano');
      assert.deepEqual([nano.changed, nano.difference], [0, '0']);
      assert.deepEqual(dry.body.unpriced, [{ model: 'claude-haiku-4-5', records: 10 }]);
      assert.deepEqual([dry.body.records, dry.body.changed, dry.body.difference], [30, 6, '-0.0126']);
      assert.equal(await total(), before);
    });

    it('applies the new prices for an admin key only, and every report reads them at once', async () => {
      const analyst = await priced.keyWith('analytics:read');
      const refused = await analyst.post('/v1/analytics/costs/reprice', { ...RANGE, dry_run: false });
      assert.equal(refused.status, 403);
      const before = await total();
      const applied = await priced.admin.post('/v1/analytics/costs/reprice', { ...RANGE, dry_run: false });
      assert.equal(applied.status, 200, JSON.stringify(applied.body));
      assert.deepEqual([applied.body.dry_run, applied.body.changed, applied.body.difference], [false, 6, '-0.0126']);
      const after = await total();
      assert.equal(BigInt(Math.round(Number(before) * 1e6)) - BigInt(Math.round(Number(after) * 1e6)), 12_600n);
      // The hourly rollups and the ledger agree: a window off the hour reads the ledger itself.
      const { result: offHour } = await fromApi(priced, { start_time: BASE + 1, end_time: BASE + 10 * DAY, limit: 10 }, ['model']);
      const { result: onHour } = await fromApi(priced, { start_time: BASE, end_time: BASE + 10 * DAY, limit: 10 }, ['model']);
      const sumOf = (report: Map<number, Map<string, Sums>>) =>
        decimal([...report.values()].flatMap((g) => [...g.values()]).reduce((s, v) => s + BigInt(Math.round(Number(v.cost) * 1e6)), 0n));
      assert.equal(sumOf(offHour), sumOf(onHour));
      assert.equal(sumOf(onHour), after);
      const again = await priced.admin.post('/v1/analytics/costs/reprice', { ...RANGE, dry_run: false });
      assert.deepEqual([again.body.changed, again.body.difference], [0, '0']);
      const audit = await priced.admin.get('/v1/audit-logs?action=analytics.costs.reprice');
      const entry = audit.body.data.find((e: { target: { id: string } }) => e.target.id === applied.body.id);
      assert.deepEqual([entry?.target.type, entry?.outcome.status], ['reprice', 200]);
    });

    it('refuses a range over 366 days or backwards', async () => {
      assert.equal((await priced.admin.post('/v1/analytics/costs/reprice', { start_time: BASE, end_time: BASE + 367 * DAY })).status, 400);
      assert.equal((await priced.admin.post('/v1/analytics/costs/reprice', { start_time: BASE, end_time: BASE - 1 })).status, 400);
    });
  });
});
