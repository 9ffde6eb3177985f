/**
 * The steps of a run: each model call and tool call, with the message it added to the conversation. A
 * step is completed once: usage and cost reach the run's totals in the transaction that completes it, so
 * a retried activity never counts a call twice.
 */
import type { ChatMessage, TokenUsage, ToolCall } from '../models/messages.js';
import { activeCopyRunOf, clearCopies, clearedMiss, holdCopiesOf } from './experiment-copies.js';
import { byBytes, PAGE_BYTES, pageByBytes, type Sized } from './byte-pages.js';
import { statement, type Queryable } from './db.js';
import { appendRunEvent, RUN_EVENTS_CHANNEL } from './run-events.js';
import { announceReached, OPEN_THRESHOLD_BUDGETS } from './budgets.js';
import { newId } from './ids.js';
import { releaseReservation } from './cost-caps.js';
import { recordUsage } from './usage.js';
import type { RunError } from './runs.js';

/** A passage a tool's answer rests on: the file, and its page or the time span of an audio file. */
export interface Citation {
  file_id: string;
  filename: string;
  page: number | null;
  start_ms: number | null;
  end_ms: number | null;
  quote: string;
}

/** A task of a remote agent, as the step that started it keeps it. */
export interface RemoteTask {
  task_id: string;
  context_id: string;
  /** The run the task was on the remote side, when the agent reported its cost (tools/a2a-client.ts). */
  run_id?: string;
}

/** A remote run's cost, as its agent reported it: charged to the calling run as the ledger's source `a2a`. */
export interface RemoteCharge {
  /** The run on the remote side, if it said. */
  remoteRunId: string | null;
  /** USD, an exact decimal. */
  costUsd: string;
  inputTokens: number;
  outputTokens: number;
}

export type StepStatus = 'in_progress' | 'completed' | 'failed' | 'cancelled';

export interface RunStepRecord {
  run_id: string;
  index: number;
  type: 'model_call' | 'tool_call';
  status: StepStatus;
  attempt: number;
  model: string | null;
  provider: string | null;
  price_version: string | null;
  input_tokens: number;
  output_tokens: number;
  cached_tokens: number;
  cost: string;
  tool_call: ToolCall | null;
  message: ChatMessage | null;
  is_error: boolean;
  citations: Citation[] | null;
  /** A call of an A2A tool: the remote agent's task it started. */
  remote_task: RemoteTask | null;
  /** A tool call an experiment answered from its item's recorded calls: the index of the call that answered it. */
  replayed_from: number | null;
  /** Its message and tool call were cleared past their retention (records/retention.ts). */
  payload_expired: boolean;
  error: RunError | null;
  started_at: Date;
  completed_at: Date | null;
  /** A tool call that needed approval: its approval (read with a page of steps only). */
  approval?: { id: string; status: string } | null;
}

const COLUMNS = `run_id, index, type, status, attempt, model, provider, price_version, input_tokens, output_tokens, cached_tokens,
  trim_scale(cost)::text AS cost, tool_call, message, is_error, citations, remote_task, replayed_from, error, started_at, completed_at, payload_expired`;

const STEPS_OF = statement('steps_of', `SELECT ${COLUMNS} FROM run_steps WHERE run_id = $1 ORDER BY index`);

export async function stepsOf(db: Queryable, runId: string): Promise<RunStepRecord[]> {
  const { rows } = await db.query<RunStepRecord>(STEPS_OF, [runId]);
  return rows;
}

export async function findStep(db: Queryable, runId: string, index: number): Promise<RunStepRecord | null> {
  const { rows } = await db.query<RunStepRecord>(`SELECT ${COLUMNS} FROM run_steps WHERE run_id = $1 AND index = $2`, [runId, index]);
  return rows[0] ?? null;
}

// The step, and its step.started event with the attempt it is, in one statement (appendRunEvent's).
const BEGIN_STEP = statement(
  'begin_step',
  `WITH begun AS (
       INSERT INTO run_steps (run_id, index, type, status, model, provider, tool_call) VALUES ($1, $2, $3, 'in_progress', $4, $5, $6)
         ON CONFLICT (run_id, index) DO UPDATE SET attempt = run_steps.attempt + 1, started_at = now(), model = EXCLUDED.model, provider = EXCLUDED.provider
         RETURNING attempt),
     next AS (UPDATE runs SET event_seq = event_seq + 1 WHERE id = $1 RETURNING event_seq, parent_run_id),
     appended AS (
       INSERT INTO run_events (run_id, seq, type, data)
         SELECT $1, next.event_seq, 'step.started', $7::jsonb || jsonb_build_object('attempt', begun.attempt) FROM next, begun
         RETURNING seq)
   SELECT begun.attempt, next.parent_run_id, pg_notify($8, $1 || ' step.started') FROM begun, next, appended`,
);

