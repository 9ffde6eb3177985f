/**
 * Experiments: a dataset's items run against one version of an agent or a network, each item as a real run,
 * scored once its run ends. An item keeps a copy of what it runs (its dataset item's input, files, expected
 * answer and recorded tool calls), so a dataset changed or deleted later changes nothing an experiment ran.
 */
import type { DatasetItemRecord, ToolCallSnapshot } from './datasets.js';
import type { InputMessage, RunError } from './runs.js';
import { newId } from './ids.js';
import type { Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';

export type ExperimentStatus = 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';
export type ItemStatus = ExperimentStatus;
export type ToolMode = 'replay' | 'live';

/** What an agent experiment changes in the version it runs, without a new version. */
export interface AgentOverrides {
  model?: string;
  instructions?: string;
  model_settings?: Record<string, unknown>;
}

export interface ExperimentRecord {
  id: string;
  project_id: string;
  name: string;
  dataset_id: string;
  agent_id: string | null;
  network_id: string | null;
  version: number;
  overrides: AgentOverrides | null;
  scorers: unknown[];
  tools: ToolMode;
  concurrency: number;
  status: ExperimentStatus;
  error: RunError | null;
  metadata: Record<string, string>;
  api_key_id: string;
  key_concurrent_runs: number | null;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

export interface ExperimentItemRecord {
  id: string;
  experiment_id: string;
  project_id: string;
  dataset_item_id: string;
  run_id: string | null;
  status: ItemStatus;
  output: string | null;
  scores: { scorer: string; value: number; explanation: string }[];
  /** Decimal USD, exact; null until its run ends. */
  cost_usd: string | null;
  latency_ms: number | null;
  error: RunError | null;
  created_at: Date;
  completed_at: Date | null;
  /** When its copy of the conversation was cleared (its source run's thread deleted, or subject forgotten). */
  payloads_cleared_at: Date | null;
}

/** What the worker reads of an item to run it. */
export interface ItemToRun extends ExperimentItemRecord {
  input: InputMessage[];
  file_ids: string[];
  expected: unknown;
  tool_calls: ToolCallSnapshot[] | null;
  tool_specs: unknown[] | null;
}

export interface NewExperiment {
  name: string;
  datasetId: string;
  target: { agentId: string } | { networkId: string };
  version: number;
  overrides: AgentOverrides | null;
  scorers: unknown[];
  tools: ToolMode;
  concurrency: number;
  metadata: Record<string, string>;
  apiKeyId: string;
  keyConcurrentRuns: number | null;
}

const COLUMNS = `id, project_id, name, dataset_id, agent_id, network_id, version, overrides, scorers, tools, concurrency, status, error, metadata,
  api_key_id, key_concurrent_runs, created_at, started_at, completed_at`;
const ITEM_COLUMNS = `id, experiment_id, project_id, dataset_item_id, run_id, status, output, scores, trim_scale(cost_usd)::text AS cost_usd,
  latency_ms, error, created_at, completed_at, payloads_cleared_at`;

/**
 * The most experiments a project may have queued or running at once, unless the operator says otherwise
 * (AGENTPLANE_EXPERIMENTS_PER_PROJECT). An item that waits for room (its key's or project's runs, its agent's
 * concurrency) asks Temporal again every 15 seconds or so, on the queue every project shares: 300 experiments of 20
 * lanes each waiting made another project's one-step runs 2.8× slower at p50 and 6× at p95.
 */
export const DEFAULT_EXPERIMENTS_PER_PROJECT = 10;

/**
 * The project's experiments queued or running, counted under a lock on them (held to the transaction's end), so
 * that two experiments started at once cannot both take the last place.
 */
export async function lockUnfinishedExperimentsOfProject(tx: Queryable, projectId: string): Promise<number> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('project-experiments:' || $1))`, [projectId]);
  const { rows } = await tx.query<{ unfinished: number }>(
    `SELECT count(*)::int AS unfinished FROM experiments WHERE project_id = $1 AND status IN ('queued', 'running')`,
    [projectId],
  );
  return rows[0]!.unfinished;
}

/**
 * Creates the experiment and one queued item per dataset item, in order. `sourceSpecs`: the tools each source run
 * (by id) was offered, hops included, kept with its items for replay. The caller holds the items' source runs
 * (holdSourceRuns): an item deleted meanwhile with its run's conversation is not copied.
 */
export async function createExperiment(
  tx: Queryable,
  projectId: string,
  fields: NewExperiment,
  items: DatasetItemRecord[],
  sourceSpecs: Map<string, unknown[]>,
): Promise<ExperimentRecord> {
  const { rows } = await tx.query<ExperimentRecord>(
    `INSERT INTO experiments (id, project_id, name, dataset_id, agent_id, network_id, version, overrides, scorers, tools, concurrency, metadata,
       api_key_id, key_concurrent_runs)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) RETURNING ${COLUMNS}`,
    [
      newId('exp'),
      projectId,
      fields.name,
      fields.datasetId,
      'agentId' in fields.target ? fields.target.agentId : null,
      'networkId' in fields.target ? fields.target.networkId : null,
      fields.version,
      fields.overrides === null ? null : JSON.stringify(fields.overrides),
      JSON.stringify(fields.scorers),
      fields.tools,
      fields.concurrency,
      fields.metadata,
      fields.apiKeyId,
      fields.keyConcurrentRuns,
    ],
  );
  const experiment = rows[0]!;
  await tx.query(
    `INSERT INTO experiment_items (id, experiment_id, project_id, dataset_item_id, source_run_id, input, file_ids, expected, tool_calls, tool_specs,
       created_at)
     SELECT i.id, $1, $2, i.dataset_item_id, i.source_run_id, i.input, i.file_ids, i.expected, i.tool_calls, i.tool_specs,
            clock_timestamp() + (i.n * interval '1 microsecond')
       FROM jsonb_to_recordset($3::jsonb)
         AS i(id text, n int, dataset_item_id text, source_run_id text, input jsonb, file_ids text[], expected jsonb, tool_calls jsonb, tool_specs jsonb)
      WHERE EXISTS (SELECT 1 FROM dataset_items d WHERE d.id = i.dataset_item_id AND d.project_id = $2)`,
    [
      experiment.id,
      projectId,
      JSON.stringify(
        items.map((item, n) => ({
          id: newId('expi'),
          n,
          dataset_item_id: item.id,
          source_run_id: item.source_run_id,
          input: item.input,
          file_ids: item.file_ids,
          expected: item.expected,
          tool_calls: item.tool_calls,
          tool_specs: item.source_run_id ? (sourceSpecs.get(item.source_run_id) ?? null) : null,
        })),
      ),
    ],
  );
  return experiment;
}

/** The tools each of `runIds` was offered, its hops' included: what a replayed run offers of a server's tools. */
export async function toolSpecsOfRuns(db: Queryable, projectId: string, runIds: string[]): Promise<Map<string, unknown[]>> {
  const specs = new Map<string, unknown[]>();
  if (runIds.length === 0) return specs;
  const { rows } = await db.query<{ run_id: string; tool_specs: unknown[] }>(
    `SELECT coalesce(parent_run_id, id) AS run_id, tool_specs FROM runs
      WHERE project_id = $1 AND (id = ANY($2) OR parent_run_id = ANY($2)) AND tool_specs IS NOT NULL
      ORDER BY created_at, id`,
    [projectId, runIds],
  );
  for (const row of rows) specs.set(row.run_id, [...(specs.get(row.run_id) ?? []), ...row.tool_specs]);
  return specs;
}

/** `lock` holds the experiment's row until the transaction ends. */
export async function findExperiment(
  db: Queryable,
  projectId: string,
  id: string,
  options: { lock?: boolean } = {},
): Promise<ExperimentRecord | null> {
  const { rows } = await db.query<ExperimentRecord>(
    `SELECT ${COLUMNS} FROM experiments WHERE id = $1 AND project_id = $2${options.lock ? ' FOR UPDATE' : ''}`,
    [id, projectId],
  );
  return rows[0] ?? null;
}

/** For the worker, which knows experiments by id alone. */
export async function experimentById(db: Queryable, id: string, options: { lock?: boolean } = {}): Promise<ExperimentRecord | null> {
  const { rows } = await db.query<ExperimentRecord>(
    `SELECT ${COLUMNS} FROM experiments WHERE id = $1${options.lock ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return rows[0] ?? null;
}

