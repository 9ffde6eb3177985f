/** Run records: what was asked, the state it is in, and the usage and cost its model calls added up to. */
import type { components } from '../api/generated/openapi.js';
import type { ChatMessage } from '../models/messages.js';
import { newId } from './ids.js';
import type { Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import { appendRunEvent, RUN_EVENTS_CHANNEL } from './run-events.js';

export type RunStatus = components['schemas']['RunStatus'];
export type RunError = components['schemas']['RunError'];
export type InputMessage = Extract<ChatMessage, { role: 'user' | 'assistant' }>;

export const ACTIVE_STATUSES: readonly RunStatus[] = ['queued', 'in_progress'];
export const isFinished = (status: RunStatus) => !ACTIVE_STATUSES.includes(status);

export interface RunRecord {
  id: string;
  project_id: string;
  agent_id: string;
  agent_version: number;
  api_key_id: string | null;
  status: RunStatus;
  model: string;
  resolved_model: string | null;
  routing_reason: string | null;
  input: InputMessage[];
  file_ids: string[];
  previous_run_id: string | null;
  max_steps: number;
  output_text: string;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  /** Decimal USD, as PostgreSQL's numeric prints it. */
  cost: string;
  error: RunError | null;
  metadata: Record<string, string>;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
}

export interface NewRun {
  projectId: string;
  agentId: string;
  agentVersion: number;
  apiKeyId: string;
  model: string;
  input: InputMessage[];
  fileIds: string[];
  previousRunId: string | null;
  maxSteps: number;
  metadata: Record<string, string>;
}

const COLUMNS = `id, project_id, agent_id, agent_version, api_key_id, status, model, resolved_model, routing_reason, input, file_ids,
  previous_run_id, max_steps, output_text, input_tokens, output_tokens, cached_tokens, trim_scale(cost)::text AS cost, error, metadata,
  created_at, started_at, completed_at`;

/** Inserts a queued run with its first event; answers its id. */
export async function insertRun(tx: Queryable, run: NewRun): Promise<string> {
  const id = newId('run');
  await tx.query(
    `INSERT INTO runs (id, project_id, agent_id, agent_version, api_key_id, status, model, input, file_ids, previous_run_id, max_steps, metadata)
     VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8, $9, $10, $11)`,
    [id, run.projectId, run.agentId, run.agentVersion, run.apiKeyId, run.model, JSON.stringify(run.input), run.fileIds, run.previousRunId, run.maxSteps, run.metadata],
  );
  await appendRunEvent(tx, id, 'run.created', {});
  return id;
}

export async function findRun(db: Queryable, projectId: string, id: string): Promise<RunRecord | null> {
  const { rows } = await db.query<RunRecord>(`SELECT ${COLUMNS} FROM runs WHERE id = $1 AND project_id = $2`, [id, projectId]);
  return rows[0] ?? null;
}

/** For the worker, which knows runs by id alone. */
export async function runById(db: Queryable, id: string): Promise<RunRecord | null> {
  const { rows } = await db.query<RunRecord>(`SELECT ${COLUMNS} FROM runs WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export interface RunFilters {
  status?: RunStatus;
  createdAfter?: number;
  createdBefore?: number;
  metadata?: Record<string, string>;
}

export async function listAgentRuns(db: Queryable, projectId: string, agentId: string, page: PageRequest, filters: RunFilters): Promise<Page<RunRecord>> {
  const conditions: [string, ...unknown[]][] = [];
  if (filters.createdAfter !== undefined) conditions.push(['created_at >= to_timestamp(?)', filters.createdAfter]);
  if (filters.createdBefore !== undefined) conditions.push(['created_at < to_timestamp(?)', filters.createdBefore]);
  if (filters.metadata && Object.keys(filters.metadata).length > 0) conditions.push(['metadata @> ?::jsonb', JSON.stringify(filters.metadata)]);
  return selectPage<RunRecord>(db, { table: 'runs', columns: COLUMNS, projectId, where: { agent_id: agentId, status: filters.status }, conditions, page });
}

/** The agent's runs that are queued or in progress, oldest first; locked when `lock` (in a transaction). */
export async function activeRunsOf(db: Queryable, agentId: string): Promise<Pick<RunRecord, 'id' | 'status' | 'created_at'>[]> {
  const { rows } = await db.query<Pick<RunRecord, 'id' | 'status' | 'created_at'>>(
    `SELECT id, status, created_at FROM runs WHERE agent_id = $1 AND status IN ('queued', 'in_progress') ORDER BY created_at, id`,
    [agentId],
  );
  return rows;
}

/**
 * Queued → in_progress, once, with its event, in one statement (appendRunEvent's, with the change of
 * status). False if the run was no longer queued (cancelled meanwhile, or already started).
 */
export async function markRunStarted(db: Queryable, runId: string): Promise<boolean> {
  const { rowCount } = await db.query(
    `WITH started AS (
       UPDATE runs SET status = 'in_progress', started_at = now(), event_seq = event_seq + 1 WHERE id = $1 AND status = 'queued' RETURNING event_seq),
     appended AS (INSERT INTO run_events (run_id, seq, type, data) SELECT $1, event_seq, 'run.in_progress', '{}' FROM started RETURNING seq)
     SELECT seq, pg_notify($2, $1 || ' run.in_progress') FROM appended`,
    [runId, RUN_EVENTS_CHANNEL],
  );
  return rowCount === 1;
}

export async function recordRouting(tx: Queryable, runId: string, resolvedModel: string, reason: string): Promise<void> {
  await tx.query('UPDATE runs SET resolved_model = $2, routing_reason = $3 WHERE id = $1', [runId, resolvedModel, reason]);
}

/** What the run will use: the tools offered to the model, and the model chosen first and why. */
export async function recordPlan(db: Queryable, runId: string, plan: { toolSpecs: unknown[]; resolvedModel: string; reason: string }): Promise<void> {
  await db.query('UPDATE runs SET tool_specs = $2, resolved_model = $3, routing_reason = $4 WHERE id = $1', [
    runId,
    JSON.stringify(plan.toolSpecs),
    plan.resolvedModel,
    plan.reason,
  ]);
}

export async function toolSpecsOf(db: Queryable, runId: string): Promise<unknown[] | null> {
  const { rows } = await db.query<{ tool_specs: unknown[] | null }>('SELECT tool_specs FROM runs WHERE id = $1', [runId]);
  return rows[0]?.tool_specs ?? null;
}

/**
 * Ends a run, once: a run already finished stays as it was (false). The terminal event is appended in
 * the same transaction.
 */
export async function finishRun(tx: Queryable, runId: string, outcome: { status: 'completed' | 'failed' | 'cancelled'; outputText?: string; error?: RunError | null }): Promise<boolean> {
  const { rowCount } = await tx.query(
    `UPDATE runs SET status = $2, output_text = coalesce($3, output_text), error = $4, completed_at = now()
     WHERE id = $1 AND status IN ('queued', 'in_progress')`,
    [runId, outcome.status, outcome.outputText ?? null, outcome.error ?? null],
  );
  if (rowCount !== 1) return false;
  await appendRunEvent(tx, runId, `run.${outcome.status}`, outcome.error ? { error: outcome.error } : {});
  return true;
}

/**
 * The agent's next queued run, when it is an `enqueue` run waiting its turn: null if a run is still in
 * progress, or if the next one is of a version that does not wait (it starts on its own).
 */
export async function nextQueuedRun(db: Queryable, agentId: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string; status: RunStatus; concurrency: string }>(
    `SELECT r.id, r.status, v.concurrency FROM runs r JOIN agent_versions v ON v.agent_id = r.agent_id AND v.version = r.agent_version
     WHERE r.agent_id = $1 AND r.status IN ('queued', 'in_progress') ORDER BY r.created_at, r.id`,
    [agentId],
  );
  if (rows.some((r) => r.status === 'in_progress')) return null;
  return rows[0]?.concurrency === 'enqueue' ? rows[0].id : null;
}

/** Runs queued for longer than `olderThanSeconds`: their workflow may never have been started. */
export async function staleQueuedRuns(db: Queryable, olderThanSeconds: number, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM runs WHERE status = 'queued' AND created_at < now() - make_interval(secs => $1) ORDER BY created_at LIMIT $2`,
    [olderThanSeconds, limit],
  );
  return rows.map((r) => r.id);
}