/**
 * Starts (or, on a retried activity, restarts) a step. A restart counts the attempt and announces the
 * step again, so a client streaming its text knows to start that step's text over.
 */
export async function beginStep(
  tx: Queryable,
  runId: string,
  index: number,
  step: { type: 'model_call'; model: string; provider: string } | { type: 'tool_call'; toolCall: ToolCall },
): Promise<void> {
  const model = step.type === 'model_call' ? step.model : null;
  const provider = step.type === 'model_call' ? step.provider : null;
  const toolCall = step.type === 'tool_call' ? step.toolCall : null;
  const data = { step: index, step_type: step.type, ...(model ? { model } : {}), ...(toolCall ? { tool_call: toolCall } : {}) };
  const { rows } = await tx.query<{ attempt: number; parent_run_id: string | null }>(BEGIN_STEP, [
    runId,
    index,
    step.type,
    model,
    provider,
    toolCall,
    JSON.stringify(data),
    RUN_EVENTS_CHANNEL,
  ]);
  // A hop's events are its network run's too, tagged with the hop's run (appendRunEvent's rule).
  const { attempt, parent_run_id: parent } = rows[0]!;
  if (parent) await appendRunEvent(tx, parent, 'step.started', { ...data, attempt, child_run_id: runId });
}

export interface PriceApplied {
  version: string;
  input_per_million: string;
  output_per_million: string;
  cached_input_per_million: string;
}

const COST = 'usage_cost($4::bigint, $6::bigint, $5::bigint, $8::numeric, $9::numeric, $10::numeric)';

// The step, its reservation released, its ledger row, the run's totals and the step's events (the reply's tool
// calls, then step.completed with the cost) in one statement, with the budgets the row may have made reach a
// threshold: one round trip where there were six.
const COMPLETE_MODEL_STEP = statement(
  'complete_model_step',
  `WITH step AS (
       UPDATE run_steps s SET status = 'completed', completed_at = now(), message = $3, input_tokens = $4::bigint, output_tokens = $5::bigint,
           cached_tokens = $6::bigint, price_version = $7, cost = ${COST}
         FROM runs r
         WHERE s.run_id = $1 AND s.index = $2 AND s.status <> 'completed' AND r.id = s.run_id
         RETURNING s.cost, s.model, s.provider, s.started_at, r.project_id, r.agent_id, r.network_id, r.api_key_id, r.metadata, r.parent_run_id),
     released AS (DELETE FROM cost_reservations WHERE run_id = $1 AND step_index = $2 AND EXISTS (SELECT 1 FROM step)),
     ledger AS (
       INSERT INTO usage_records (id, project_id, source, run_id, step_index, agent_id, network_id, api_key_id, model, provider,
           price_version, input_tokens, output_tokens, cached_tokens, cost, metadata, created_at)
         SELECT $11, step.project_id, 'run', $1, $2, step.agent_id, COALESCE(step.network_id, p.network_id), step.api_key_id, step.model,
           COALESCE(step.provider, ''), $7, $4::bigint, $5::bigint, $6::bigint, ${COST}, COALESCE(step.metadata, '{}'), step.started_at
         FROM step LEFT JOIN runs p ON p.id = step.parent_run_id
         ON CONFLICT DO NOTHING
         RETURNING project_id, agent_id, api_key_id),
     totals AS (
       UPDATE runs SET input_tokens = input_tokens + $4, output_tokens = output_tokens + $5, cached_tokens = cached_tokens + $6,
           cost = runs.cost + step.cost, event_seq = event_seq + cardinality($12::text[])
         FROM step WHERE runs.id = $1
         RETURNING runs.event_seq),
     appended AS (
       INSERT INTO run_events (run_id, seq, type, data)
         SELECT $1, totals.event_seq - cardinality($12::text[]) + e.n, e.type,
           CASE WHEN e.type = 'step.completed' THEN e.data::jsonb || jsonb_build_object('cost', trim_scale(step.cost)::text) ELSE e.data::jsonb END
         FROM totals, step, unnest($12::text[], $13::text[]) WITH ORDINALITY AS e(type, data, n)
         RETURNING type),
     notified AS (SELECT pg_notify($14, $1 || ' ' || t.type) FROM (SELECT DISTINCT type FROM appended) t)
   SELECT trim_scale(step.cost)::text AS cost, step.project_id, step.parent_run_id, (SELECT count(*) FROM notified)::int AS notified,
     coalesce((SELECT ${OPEN_THRESHOLD_BUDGETS('l.project_id', 'l.api_key_id', 'array_remove(ARRAY[l.agent_id], NULL)')} FROM ledger l), '{}') AS open_budgets
   FROM step`,
);