export function listExperiments(
  db: Queryable,
  projectId: string,
  page: PageRequest,
  filters: { datasetId?: string },
): Promise<Page<ExperimentRecord>> {
  return selectPage<ExperimentRecord>(db, {
    table: 'experiments',
    columns: COLUMNS,
    projectId,
    where: { dataset_id: filters.datasetId },
    page,
  });
}

export function listExperimentItems(
  db: Queryable,
  projectId: string,
  experimentId: string,
  page: PageRequest,
): Promise<Page<ExperimentItemRecord>> {
  return selectPage<ExperimentItemRecord>(db, {
    table: 'experiment_items',
    columns: ITEM_COLUMNS,
    projectId,
    where: { experiment_id: experimentId },
    page,
  });
}

export type ItemCounts = Record<ItemStatus | 'total', number>;

export interface ExperimentSummary {
  scores: Record<string, { mean: number; count: number }>;
  /** Decimal USD, exact: the sum of the items' runs' costs. */
  cost_usd: string;
  latency_ms: { mean: number | null; p50: number | null; p95: number | null };
}

/** How many items are in each state, and what the ended ones add up to, for each of `experimentIds`. */
export async function tallyOf(
  db: Queryable,
  experimentIds: string[],
): Promise<Map<string, { counts: ItemCounts; summary: ExperimentSummary }>> {
  const tallies = new Map<string, { counts: ItemCounts; summary: ExperimentSummary }>();
  if (experimentIds.length === 0) return tallies;
  for (const id of experimentIds)
    tallies.set(id, {
      counts: { total: 0, queued: 0, running: 0, completed: 0, failed: 0, cancelled: 0 },
      summary: { scores: {}, cost_usd: '0', latency_ms: { mean: null, p50: null, p95: null } },
    });
  // One after another: `db` may be a transaction's one connection.
  const counts = await db.query<{ experiment_id: string; status: ItemStatus; n: number }>(
    'SELECT experiment_id, status, count(*)::int AS n FROM experiment_items WHERE experiment_id = ANY($1) GROUP BY experiment_id, status',
    [experimentIds],
  );
  const totals = await db.query<{ experiment_id: string; cost: string; mean: number | null; p50: number | null; p95: number | null }>(
    `SELECT experiment_id, trim_scale(coalesce(sum(cost_usd), 0))::text AS cost, avg(latency_ms)::float8 AS mean,
              percentile_cont(0.5) WITHIN GROUP (ORDER BY latency_ms) AS p50, percentile_cont(0.95) WITHIN GROUP (ORDER BY latency_ms) AS p95
         FROM experiment_items WHERE experiment_id = ANY($1) GROUP BY experiment_id`,
    [experimentIds],
  );
  const scores = await db.query<{ experiment_id: string; scorer: string; mean: number; n: number }>(
    `SELECT i.experiment_id, s->>'scorer' AS scorer, avg((s->>'value')::float8) AS mean, count(*)::int AS n
         FROM experiment_items i, jsonb_array_elements(i.scores) s WHERE i.experiment_id = ANY($1) GROUP BY 1, 2 ORDER BY 1, 2`,
    [experimentIds],
  );
  const round = (value: number | null) => (value === null ? null : Math.round(value * 10_000) / 10_000);
  for (const row of counts.rows) {
    const tally = tallies.get(row.experiment_id)!;
    tally.counts[row.status] = row.n;
    tally.counts.total += row.n;
  }
  for (const row of totals.rows) {
    const { summary } = tallies.get(row.experiment_id)!;
    summary.cost_usd = row.cost;
    summary.latency_ms = { mean: round(row.mean), p50: round(row.p50), p95: round(row.p95) };
  }
  for (const row of scores.rows) tallies.get(row.experiment_id)!.summary.scores[row.scorer] = { mean: round(row.mean)!, count: row.n };
  return tallies;
}

