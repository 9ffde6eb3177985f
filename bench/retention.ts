/**
 * The retention benchmark: the hot reads of the two tables that grow fastest, measured on a project with
 * nothing else in the database, then again once 10,000,000 run events (100 a run) and 10,000,000 model calls
 * fill the last 30 days; and the time to expire one day of each, which drops that day's partition.
 *   a run's events      `GET /v1/runs/{id}/events` of a completed 100-event run, read to its end.
 *   a cost report       `GET /v1/analytics/costs` over 30 daily buckets, grouped by agent. "Empty" holds one call
 *                       for each of the 60 agent, model and key combinations in each hour: the same report, read
 *                       from rollups of the same size, over 43,200 calls instead of ten million.
 * The ratio is full ÷ empty at p50 (goal: at most 1.2); expiring a day: goal under a second.
 *
 * The seed writes each day's rows with SQL, and the ledger's rollups once from its rows, as the ledger's
 * trigger would have kept them call by call: the benchmark measures reads and expiry, not ten million inserts.
 */
import { createLogger } from '../cli/runtime.js';
import { createDb, type Db } from '../records/db.js';
import { dropDayPartitionsOlderThan, makeDayPartitions } from '../records/retention.js';
import { latencyOf, timed, type LatencyFigures } from './runs.js';
import { callApi as call, type BenchTarget } from './stack.js';

export const RETENTION_ROWS = 10_000_000;
const EVENTS_PER_RUN = 100;
/** The seed's agent, model and key combinations: i % 20, i % 3 and i % 3 repeat every 60 calls. */
const GROUPS_PER_HOUR = 60;
const DAYS = 30;
const DAY = 86_400;

export interface RetentionSettings {
  warmups: number;
  samples: number;
}

export interface RetentionFigures {
  rows: number;
  seedSeconds: number;
  runEvents: { empty: LatencyFigures; full: LatencyFigures };
  costReport: { empty: LatencyFigures; full: LatencyFigures };
  /** Dropping the oldest day of each table, in milliseconds, and the rows that day held. */
  expireRunEventsDayMs: number;
  expireUsageDayMs: number;
  rowsPerDay: number;
}

/** `count` completed runs of `agentId`, `first` onwards, each with EVENTS_PER_RUN events, spread evenly from `start`. */
async function seedRuns(db: Db, projectId: string, agentId: string, first: number, count: number, start: number): Promise<void> {
  const spacing = (DAYS * DAY) / count;
  await db.query(
    `INSERT INTO runs (id, project_id, agent_id, agent_version, status, model, input, max_steps, event_seq, created_at, started_at, completed_at)
     SELECT 'run_bench_' || i, $1, $2, 1, 'completed', 'gpt-4.1-mini', '"Question"', 10, $5,
       to_timestamp($4 + (i - $3) * $6::float8), to_timestamp($4 + (i - $3) * $6::float8), to_timestamp($4 + (i - $3) * $6::float8 + 2)
     FROM generate_series($3::bigint, $3::bigint + $7 - 1) i`,
    [projectId, agentId, first, start, EVENTS_PER_RUN, spacing, count],
  );
  // A run's events over its 2 seconds: its start, steps, deltas, and its end, which ends its stream.
  await db.query(
    `INSERT INTO run_events (run_id, seq, type, data, created_at)
     SELECT 'run_bench_' || i, s,
       CASE WHEN s = 1 THEN 'run.in_progress' WHEN s = $3 THEN 'run.completed' WHEN s % 10 = 2 THEN 'step.started' ELSE 'message.delta' END,
       jsonb_build_object('step', s / 10, 'delta', 'a few words of the answer'),
       to_timestamp($2 + (i - $1) * $4::float8 + s * 0.01)
     FROM generate_series($1::bigint, $1::bigint + $5 - 1) i, generate_series(1, $3) s`,
    [first, start, EVENTS_PER_RUN, spacing, count],
  );
}