/**
 * Completes a model call with its reply and usage, charged at `price`; false when the step was already
 * completed (nothing is added twice). Cached input tokens are charged at the cached price and the rest of
 * the input at the input price; the arithmetic is PostgreSQL's exact numeric. The call's ledger row, the run's
 * totals and the step's events are written with it; then the budget thresholds the row reached are announced.
 */
export async function completeModelStep(
  tx: Queryable,
  runId: string,
  index: number,
  message: ChatMessage,
  usage: TokenUsage,
  price: PriceApplied,
): Promise<boolean> {
  const events: { type: string; data: Record<string, unknown> }[] = [
    ...(message.role === 'assistant' ? (message.tool_calls ?? []) : []).map((call) => ({
      type: 'tool_call',
      data: { step: index, tool_call: call },
    })),
    { type: 'step.completed', data: { step: index, step_type: 'model_call', usage, price_version: price.version } },
  ];
  const { rows } = await tx.query<{ cost: string; project_id: string; parent_run_id: string | null; open_budgets: string[] }>(
    COMPLETE_MODEL_STEP,
    [
      runId,
      index,
      message,
      usage.input_tokens,
      usage.output_tokens,
      usage.cached_tokens,
      price.version,
      price.input_per_million,
      price.cached_input_per_million,
      price.output_per_million,
      newId('usage'),
      events.map((e) => e.type),
      events.map((e) => JSON.stringify(e.data)),
      RUN_EVENTS_CHANNEL,
    ],
  );
  const charged = rows[0];
  if (!charged) return false;
  await announceReached(tx, charged.project_id, charged.open_budgets);
  // A hop's events are its network run's too, tagged with the hop's run (appendRunEvent's rule).
  if (charged.parent_run_id) {
    for (const { type, data } of events) {
      const logged = type === 'step.completed' ? { ...data, cost: charged.cost } : data;
      await appendRunEvent(tx, charged.parent_run_id, type, { ...logged, child_run_id: runId });
    }
  }
  return true;
}

/** Keeps the remote task a tool call started on its step, as soon as it exists: a retried call follows it. */
export async function recordRemoteTask(db: Queryable, runId: string, index: number, task: RemoteTask): Promise<void> {
  await db.query(`UPDATE run_steps SET remote_task = $3 WHERE run_id = $1 AND index = $2 AND status = 'in_progress'`, [runId, index, task]);
}

/**
 * Completes a tool call with its result; false when the step was already completed. What a remote agent reported
 * its task cost (`charge`) reaches the step, the ledger and the run's totals here, once.
 */
export async function completeToolStep(
  tx: Queryable,
  runId: string,
  index: number,
  message: Extract<ChatMessage, { role: 'tool' }>,
  citations: Citation[] = [],
  charge?: RemoteCharge,
): Promise<boolean> {
  const { rows } = await tx.query<{ project_id: string }>(
    `UPDATE run_steps s SET status = 'completed', completed_at = now(), message = $3, is_error = $4, citations = $5
     FROM runs r WHERE s.run_id = $1 AND s.index = $2 AND s.status <> 'completed' AND r.id = s.run_id
     RETURNING r.project_id`,
    [runId, index, message, message.is_error ?? false, citations.length > 0 ? JSON.stringify(citations) : null],
  );
  if (rows.length !== 1) return false;
  if (charge) await chargeRemoteCost(tx, rows[0]!.project_id, runId, index, message.name, charge);
  // The result itself stays on the step alone: a reader of the log gets it from there (runEventsAfter).
  await appendRunEvent(tx, runId, 'step.completed', { step: index, step_type: 'tool_call', is_error: message.is_error ?? false });
  return true;
}