// ---- The worker's side: each step safe to repeat.

/**
 * Experiments still queued `olderThanSeconds` after they were made: their workflow, which marks them running as it
 * starts, was never started (the API died after the commit, or Temporal was down). Oldest first.
 */
export async function staleQueuedExperiments(
  db: Queryable,
  olderThanSeconds: number,
  limit: number,
): Promise<{ id: string; projectId: string }[]> {
  const { rows } = await db.query<{ id: string; projectId: string }>(
    `SELECT id, project_id AS "projectId" FROM experiments
      WHERE status = 'queued' AND created_at < now() - make_interval(secs => $1) ORDER BY created_at, id LIMIT $2`,
    [olderThanSeconds, limit],
  );
  return rows;
}

/** Queued → running, once. */
export async function markExperimentRunning(db: Queryable, id: string): Promise<void> {
  await db.query(`UPDATE experiments SET status = 'running', started_at = now() WHERE id = $1 AND status = 'queued'`, [id]);
}

/** The experiment's items still to run, in order. */
export async function itemsToRun(db: Queryable, experimentId: string): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM experiment_items WHERE experiment_id = $1 AND status IN ('queued', 'running') ORDER BY created_at, id`,
    [experimentId],
  );
  return rows.map((row) => row.id);
}

const ITEM_TO_RUN_COLUMNS = `${ITEM_COLUMNS}, input, file_ids, expected, tool_calls, tool_specs`;

/** `lock` holds the item's row until the transaction ends: its run is made once. */
export async function itemById(db: Queryable, id: string, options: { lock?: boolean } = {}): Promise<ItemToRun | null> {
  const { rows } = await db.query<ItemToRun>(
    `SELECT ${ITEM_TO_RUN_COLUMNS} FROM experiment_items WHERE id = $1${options.lock ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return rows[0] ?? null;
}

