/**
 * The cost report benchmark: `GET /v1/analytics/costs` grouped by agent over 30 daily buckets, on a project
 * whose ledger holds 1,000,000 model calls spread over those 30 days (20 agents, 3 models, 3 keys). The
 * baseline is the same report summed straight from the ledger in one SQL statement, as a report without
 * rollups would have to. A report grouped by a metadata key, answered from the tag rollups, is measured
 * too.
 */
import { createLogger } from '../cli/runtime.js';
import { createDb } from '../records/db.js';
import { latencyOf, timed, type LatencyFigures } from './runs.js';
import { callApi as call, type BenchTarget } from './stack.js';

export const COST_ROWS = 1_000_000;
const DAYS = 30;
const DAY = 86_400;

export interface CostSettings {
  warmups: number;
  samples: number;
}

export interface CostFigures {
  rows: number;
  seedSeconds: number;
  /** The API, grouped by agent: answered from the hourly rollups. */
  byAgent: LatencyFigures;
  /** The same sums in one SQL statement over the ledger, from this process. */
  ledgerSql: LatencyFigures;
  /** The API, grouped by a metadata key: answered from the tag rollups. */
  byMetadata: LatencyFigures;
}

export async function measureCosts(target: BenchTarget, settings: CostSettings): Promise<CostFigures> {
  const project = await call(`${target.apiUrl}/v1/projects`, target.adminKey, {
    method: 'POST',
    body: JSON.stringify({ name: 'cost bench' }),
  });
  const key = await call(`${target.apiUrl}/v1/api-keys`, target.adminKey, {
    method: 'POST',
    body: JSON.stringify({ name: 'analyst', scopes: ['analytics:read'], project_id: project.id }),
  });
  const start = Math.floor(Date.now() / 1000 / DAY) * DAY - DAYS * DAY;
  const db = createDb(target.databaseUrl, { max: 1, log: createLogger('warn') });
  try {
    const seedStarted = Date.now();
    await db.query(
      `INSERT INTO usage_records (id, project_id, source, run_id, step_index, agent_id, api_key_id, model, provider, price_version,
         input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
       SELECT 'usage_bench_' || i, $1, 'run', 'run_bench_' || i, 0, 'agent_' || (i % 20), 'key_' || (i % 3),
         (ARRAY['gpt-4.1-mini', 'gpt-4.1-nano', 'gpt-4o-mini'])[1 + i % 3], 'openai', '2025-04-14',
         1000 + i % 500, 100 + i % 50, i % 100, usage_cost(1000 + i % 500, i % 100, 100 + i % 50, 0.4, 0.1, 1.6),
         jsonb_build_object('team', 'team_' || (i % 5)), to_timestamp($2 + (i - 1)::bigint * $3 / $4)
       FROM generate_series(1, $4) i`,
      [project.id, start, DAYS * DAY, COST_ROWS],
    );
    // What autovacuum does on its own after a bulk load: visibility and statistics.
    await db.query('VACUUM ANALYZE usage_records');
    await db.query('VACUUM ANALYZE usage_rollups');
    await db.query('VACUUM ANALYZE usage_tag_rollups');
    const seedSeconds = (Date.now() - seedStarted) / 1000;

    const report = (groupBy: string) => async () => {
      const body = await call(
        `${target.apiUrl}/v1/analytics/costs?start_time=${start}&end_time=${start + DAYS * DAY}&limit=${DAYS}&group_by=${groupBy}`,
        key.key,
      );
      if (body.data.length !== DAYS) throw new Error(`the report has ${body.data.length} buckets, not ${DAYS}`);
    };
    const ledgerSql = async () => {
      await db.query(
        `SELECT date_bin('1 day', created_at, to_timestamp($2)) AS bucket, agent_id, sum(cost), sum(input_tokens), sum(output_tokens), sum(cached_tokens), count(*)
         FROM usage_records WHERE project_id = $1 AND created_at >= to_timestamp($2) AND created_at < to_timestamp($3) GROUP BY 1, 2`,
        [project.id, start, start + DAYS * DAY],
      );
    };
    const sample = async (work: () => Promise<void>, samples: number) => {
      for (let i = 0; i < settings.warmups; i++) await work();
      const ms: number[] = [];
      for (let i = 0; i < samples; i++) ms.push(await timed(work));
      return latencyOf(ms);
    };
    const byAgent = await sample(report('agent_id'), settings.samples);
    const ledger = await sample(ledgerSql, Math.ceil(settings.samples / 5));
    const byMetadata = await sample(report('metadata.team'), Math.ceil(settings.samples / 5));
    return { rows: COST_ROWS, seedSeconds, byAgent, ledgerSql: ledger, byMetadata };
  } finally {
    await db.end();
  }
}