/** A remote agent's reported cost, as the step's, a ledger row of source `a2a` and part of the run's totals. */
async function chargeRemoteCost(tx: Queryable, projectId: string, runId: string, index: number, tool: string, charge: RemoteCharge) {
  await tx.query(
    `UPDATE run_steps SET input_tokens = $3, output_tokens = $4, cost = $5::numeric,
       remote_task = CASE WHEN $6::text IS NULL THEN remote_task ELSE coalesce(remote_task, '{}') || jsonb_build_object('run_id', $6::text) END
     WHERE run_id = $1 AND index = $2`,
    [runId, index, charge.inputTokens, charge.outputTokens, charge.costUsd, charge.remoteRunId],
  );
  const usage = { input_tokens: charge.inputTokens, output_tokens: charge.outputTokens, cached_tokens: 0 };
  await recordUsage(tx, {
    projectId,
    source: 'a2a',
    runId,
    stepIndex: index,
    model: tool,
    provider: 'a2a',
    usage,
    price: { version: 'reported', input_per_million: '0', output_per_million: '0', cached_input_per_million: '0' },
    cost: charge.costUsd,
    remoteRunId: charge.remoteRunId,
  });
  await tx.query(
    `UPDATE runs SET input_tokens = input_tokens + $2, output_tokens = output_tokens + $3, cost = cost + $4::numeric WHERE id = $1`,
    [runId, charge.inputTokens, charge.outputTokens, charge.costUsd],
  );
}

export async function failStep(
  tx: Queryable,
  runId: string,
  index: number,
  status: 'failed' | 'cancelled',
  error: RunError,
): Promise<void> {
  const { rowCount } = await tx.query(
    `UPDATE run_steps SET status = $3, completed_at = now(), error = $4 WHERE run_id = $1 AND index = $2 AND status = 'in_progress'`,
    [runId, index, status, error],
  );
  if (rowCount !== 1) return;
  await releaseReservation(tx, runId, index);
  await appendRunEvent(tx, runId, status === 'failed' ? 'step.failed' : 'step.cancelled', { step: index, error });
}

export interface StepPage {
  steps: RunStepRecord[];
  hasMore: boolean;
  /** When the step before the page ended (its timing rests on it); undefined on the first page. */
  before?: Pick<RunStepRecord, 'completed_at'>;
}

// A step's size is its message and tool call: a tool's result can be 1 MiB, and a run 50 steps.
const STEP_PAGE = statement(
  'step_page',
  byBytes(
    `SELECT ${COLUMNS},
       (SELECT jsonb_build_object('id', a.id, 'status', a.status) FROM approvals a WHERE a.run_id = s.run_id AND a.step_index = s.index) AS approval,
       coalesce(octet_length(message::text), 0) + coalesce(octet_length(tool_call::text), 0) AS size
     FROM run_steps s WHERE run_id = $1 AND index > $2 ORDER BY index LIMIT $3`,
    'index',
    '$4',
  ),
);

/**
 * A page of a run's steps in order: those after step `afterIndex` (from the first when undefined), `limit` of them
 * or fewer where PAGE_BYTES was reached.
 */
export async function stepPage(db: Queryable, runId: string, afterIndex: number | undefined, limit: number): Promise<StepPage> {
  const { rows } = await db.query<Sized<RunStepRecord>>(STEP_PAGE, [runId, afterIndex ?? -1, limit + 1, PAGE_BYTES]);
  const { rows: steps, hasMore } = pageByBytes<RunStepRecord>(rows, limit);
  const page: StepPage = { steps, hasMore };
  if (afterIndex !== undefined) {
    const previous = await db.query<Pick<RunStepRecord, 'completed_at'>>(
      'SELECT completed_at FROM run_steps WHERE run_id = $1 AND index <= $2 ORDER BY index DESC LIMIT 1',
      [runId, afterIndex],
    );
    page.before = previous.rows[0];
  }
  return page;
}

