/** Run records: what was asked, the state it is in, and the usage and cost its model calls added up to. */
import type { components } from '../api/generated/openapi.js';
import type { ChatMessage } from '../models/messages.js';
import { newId } from './ids.js';
import type { Concurrency } from './agents.js';
import type { NetworkRouterType } from './networks.js';
import { statement, type Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import { appendRunEvent, RUN_EVENTS_CHANNEL } from './run-events.js';
import { RUN_ENDED_EVENT_TYPE } from './events.js';
import { HAS_CONTEXT_FILES } from './files.js';
import { DURATION_MS, scoreEndingRun, type Score } from './run-scores.js';
import { LRUCache } from 'lru-cache';
import { CANCEL_ENDING_RUN_APPROVALS, uncountCancelledApprovals } from './approvals.js';
import { appendTurn, runAheadOnThread } from './threads.js';
import { currentTraceContext, newRunTraceContext, tracingOn, type StoredTraceContext } from '../tracing/context.js';
import type { EndedRun } from '../tracing/gen-ai.js';
import type { AgentOverrides } from './experiments.js';

export type RunStatus = components['schemas']['RunStatus'];
export type RunError = components['schemas']['RunError'];
export type InputMessage = Extract<ChatMessage, { role: 'user' | 'assistant' }>;

export const ACTIVE_STATUSES: readonly RunStatus[] = ['queued', 'in_progress'];
export const isFinished = (status: RunStatus) => !ACTIVE_STATUSES.includes(status);

export interface RunRecord {
  id: string;
  project_id: string;
  /** Null for a network run. */
  agent_id: string | null;
  agent_version: number | null;
  /** Set for a network run (the parent); its hops are child runs. */
  network_id: string | null;
  network_version: number | null;
  parent_run_id: string | null;
  hop_index: number | null;
  hop_decision: HopDecision | null;
  handoff: Handoff | null;
  api_key_id: string | null;
  status: RunStatus;
  model: string;
  resolved_model: string | null;
  routing_reason: string | null;
  input: InputMessage[];
  file_ids: string[];
  previous_run_id: string | null;
  /** The thread it runs on; its turn is added to the thread when it completes. */
  thread_id: string | null;
  /** Whom it runs for (an end user, customer or account). */
  subject_id: string | null;
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
  /** When its steps' messages were cleared past their retention; their conversation is its input and output since. */
  payloads_expired_at: Date | null;
  /** Its tool calls (and its hops') waiting for a decision: while any do, it is shown as `requires_action`. */
  pending_approvals: number;
  /** The cap on its cost, decimal USD (a network run's covers its hops); null when it has none. */
  max_cost_usd: string | null;
  /** The run's trace context (its own span's id among it); null when tracing was off where it was created. */
  trace_context: StoredTraceContext | null;
  /** The experiment that made it (a network run's hops carry their parent's); null for any other run. */
  experiment_id: string | null;
  /** An experiment's changes to its agent's definition, applied where the worker reads the definition. */
  agent_overrides: AgentOverrides | null;
  /** The experiment item whose recorded tool calls answer the run's (a replayed run); null: its tools are called. */
  replay_item_id: string | null;
  /** The schedule that made it, if one did. */
  schedule_id: string | null;
}

export interface HopDecision {
  router: NetworkRouterType;
  reason: string;
}

export interface Handoff {
  to: string;
  reason: string;
  message: string;
}

/** What a run runs: an agent at a version, or a network at a version. */
export type RunTarget = { agentId: string; agentVersion: number } | { networkId: string; networkVersion: number };

export interface NewRun {
  projectId: string;
  target: RunTarget;
  apiKeyId: string;
  model: string;
  input: InputMessage[];
  fileIds: string[];
  previousRunId: string | null;
  threadId: string | null;
  subjectId: string | null;
  maxSteps: number;
  /** Decimal USD; null for none. */
  maxCostUsd: string | null;
  metadata: Record<string, string>;
  /** A run an experiment makes for one of its items. */
  experiment?: { id: string; overrides: AgentOverrides | null; replayItemId: string | null };
  /** A scheduled run's schedule and the time it was scheduled for. */
  scheduled?: { scheduleId: string; at: Date };
}

export const COLUMNS = `id, project_id, agent_id, agent_version, network_id, network_version, parent_run_id, hop_index, hop_decision, handoff, api_key_id, status, model, resolved_model, routing_reason, input, file_ids,
  previous_run_id, thread_id, subject_id, max_steps, output_text, input_tokens, output_tokens, cached_tokens, trim_scale(cost)::text AS cost, error, metadata,
  created_at, started_at, completed_at, payloads_expired_at, pending_approvals, trim_scale(max_cost_usd)::text AS max_cost_usd, trace_context,
  experiment_id, agent_overrides, replay_item_id, schedule_id`;

/**
 * A run as lists show it: its totals and how many steps it has, without its conversation (the input, the
 * output text, the steps' messages), so that a page of runs costs the same however large its runs are.
 */
export type RunSummaryRecord = Omit<RunRecord, 'input' | 'output_text'> & { step_count: number };

const SUMMARY_COLUMNS = `id, project_id, agent_id, agent_version, network_id, network_version, parent_run_id, hop_index, hop_decision, handoff, api_key_id, status, model, resolved_model, routing_reason, file_ids,
  previous_run_id, thread_id, subject_id, max_steps, input_tokens, output_tokens, cached_tokens, trim_scale(cost)::text AS cost, error, metadata,
  created_at, started_at, completed_at, payloads_expired_at, pending_approvals, trim_scale(max_cost_usd)::text AS max_cost_usd,
  experiment_id, agent_overrides, replay_item_id, schedule_id, (SELECT count(*)::int FROM run_steps WHERE run_steps.run_id = runs.id) AS step_count`;

/**
 * The condition for runs in any of `statuses` as the API shows them: `requires_action` is a run in progress with
 * a call waiting for approval, and `in_progress` one without.
 */
export function statusCondition(statuses: RunStatus[]): [string, ...unknown[]] {
  const stored = statuses.filter((status) => status !== 'in_progress' && status !== 'requires_action');
  const parts: [string, ...unknown[]][] = [];
  if (stored.length > 0) parts.push(['status = ANY(?::text[])', stored]);
  if (statuses.includes('in_progress')) parts.push(["(status = 'in_progress' AND pending_approvals = 0)"]);
  if (statuses.includes('requires_action')) parts.push(["(status = 'in_progress' AND pending_approvals > 0)"]);
  return [`(${parts.map(([sql]) => sql).join(' OR ')})`, ...parts.flatMap(([, ...values]) => values)];
}

const INSERT_RUN = statement(
  'insert_run',
  `INSERT INTO runs (id, project_id, agent_id, agent_version, network_id, network_version, api_key_id, status, model, input, file_ids, previous_run_id,
       max_steps, metadata, max_cost_usd, thread_id, subject_id, trace_context, experiment_id, agent_overrides, replay_item_id, schedule_id, scheduled_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $9, $10, $11, $12, $13, $14::numeric, $15, $16, $17, $18, $19, $20, $21, $22)`,
);

/** Inserts a queued run with its first event; answers its id. */
export async function insertRun(tx: Queryable, run: NewRun): Promise<string> {
  const id = newId('run');
  await tx.query(INSERT_RUN, [
    id,
    run.projectId,
    'agentId' in run.target ? run.target.agentId : null,
    'agentId' in run.target ? run.target.agentVersion : null,
    'networkId' in run.target ? run.target.networkId : null,
    'networkId' in run.target ? run.target.networkVersion : null,
    run.apiKeyId,
    run.model,
    JSON.stringify(run.input),
    run.fileIds,
    run.previousRunId,
    run.maxSteps,
    run.metadata,
    run.maxCostUsd,
    run.threadId,
    run.subjectId,
    // A child of the request's span: the run's own span, exported when it ends.
    newRunTraceContext(),
    run.experiment?.id ?? null,
    run.experiment?.overrides ? JSON.stringify(run.experiment.overrides) : null,
    run.experiment?.replayItemId ?? null,
    run.scheduled?.scheduleId ?? null,
    run.scheduled?.at ?? null,
  ]);
  await appendRunEvent(tx, id, 'run.created', {});
  return id;
}

const FIND_RUN = statement('find_run', `SELECT ${COLUMNS} FROM runs WHERE id = $1 AND project_id = $2`);

export async function findRun(db: Queryable, projectId: string, id: string): Promise<RunRecord | null> {
  const { rows } = await db.query<RunRecord>(FIND_RUN, [id, projectId]);
  return rows[0] ?? null;
}

const RUN_BY_ID = statement('run_by_id', `SELECT ${COLUMNS} FROM runs WHERE id = $1`);

/** For the worker, which knows runs by id alone. */
export async function runById(db: Queryable, id: string): Promise<RunRecord | null> {
  const { rows } = await db.query<RunRecord>(RUN_BY_ID, [id]);
  return rows[0] ?? null;
}

const RUN_AND_TOOL_SPECS = statement('run_and_tool_specs', `SELECT ${COLUMNS}, tool_specs FROM runs WHERE id = $1`);

/** runById with the tools the run offers its model (recordPlan's), for a model call: one read for both. */
export async function runAndToolSpecs(db: Queryable, id: string): Promise<{ run: RunRecord; toolSpecs: unknown[] | null } | null> {
  const { rows } = await db.query<RunRecord & { tool_specs: unknown[] | null }>(RUN_AND_TOOL_SPECS, [id]);
  if (!rows[0]) return null;
  const { tool_specs: toolSpecs, ...run } = rows[0];
  return { run, toolSpecs };
}

export interface RunFilters {
  status?: RunStatus;
  createdAfter?: number;
  createdBefore?: number;
  metadata?: Record<string, string>;
}

export async function listAgentRuns(
  db: Queryable,
  projectId: string,
  agentId: string,
  page: PageRequest,
  filters: RunFilters,
): Promise<Page<RunSummaryRecord>> {
  const conditions: [string, ...unknown[]][] = [];
  if (filters.status !== undefined) conditions.push(statusCondition([filters.status]));
  if (filters.createdAfter !== undefined) conditions.push(['created_at >= to_timestamp(?)', filters.createdAfter]);
  if (filters.createdBefore !== undefined) conditions.push(['created_at < to_timestamp(?)', filters.createdBefore]);
  if (filters.metadata && Object.keys(filters.metadata).length > 0)
    conditions.push(['metadata @> ?::jsonb', JSON.stringify(filters.metadata)]);
  return selectPage<RunSummaryRecord>(db, {
    table: 'runs',
    columns: SUMMARY_COLUMNS,
    projectId,
    where: { agent_id: agentId },
    conditions,
    page,
  });
}

export interface ProjectRunFilters {
  statuses?: RunStatus[];
  agentId?: string;
  networkId?: string;
  /** A network run's id (its hops), or `none` (runs that are no hop). */
  parentRunId?: string;
  createdAfter?: number;
  createdBefore?: number;
  threadId?: string;
  subjectId?: string;
  scheduleId?: string;
}

/** Every run of a project, hops included unless `parentRunId` says otherwise; paged on runs_project_page. */
export async function listProjectRuns(
  db: Queryable,
  projectId: string,
  page: PageRequest,
  filters: ProjectRunFilters,
): Promise<Page<RunSummaryRecord>> {
  const conditions: [string, ...unknown[]][] = [];
  if (filters.statuses && filters.statuses.length > 0) conditions.push(statusCondition(filters.statuses));
  if (filters.parentRunId === 'none') conditions.push(['parent_run_id IS NULL']);
  else if (filters.parentRunId !== undefined) conditions.push(['parent_run_id = ?', filters.parentRunId]);
  if (filters.createdAfter !== undefined) conditions.push(['created_at >= to_timestamp(?)', filters.createdAfter]);
  if (filters.createdBefore !== undefined) conditions.push(['created_at < to_timestamp(?)', filters.createdBefore]);
  return selectPage<RunSummaryRecord>(db, {
    table: 'runs',
    columns: SUMMARY_COLUMNS,
    projectId,
    where: {
      agent_id: filters.agentId,
      network_id: filters.networkId,
      thread_id: filters.threadId,
      subject_id: filters.subjectId,
      schedule_id: filters.scheduleId,
    },
    conditions,
    page,
  });
}

export async function listNetworkRuns(
  db: Queryable,
  projectId: string,
  networkId: string,
  page: PageRequest,
  status?: RunStatus,
): Promise<Page<RunSummaryRecord>> {
  return selectPage<RunSummaryRecord>(db, {
    table: 'runs',
    columns: SUMMARY_COLUMNS,
    projectId,
    where: { network_id: networkId },
    conditions: status === undefined ? [] : [statusCondition([status])],
    page,
  });
}

/** A network run's hops, in order, as lists show them. */
export async function hopsOf(db: Queryable, parentRunId: string): Promise<RunSummaryRecord[]> {
  const { rows } = await db.query<RunSummaryRecord>(`SELECT ${SUMMARY_COLUMNS} FROM runs WHERE parent_run_id = $1 ORDER BY hop_index`, [
    parentRunId,
  ]);
  return rows;
}

/** A network run's hops, in order. */
export async function childrenOf(db: Queryable, parentRunId: string): Promise<RunRecord[]> {
  const { rows } = await db.query<RunRecord>(`SELECT ${COLUMNS} FROM runs WHERE parent_run_id = $1 ORDER BY hop_index`, [parentRunId]);
  return rows;
}

/** The hops of several network runs (a page of them), by parent. */
export async function childrenOfRuns(db: Queryable, parentRunIds: string[]): Promise<Map<string, RunSummaryRecord[]>> {
  const byParent = new Map<string, RunSummaryRecord[]>();
  if (parentRunIds.length === 0) return byParent;
  const { rows } = await db.query<RunSummaryRecord>(
    `SELECT ${SUMMARY_COLUMNS} FROM runs WHERE parent_run_id = ANY($1) ORDER BY parent_run_id, hop_index`,
    [parentRunIds],
  );
  for (const row of rows) byParent.set(row.parent_run_id!, [...(byParent.get(row.parent_run_id!) ?? []), row]);
  return byParent;
}

/**
 * A network run's hop `hopIndex`: a child run of `agent`, created once. A retried step finds the child it
 * created before, so no hop runs twice.
 */
export async function insertChildRun(
  tx: Queryable,
  parent: RunRecord,
  hop: {
    index: number;
    agentId: string;
    agentVersion: number;
    maxSteps: number;
    /** The member agent's cap on each of its runs; the network run's covers the hop as well. */
    maxCostUsd: string | null;
    model: string;
    input: InputMessage[];
    decision: HopDecision;
  },
): Promise<RunRecord> {
  const id = newId('run');
  const { rowCount } = await tx.query(
    `INSERT INTO runs (id, project_id, agent_id, agent_version, parent_run_id, hop_index, hop_decision, api_key_id, status, model, input, file_ids,
       max_steps, metadata, max_cost_usd, trace_context, experiment_id, replay_item_id)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'queued', $9, $10, $11, $12, $13, $14::numeric, $15, $16, $17)
     ON CONFLICT (parent_run_id, hop_index) DO NOTHING`,
    [
      id,
      parent.project_id,
      hop.agentId,
      hop.agentVersion,
      parent.id,
      hop.index,
      hop.decision,
      parent.api_key_id,
      hop.model,
      JSON.stringify(hop.input),
      parent.file_ids,
      hop.maxSteps,
      parent.metadata,
      hop.maxCostUsd,
      // A hop's span is a child of its network run's.
      parent.trace_context ? newRunTraceContext(parent.trace_context) : null,
      // A hop of an experiment's run is the experiment's, replayed from the same item.
      parent.experiment_id,
      parent.replay_item_id,
    ],
  );
  if (rowCount === 1) await appendRunEvent(tx, id, 'run.created', { hop: hop.index, agent_id: hop.agentId, decision: hop.decision });
  const { rows } = await tx.query<RunRecord>(`SELECT ${COLUMNS} FROM runs WHERE parent_run_id = $1 AND hop_index = $2`, [
    parent.id,
    hop.index,
  ]);
  return rows[0]!;
}

export async function recordHandoff(tx: Queryable, runId: string, handoff: Handoff): Promise<void> {
  await tx.query('UPDATE runs SET handoff = $2 WHERE id = $1', [runId, handoff]);
}

/**
 * The runs of an agent or a network that are queued or in progress, oldest first (the oldest `limit`, when given).
 * A network's hops are its own business: they do not count against their agent.
 */
export async function activeRunsOf(
  db: Queryable,
  targetId: string,
  limit: number | null = null,
): Promise<Pick<RunRecord, 'id' | 'status' | 'created_at'>[]> {
  const column = targetId.startsWith('net_') ? 'network_id' : 'agent_id';
  const { rows } = await db.query<Pick<RunRecord, 'id' | 'status' | 'created_at'>>(
    `SELECT id, status, created_at FROM runs WHERE ${column} = $1 AND parent_run_id IS NULL AND status IN ('queued', 'in_progress')
     ORDER BY created_at, id LIMIT $2`,
    [targetId, limit],
  );
  return rows;
}

/**
 * Whether an agent (or network) has a run ahead of `runId`: one still to end created before it, or one in progress,
 * whenever created (a run of a version that does not wait starts at once). A network's hops are its own business.
 * Each is one probe of an index, however many runs wait in the queue.
 */
const runAheadOf = (column: 'agent_id' | 'network_id') =>
  statement(
    `run_ahead_of_${column}`,
    `SELECT EXISTS (
         SELECT 1 FROM runs me JOIN runs a ON a.${column} = me.${column}
         WHERE me.id = $2 AND a.${column} = $1 AND a.parent_run_id IS NULL AND a.status IN ('queued', 'in_progress')
           AND (a.created_at, a.id) < (me.created_at, me.id)
       ) OR EXISTS (
         SELECT 1 FROM runs a WHERE a.${column} = $1 AND a.parent_run_id IS NULL AND a.status = 'in_progress' AND a.id <> $2
       ) AS ahead`,
  );
const RUN_AHEAD_OF_AGENT = runAheadOf('agent_id');
const RUN_AHEAD_OF_NETWORK = runAheadOf('network_id');

/**
 * Whether a queued run may start now: a run on a thread waits for every earlier run on the thread to end, and an
 * `enqueue` run for every earlier run of its agent (or network) and any in progress; any other starts at once, as
 * does a network's hop (its network run decides when).
 * `gone` when the run has ended meanwhile (cancelled before it started).
 */
export async function admissionOf(db: Queryable, run: RunRecord, concurrency: Concurrency | undefined): Promise<'start' | 'wait' | 'gone'> {
  if (run.status === 'in_progress') return 'start';
  if (run.status !== 'queued') return 'gone';
  if (run.parent_run_id) return 'start';
  // A run on a thread waits for every earlier run on the thread, whatever its agent's policy.
  if (run.thread_id && (await runAheadOnThread(db, run.thread_id, run.id))) return 'wait';
  if (concurrency !== 'enqueue') return 'start';
  const { rows } = await db.query<{ ahead: boolean }>(run.agent_id ? RUN_AHEAD_OF_AGENT : RUN_AHEAD_OF_NETWORK, [
    run.agent_id ?? run.network_id!,
    run.id,
  ]);
  return rows[0]!.ahead ? 'wait' : 'start';
}

const MARK_RUN_STARTED = statement(
  'mark_run_started',
  `WITH started AS (
       UPDATE runs SET status = 'in_progress', started_at = now(), event_seq = event_seq + 1 WHERE id = $1 AND status = 'queued'
       RETURNING event_seq, parent_run_id, project_id),
     appended AS (INSERT INTO run_events (run_id, seq, type, data) SELECT $1, event_seq, 'run.in_progress', '{}' FROM started RETURNING seq)
   SELECT started.parent_run_id, pg_notify($2, $1 || ' run.in_progress'),
     ${HAS_CONTEXT_FILES('started.project_id')} AS has_context
   FROM appended, started`,
);

/**
 * Queued → in_progress, once, with its event, in one statement (appendRunEvent's, with the change of
 * status). `started` false if the run was no longer queued (cancelled meanwhile, or already started). With it,
 * whether the run's project has context files to search (`hasContext`, null when not started): the tools its
 * start offers are chosen next.
 */
export async function markRunStarted(db: Queryable, runId: string): Promise<{ started: boolean; hasContext: boolean | null }> {
  const { rows } = await db.query<{ parent_run_id: string | null; has_context: boolean }>(MARK_RUN_STARTED, [runId, RUN_EVENTS_CHANNEL]);
  // A hop's start is its network run's event too.
  const parent = rows[0]?.parent_run_id;
  if (parent) await appendRunEvent(db, parent, 'run.in_progress', { child_run_id: runId });
  return { started: rows.length === 1, hasContext: rows[0]?.has_context ?? null };
}

export async function recordRouting(tx: Queryable, runId: string, resolvedModel: string, reason: string): Promise<void> {
  await tx.query('UPDATE runs SET resolved_model = $2, routing_reason = $3 WHERE id = $1', [runId, resolvedModel, reason]);
}

const RECORD_PLAN = statement('record_plan', 'UPDATE runs SET tool_specs = $2, resolved_model = $3, routing_reason = $4 WHERE id = $1');

/** What the run will use: the tools offered to the model, and the model chosen first and why. */
export async function recordPlan(
  db: Queryable,
  runId: string,
  plan: { toolSpecs: unknown[]; resolvedModel: string; reason: string },
): Promise<void> {
  await db.query(RECORD_PLAN, [runId, JSON.stringify(plan.toolSpecs), plan.resolvedModel, plan.reason]);
}

const TOOL_SPECS_OF = statement('tool_specs_of', 'SELECT tool_specs FROM runs WHERE id = $1');

export async function toolSpecsOf(db: Queryable, runId: string): Promise<unknown[] | null> {
  const { rows } = await db.query<{ tool_specs: unknown[] | null }>(TOOL_SPECS_OF, [runId]);
  return rows[0]?.tool_specs ?? null;
}

/**
 * Ends a run, once: a run already finished stays as it was (null). The terminal event is appended in
 * the same transaction. The answer is the run as its span tells it, for exportRunSpan once that transaction
 * has committed: a retried commit, or a retried activity, then finds the run ended and exports nothing more.
 */
export async function finishRun(
  tx: Queryable,
  runId: string,
  outcome: { status: 'completed' | 'failed' | 'cancelled'; outputText?: string; error?: RunError | null },
  /** The trace the outbox's `run.<status>` (or `network_run.<status>`) event is of: its webhook deliveries are spans of it. */
  eventTrace: StoredTraceContext | null = currentTraceContext(),
): Promise<EndedRun | null> {
  const type = `run.${outcome.status}`;
  const data = outcome.error ? { error: outcome.error } : {};
  const { rows } = await tx.query<EndedRunRow & { approvals_cancelled: number; event_seq: number }>(FINISH_RUN, [
    runId,
    outcome.status,
    outcome.outputText ?? null,
    outcome.error ?? null,
    type,
    data,
    RUN_EVENTS_CHANNEL,
    newId('evt'),
    eventTrace,
  ]);
  const row = rows[0];
  if (!row) return null;
  const { approvals_cancelled: approvalsCancelled, event_seq: _seq, ...ended } = row;
  await uncountCancelledApprovals(tx, runId, approvalsCancelled);
  // A completed run's turn joins its thread with its ending; a run that failed or was cancelled adds nothing to it.
  if (ended.thread_id && outcome.status === 'completed') await appendTurn(tx, { ...ended, thread_id: ended.thread_id });
  // A hop's usage and cost join its parent's in the transaction that ends it: once, and exactly.
  if (ended.parent_run_id) {
    await tx.query(
      `UPDATE runs p SET input_tokens = p.input_tokens + c.input_tokens, output_tokens = p.output_tokens + c.output_tokens,
         cached_tokens = p.cached_tokens + c.cached_tokens, cost = p.cost + c.cost
       FROM runs c WHERE c.id = $1 AND p.id = c.parent_run_id`,
      [runId],
    );
  }
  const scores = await scoreHeuristics(tx, ended);
  // A hop's end is its network run's event too (appendRunEvent's rule).
  if (ended.parent_run_id) await appendRunEvent(tx, ended.parent_run_id, type, { ...data, child_run_id: runId });
  // Its totals are final here (a network run's took its hops' as each ended). Its name is only read for its span.
  const name = tracingOn() && ended.trace_context ? await nameOf(tx, ended) : null;
  return { ...ended, name, scores };
}

/** What finishRun reads of the run it ends: its turn for the thread, and what its span tells. */
type EndedRunRow = Omit<EndedRun, 'name' | 'scores' | 'input' | 'output_text'> &
  Pick<RunRecord, 'project_id' | 'agent_version' | 'network_version' | 'input' | 'output_text' | 'file_ids'> & { duration_ms: number };

const ENDED_COLUMNS = `id, project_id, thread_id, input, output_text, trace_context, status, agent_id, agent_version, network_id, network_version,
  parent_run_id, hop_index, model, resolved_model, input_tokens, output_tokens, cached_tokens, trim_scale(cost)::text AS cost, error, created_at, completed_at,
  file_ids, ${DURATION_MS}`;

// The run ended, its waiting calls cancelled, what it still reserves released, its terminal event appended to its
// log (appendRunEvent's, with the end) and to the outbox (recordEvent's), in one statement.
const FINISH_RUN = statement(
  'finish_run',
  `WITH ended AS (
       UPDATE runs SET status = $2, output_text = coalesce($3, output_text), error = $4, completed_at = now(), event_seq = event_seq + 1
         WHERE id = $1 AND status IN ('queued', 'in_progress') RETURNING ${ENDED_COLUMNS}, event_seq),
     cancelled AS (${CANCEL_ENDING_RUN_APPROVALS}),
     released AS (DELETE FROM cost_reservations WHERE run_id = $1 AND EXISTS (SELECT 1 FROM ended)),
     appended AS (INSERT INTO run_events (run_id, seq, type, data) SELECT $1, event_seq, $5, $6 FROM ended RETURNING seq),
     told AS (
       INSERT INTO events (id, project_id, type, data, trace_context)
         SELECT $8, project_id, ${RUN_ENDED_EVENT_TYPE('network_id', '$2')}, jsonb_build_object('object', 'run', 'id', $1::text), $9
         FROM ended)
   SELECT ended.*, (SELECT count(*) FROM cancelled)::int AS approvals_cancelled,
     pg_notify($7, $1 || ' ' || $5)
   FROM ended, appended`,
);

// Agent and network versions never change once written: their names are read once per process.
const versionNames = new LRUCache<string, string>({ max: 1_000 });

async function nameOf(tx: Queryable, run: EndedRunRow): Promise<string | null> {
  const [table, column, id, version] = run.agent_id
    ? ['agent_versions', 'agent_id', run.agent_id, run.agent_version]
    : ['network_versions', 'network_id', run.network_id, run.network_version];
  if (!id || version === null) return null;
  const key = `${id}@${version}`;
  const known = versionNames.get(key);
  if (known !== undefined) return known;
  const { rows } = await tx.query<{ name: string }>(`SELECT name FROM ${table} WHERE ${column} = $1 AND version = $2`, [id, version]);
  if (rows[0]) versionNames.set(key, rows[0].name);
  return rows[0]?.name ?? null;
}

/**
 * The heuristic scores, with the end of the run: every finished run has them, whichever way it ended. A
 * scorer that fails is rolled back alone (the run still ends; a backfill can score it later), but a lost
 * connection fails the transaction, which is then retried whole.
 */
async function scoreHeuristics(tx: Queryable, ended: EndedRunRow): Promise<Score[]> {
  await tx.query('SAVEPOINT run_scores');
  try {
    const scores = await scoreEndingRun(tx, ended.id, ended);
    await tx.query('RELEASE SAVEPOINT run_scores');
    return scores;
  } catch {
    await tx.query('ROLLBACK TO SAVEPOINT run_scores');
    return [];
  }
}

/**
 * The oldest run of an agent, or of a network, not yet ended (hops aside) with the concurrency of its version, when
 * none is in progress. Read from indexes of the runs still to end and of those in progress, so a long queue costs
 * no more than a short one.
 */
const queueHeadOf = (target: 'agent' | 'network') =>
  statement(
    `queue_head_of_${target}`,
    `SELECT r.id, v.concurrency FROM runs r JOIN ${target}_versions v ON v.${target}_id = r.${target}_id AND v.version = r.${target}_version
     WHERE r.${target}_id = $1 AND r.parent_run_id IS NULL AND r.status IN ('queued', 'in_progress')
       AND NOT EXISTS (SELECT 1 FROM runs a WHERE a.${target}_id = $1 AND a.parent_run_id IS NULL AND a.status = 'in_progress')
     ORDER BY r.created_at, r.id LIMIT 1`,
  );
const QUEUE_HEAD_OF_AGENT = queueHeadOf('agent');
const QUEUE_HEAD_OF_NETWORK = queueHeadOf('network');

/**
 * The next queued run of an agent or a network, when it is an `enqueue` run waiting its turn: null if a
 * run is still in progress, or if the next one is of a version that does not wait (it starts on its own).
 */
export async function nextQueuedRun(db: Queryable, targetId: string): Promise<string | null> {
  const { rows } = await db.query<{ id: string; concurrency: string }>(
    targetId.startsWith('net_') ? QUEUE_HEAD_OF_NETWORK : QUEUE_HEAD_OF_AGENT,
    [targetId],
  );
  return rows[0]?.concurrency === 'enqueue' ? rows[0].id : null;
}

/** What starting a run's workflow takes: `workerPool`, the task queue of its network's dedicated workers, if any. */
export interface RunToStart {
  id: string;
  projectId: string;
  network: boolean;
  workerPool: string | null;
}

/**
 * Runs queued for longer than `olderThanSeconds` whose workflow was never known to start: the API may have
 * died between commit and start, or Temporal been down. Runs waiting with a workflow of their own are not
 * candidates, however many. Taken in turns across projects (each project's oldest first, then each one's
 * second, …), so one project's backlog of lost starts cannot hold back another's. A network's hops are left
 * out: their network run starts them. `workerPool`: the task queue of the network's dedicated workers, for a
 * network run whose network has one.
 */
export async function staleQueuedRuns(db: Queryable, olderThanSeconds: number, limit: number): Promise<RunToStart[]> {
  const { rows } = await db.query<RunToStart>(
    `SELECT id, project_id AS "projectId", network, "workerPool" FROM (
       SELECT r.id, r.project_id, r.created_at, r.network_id IS NOT NULL AS network, v.worker_pool AS "workerPool",
              row_number() OVER (PARTITION BY r.project_id ORDER BY r.created_at, r.id) AS turn
       FROM runs r LEFT JOIN network_versions v ON v.network_id = r.network_id AND v.version = r.network_version
       WHERE r.status = 'queued' AND r.parent_run_id IS NULL AND r.workflow_started_at IS NULL
         AND r.created_at < now() - make_interval(secs => $1)
     ) candidates ORDER BY turn, created_at LIMIT $2`,
    [olderThanSeconds, limit],
  );
  return rows;
}

/** Marks the runs an `interrupt` run replaces, in the transaction that admits it: their cancellation is owed. */
export async function requestInterrupts(tx: Queryable, runIds: string[]): Promise<void> {
  if (runIds.length === 0) return;
  await tx.query('UPDATE runs SET interrupt_requested_at = now() WHERE id = ANY($1) AND interrupt_requested_at IS NULL', [runIds]);
}

/** Clears a run's mark once Temporal has its cancellation (or it ended without a workflow): nothing more is owed. */
export async function recordInterruptSent(db: Queryable, runId: string): Promise<void> {
  await db.query('UPDATE runs SET interrupt_requested_at = NULL WHERE id = $1 AND interrupt_requested_at IS NOT NULL', [runId]);
}

/** A run whose interruption is owed: its id, and whether it is a network run (its workflow is named so). */
export interface RunToInterrupt {
  id: string;
  projectId: string;
  network: boolean;
}

/**
 * Runs still to end whose interruption was asked for more than `olderThanSeconds` ago and never reached Temporal
 * (it was unreachable then). Taken in turns across projects, as missed starts are.
 */
export async function interruptsLeft(db: Queryable, olderThanSeconds: number, limit: number): Promise<RunToInterrupt[]> {
  const { rows } = await db.query<RunToInterrupt>(
    `SELECT id, project_id AS "projectId", network FROM (
       SELECT id, project_id, interrupt_requested_at, network_id IS NOT NULL AS network,
              row_number() OVER (PARTITION BY project_id ORDER BY interrupt_requested_at, id) AS turn
       FROM runs
       WHERE interrupt_requested_at IS NOT NULL AND status IN ('queued', 'in_progress')
         AND interrupt_requested_at < now() - make_interval(secs => $1)
     ) candidates ORDER BY turn, interrupt_requested_at LIMIT $2`,
    [olderThanSeconds, limit],
  );
  return rows;
}

/**
 * Every top-level run still queued or in progress, oldest first, as its workflow would be started. A network's
 * hops are left out: their network run starts them.
 */
export async function runsInFlight(db: Queryable): Promise<RunToStart[]> {
  const { rows } = await db.query<RunToStart>(
    `SELECT r.id, r.project_id AS "projectId", r.network_id IS NOT NULL AS network, v.worker_pool AS "workerPool"
     FROM runs r LEFT JOIN network_versions v ON v.network_id = r.network_id AND v.version = r.network_version
     WHERE r.status IN ('queued', 'in_progress') AND r.parent_run_id IS NULL ORDER BY r.created_at, r.id`,
  );
  return rows;
}

/**
 * Queued runs whose turn has come and which still wait for it: each the oldest run of its agent (or network), and
 * of its thread, still to end, with a workflow started more than `waitedSeconds` ago. The run ahead of an `enqueue` run wakes it
 * as it ends; these are the ones whose wake was lost (Temporal unreachable at that moment). Taken in turns
 * across projects, as `staleQueuedRuns` are.
 */
export async function waitingQueueHeads(db: Queryable, waitedSeconds: number, limit: number): Promise<{ id: string; network: boolean }[]> {
  const { rows } = await db.query<{ id: string; network: boolean }>(
    `SELECT id, network FROM (
       SELECT r.id, r.created_at, r.network_id IS NOT NULL AS network,
              row_number() OVER (PARTITION BY r.project_id ORDER BY r.created_at, r.id) AS turn
       FROM runs r
       WHERE r.status = 'queued' AND r.parent_run_id IS NULL AND r.workflow_started_at < now() - make_interval(secs => $1)
         AND NOT EXISTS (
           SELECT 1 FROM runs a
           WHERE r.network_id IS NULL AND a.agent_id = r.agent_id AND a.parent_run_id IS NULL
             AND a.status IN ('queued', 'in_progress') AND (a.created_at, a.id) < (r.created_at, r.id)
         )
         AND NOT EXISTS (
           SELECT 1 FROM runs a
           WHERE a.network_id = r.network_id AND a.parent_run_id IS NULL
             AND a.status IN ('queued', 'in_progress') AND (a.created_at, a.id) < (r.created_at, r.id)
         )
         AND NOT EXISTS (
           SELECT 1 FROM runs a
           WHERE a.thread_id = r.thread_id AND a.status IN ('queued', 'in_progress') AND (a.created_at, a.id) < (r.created_at, r.id)
         )
     ) heads ORDER BY turn, created_at LIMIT $2`,
    [waitedSeconds, limit],
  );
  return rows;
}

const RUN_WORKFLOW_STARTED = statement(
  'run_workflow_started',
  'UPDATE runs SET workflow_started_at = now() WHERE id = $1 AND workflow_started_at IS NULL',
);

/** The run's workflow is known to exist: maintenance need not start it again. */
export async function recordRunWorkflowStarted(db: Queryable, runId: string): Promise<void> {
  await db.query(RUN_WORKFLOW_STARTED, [runId]);
}