/** The item whose recorded tool calls answer a replayed run's. */
export async function replayedItemOf(db: Queryable, id: string): Promise<Pick<ItemToRun, 'tool_calls' | 'tool_specs'> | null> {
  const { rows } = await db.query<Pick<ItemToRun, 'tool_calls' | 'tool_specs'>>(
    'SELECT tool_calls, tool_specs FROM experiment_items WHERE id = $1',
    [id],
  );
  return rows[0] ?? null;
}

export async function attachRun(tx: Queryable, itemId: string, runId: string): Promise<void> {
  await tx.query(`UPDATE experiment_items SET run_id = $2, status = 'running' WHERE id = $1`, [itemId, runId]);
}

/** Ends an item, once: an item already ended stays as it was. */
export async function endItem(
  db: Queryable,
  itemId: string,
  outcome: {
    status: 'completed' | 'failed' | 'cancelled';
    output?: string | null;
    scores?: ExperimentItemRecord['scores'];
    costUsd?: string | null;
    latencyMs?: number | null;
    error?: RunError | null;
  },
): Promise<void> {
  await db.query(
    `UPDATE experiment_items SET status = $2, output = $3, scores = $4, cost_usd = $5::numeric, latency_ms = $6, error = $7, completed_at = now()
      WHERE id = $1 AND status IN ('queued', 'running')`,
    [
      itemId,
      outcome.status,
      outcome.output ?? null,
      JSON.stringify(outcome.scores ?? []),
      outcome.costUsd ?? null,
      outcome.latencyMs ?? null,
      outcome.error ?? null,
    ],
  );
}

/** Ends the experiment, once; items never started are cancelled with it. */
export async function endExperiment(
  db: Queryable,
  id: string,
  status: 'completed' | 'failed' | 'cancelled',
  error: RunError | null = null,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE experiments SET status = $2, error = $3, completed_at = now(), started_at = coalesce(started_at, now())
      WHERE id = $1 AND status IN ('queued', 'running')`,
    [id, status, error],
  );
  await db.query(
    `UPDATE experiment_items SET status = 'cancelled', completed_at = now() WHERE experiment_id = $1 AND status = 'queued' AND run_id IS NULL`,
    [id],
  );
  return (rowCount ?? 0) > 0;
}