/** How many steps a run has. */
export async function stepCountOf(db: Queryable, runId: string): Promise<number> {
  const { rows } = await db.query<{ count: number }>('SELECT count(*)::int AS count FROM run_steps WHERE run_id = $1', [runId]);
  return rows[0]!.count;
}

const CITATIONS_OF_STEPS = statement(
  'citations_of_steps',
  'SELECT citations FROM run_steps WHERE run_id = $1 AND citations IS NOT NULL ORDER BY index',
);

/** The passages a run's tool calls cited, step by step: read without the steps' messages. */
export async function citationsOfSteps(db: Queryable, runId: string): Promise<Citation[][]> {
  const { rows } = await db.query<{ citations: Citation[] }>(CITATIONS_OF_STEPS, [runId]);
  return rows.map((r) => r.citations);
}

/** The runs made on a thread or for a subject, and their network runs' hops: a subquery on $1 (the project) and $2. */
function runsMadeSql(made: { threadId: string } | { subjectId: string }): { runs: string; value: string } {
  // A trusted column name: which runs are meant.
  const column = 'threadId' in made ? 'thread_id' : 'subject_id';
  return {
    runs: `SELECT id FROM runs WHERE project_id = $1 AND (${column} = $2 OR parent_run_id IN (SELECT id FROM runs WHERE project_id = $1 AND ${column} = $2))`,
    value: 'threadId' in made ? made.threadId : made.subjectId,
  };
}

/**
 * The run of an experiment item copied from the runs made on the thread or for the subject, while the item has not
 * ended (its run going, or its scores being written): until it has, their conversation is not cleared.
 */
export function activeExperimentRunOf(
  db: Queryable,
  projectId: string,
  made: { threadId: string } | { subjectId: string },
): Promise<{ id: string } | null> {
  const { runs, value } = runsMadeSql(made);
  return activeCopyRunOf(db, projectId, runs, value);
}

export interface ConversationsCleared {
  /** The runs made on the thread or for the subject, hops included. */
  runs: number;
  /** The experiment items copied from them, cleared now. */
  experimentItems: number;
}

/**
 * Clears the conversation of the runs made on a thread, or for a subject, and of their network runs' hops: their
 * input, output and steps' messages and tool calls, as retention clears step payloads. The runs stay, with their
 * usage, cost, timing and scores. The dataset items taken from those runs are deleted (each is a copy of the
 * conversation), and their datasets' counts follow. The experiment items copied from them lose their copy, and their
 * own runs (which were given it) are cleared as these are; they keep their status, scores, cost and latency.
 */
export async function clearConversations(
  tx: Queryable,
  projectId: string,
  made: { threadId: string } | { subjectId: string },
): Promise<ConversationsCleared> {
  const { runs, value } = runsMadeSql(made);
  // The runs are held first, so that the statements below see every dataset item taken from them (one being added
  // holds its run until it commits: holdSourceRuns) and every experiment item copied from one (an experiment being
  // made holds its items' source runs the same way).
  const held = await tx.query<{ id: string }>(`${runs} ORDER BY id FOR UPDATE`, [projectId, value]);
  const sources = held.rows.map((run) => run.id);
  const copies = await holdCopiesOf(tx, projectId, sources);
  await tx.query(
    `WITH theirs AS (SELECT unnest($2::text[]) AS id),
     steps AS (UPDATE run_steps s SET message = NULL, tool_call = NULL, payload_expired = true, error = ${clearedMiss('s.error')}
                 FROM theirs WHERE s.run_id = theirs.id AND (NOT s.payload_expired OR s.error->>'code' = 'replay_miss')),
     items AS (DELETE FROM dataset_items i USING theirs WHERE i.project_id = $1 AND i.source_run_id = theirs.id RETURNING i.dataset_id),
     counts AS (UPDATE datasets d SET item_count = d.item_count - gone.n, updated_at = now()
                  FROM (SELECT dataset_id, count(*)::int AS n FROM items GROUP BY dataset_id) gone WHERE d.id = gone.dataset_id)
     UPDATE runs r SET input = '[]', output_text = '', error = ${clearedMiss('r.error')}, payloads_expired_at = coalesce(payloads_expired_at, now())
       FROM theirs WHERE r.id = theirs.id AND r.project_id = $1`,
    [projectId, [...sources, ...copies.runIds]],
  );
  return { runs: sources.length, experimentItems: await clearCopies(tx, copies.itemIds) };
}
