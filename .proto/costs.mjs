import { startPostgres } from '../dist/cli/embedded.js';
import { createDb } from '../dist/records/db.js';
import { migrate } from '../dist/records/migrate.js';
import { pino } from 'pino';
const server = await startPostgres('/tmp/proto/pg', { durable: false });
const db = createDb(server.url, { log: pino({ level: 'silent' }) });
await migrate(db);
const start = Date.UTC(2026, 9, 1) / 1000;
await db.query(`INSERT INTO projects (id, name) VALUES ('proj_bench', 'b') ON CONFLICT DO NOTHING`);
const { rows: [{ n }] } = await db.query(`SELECT count(*)::int n FROM usage_records`);
if (n === 0) {
  console.time('insert');
  await db.query(`INSERT INTO usage_records (id, project_id, source, run_id, step_index, agent_id, api_key_id, model, provider, price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
    SELECT 'usage_' || i, 'proj_bench', 'run', 'run_' || i, 0, 'agent_' || (i % 20), 'key_' || (i % 3), (ARRAY['gpt-4.1-mini','gpt-4.1-nano','claude'])[1 + i % 3], 'openai', '2025-04-14',
      1000 + i % 500, 100 + i % 50, 0, usage_cost(1000 + i % 500, 0, 100 + i % 50, 0.4, 0.1, 1.6), jsonb_build_object('team', 't' || (i % 5)),
      to_timestamp(${start} + (i::bigint * 2592000 / 1000000))
    FROM generate_series(1, 1000000) i`);
  console.timeEnd('insert');
  await db.query('VACUUM ANALYZE usage_records');
}
async function time(label, sql, params) {
  const t = [];
  for (let i = 0; i < 7; i++) { const s = performance.now(); await db.query(sql, params); t.push(performance.now() - s); }
  t.sort((a, b) => a - b);
  console.log(label, t.map((x) => x.toFixed(0)).join(' '));
}
const q = `SELECT date_bin('1 day', created_at, to_timestamp($2)) b, agent_id, sum(cost)::text, sum(input_tokens), sum(output_tokens), count(*)
  FROM usage_records WHERE project_id = $1 AND created_at >= to_timestamp($2) AND created_at < to_timestamp($3) GROUP BY 1, 2 ORDER BY 1, 2`;
const qr = `SELECT date_bin('1 day', hour, to_timestamp($2)) b, agent_id, sum(cost)::text, sum(input_tokens), sum(output_tokens), sum(calls)
  FROM usage_rollups WHERE project_id = $1 AND hour >= to_timestamp($2) AND hour < to_timestamp($3) GROUP BY 1, 2 ORDER BY 1, 2`;
await db.query('VACUUM ANALYZE usage_rollups');
await time('rollup', qr, ['proj_bench', start, start + 30 * 86400]);
const c = await db.query('SELECT count(*) FROM usage_rollups'); console.log('rollup rows', c.rows[0]);
await time('raw', q, ['proj_bench', start, start + 30 * 86400]);
const e = await db.query('EXPLAIN ANALYZE ' + q.replace('$1', "'proj_bench'").replace(/\$2/g, String(start)).replace('$3', String(start + 30 * 86400)));
console.log(e.rows.map((r) => r['QUERY PLAN']).join('\n'));
await db.end(); await server.stop();