export async function measureRetention(target: BenchTarget, settings: RetentionSettings): Promise<RetentionFigures> {
  const project = await call(`${target.apiUrl}/v1/projects`, target.adminKey, {
    method: 'POST',
    body: JSON.stringify({ name: 'retention bench' }),
  });
  const key = await call(`${target.apiUrl}/v1/api-keys`, target.adminKey, {
    method: 'POST',
    body: JSON.stringify({ name: 'reader', scopes: ['agents:read', 'agents:write', 'analytics:read'], project_id: project.id }),
  });
  const agent = await call(`${target.apiUrl}/v1/agents`, key.key, {
    method: 'POST',
    body: JSON.stringify({ name: 'seeded', model: 'gpt-4.1-mini', instructions: 'Answer.' }),
  });
  const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
  const start = today - DAYS * DAY;
  const db = createDb(target.databaseUrl, { max: 1, log: createLogger('warn') });
  try {
    for (const table of ['run_events', 'usage_records'] as const)
      await makeDayPartitions(db, table, new Date((start - DAY) * 1000), new Date(today * 1000));

    const readEvents = (runId: string) => async () => {
      const response = await fetch(`${target.apiUrl}/v1/runs/${runId}/events`, { headers: { authorization: `Bearer ${key.key}` } });
      const text = await response.text();
      const events = text.split('\n').filter((line) => line.startsWith('data:')).length;
      if (response.status !== 200 || events !== EVENTS_PER_RUN)
        throw new Error(`the run's stream answered ${response.status} with ${events} events, not ${EVENTS_PER_RUN}`);
    };
    const report = async () => {
      const body = await call(
        `${target.apiUrl}/v1/analytics/costs?start_time=${start}&end_time=${today}&limit=${DAYS}&group_by=agent_id`,
        key.key,
      );
      if (body.data.length !== DAYS) throw new Error(`the report has ${body.data.length} buckets, not ${DAYS}`);
    };
    const sample = async (work: () => Promise<void>) => {
      for (let i = 0; i < settings.warmups; i++) await work();
      const ms: number[] = [];
      for (let i = 0; i < settings.samples; i++) ms.push(await timed(work));
      return latencyOf(ms);
    };

    // Empty: one run of 100 events, in the middle of the range, and one call for each group and hour the report
    // sums (20 agents × 3 models × 3 keys fall into 60 combinations, each an hour): the same answer, from
    // rollups of the same size, over 43,200 calls instead of ten million.
    await seedRuns(db, project.id, agent.id, 0, 1, start + (DAYS / 2) * DAY);
    const seedCalls = async (count: number) => {
      await db.query(`SELECT set_config('agentplane.moving_rows', 'on', false)`);
      await db.query(
        `INSERT INTO usage_records (id, project_id, source, agent_id, api_key_id, model, provider, price_version,
           input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
         SELECT 'usage_bench_' || $4 || '_' || i, $1, 'run', 'agent_' || (i % 20), 'key_' || (i % 3),
           (ARRAY['gpt-4.1-mini', 'gpt-4.1-nano', 'gpt-4o-mini'])[1 + i % 3], 'openai', '2025-04-14',
           1000 + i % 500, 100 + i % 50, i % 100, usage_cost(1000 + i % 500, i % 100, 100 + i % 50, 0.4, 0.1, 1.6),
           jsonb_build_object('team', 'team_' || (i % 5)), to_timestamp($2 + (i - 1)::bigint * $3 / $4)
         FROM generate_series(1, $4) i`,
        [project.id, start, DAYS * DAY, count],
      );
      await db.query(`SELECT set_config('agentplane.moving_rows', 'off', false)`);
      // The rollups, as the trigger would have kept them.
      await db.query(`DELETE FROM usage_rollups WHERE project_id = $1`, [project.id]);
      await db.query(
        `INSERT INTO usage_rollups (project_id, hour, source, agent_id, network_id, model, api_key_id, input_tokens, output_tokens, cached_tokens, cost, calls)
         SELECT project_id, date_trunc('hour', created_at, 'UTC'), source, COALESCE(agent_id, ''), COALESCE(network_id, ''), model,
           COALESCE(api_key_id, ''), sum(input_tokens), sum(output_tokens), sum(cached_tokens), sum(cost), count(*)
         FROM usage_records WHERE project_id = $1 GROUP BY 1, 2, 3, 4, 5, 6, 7`,
        [project.id],
      );
    };
    await seedCalls(GROUPS_PER_HOUR * 24 * DAYS);
    await db.query('ANALYZE run_events');
    await db.query('ANALYZE usage_records');
    await db.query('ANALYZE usage_rollups');
    const emptyEvents = await sample(readEvents('run_bench_0'));
    const emptyReport = await sample(report);

    // Full: ten million of each over the 30 days.
    const seedStarted = Date.now();
    const runs = RETENTION_ROWS / EVENTS_PER_RUN;
    const batch = 10_000;
    for (let first = 1; first <= runs; first += batch)
      await seedRuns(db, project.id, agent.id, first, Math.min(batch, runs - first + 1), start);
    await db.query(`DELETE FROM usage_records WHERE project_id = $1`, [project.id]);
    await seedCalls(RETENTION_ROWS);
    // What autovacuum does on its own after a bulk load: visibility and statistics.
    for (const table of ['runs', 'run_events', 'usage_records', 'usage_rollups']) await db.query(`VACUUM ANALYZE ${table}`);
    const seedSeconds = (Date.now() - seedStarted) / 1000;
    const middle = `run_bench_${Math.floor(runs / 2)}`;
    const fullEvents = await sample(readEvents(middle));
    const fullReport = await sample(report);

    // The empty day before the seeded ones goes first; then the oldest seeded day of each, timed.
    const { rows } = await db.query<{ n: string }>(
      `SELECT count(*) AS n FROM run_events WHERE created_at >= to_timestamp($1) AND created_at < to_timestamp($1 + 86400)`,
      [start],
    );
    const expireDay = async (table: 'run_events' | 'usage_records') => {
      await dropDayPartitionsOlderThan(db, table, DAYS);
      return timed(async () => {
        if ((await dropDayPartitionsOlderThan(db, table, DAYS - 1)) !== 1) throw new Error(`not one day of ${table} expired`);
      });
    };
    const expireRunEventsDayMs = await expireDay('run_events');
    const expireUsageDayMs = await expireDay('usage_records');
    return {
      rows: RETENTION_ROWS,
      seedSeconds,
      runEvents: { empty: emptyEvents, full: fullEvents },
      costReport: { empty: emptyReport, full: fullReport },
      expireRunEventsDayMs,
      expireUsageDayMs,
      rowsPerDay: Number(rows[0]!.n),
    };
  } finally {
    await db.end();
  }
}
