/**
 * The scores of finished runs, one per run and scorer: the heuristics are scored in the transaction that
 * finishes a run (so no run ends unscored), the judge and people add theirs later. Each row carries the
 * run's attribution, for analytics. Scoring again replaces a scorer's row.
 */
import { statement, type Queryable } from './db.js';
import { heuristicScores, HEURISTIC_SCORERS, type FinishedRun, type HeuristicScorer, type Score } from './run-scorers.js';
import type { ChatMessage } from '../models/messages.js';
import type { Citation } from './run-steps.js';

export type { Score } from './run-scorers.js';

export interface RunScoreRecord extends Score {
  run_id: string;
  scored_at: Date;
}

/** What groundedness reads of a run's attachments at most: their first pages, and the start of each. */
const MAX_PAGES = 100;
const MAX_PAGE_CHARS = 20_000;

/** A finished run's duration (RunRow's `duration_ms`), as a column of the runs table read or returned. */
export const DURATION_MS = '(extract(epoch FROM completed_at - created_at) * 1000)::float8 AS duration_ms';

/** What the heuristics read of the run's own row. */
export interface RunRow {
  project_id: string;
  status: string;
  output_text: string;
  input: { role: string; content: unknown }[];
  file_ids: string[];
  duration_ms: number;
}

/** What the heuristics read of a finished run; null when the run is not finished (or not there). */
export async function finishedRunOf(db: Queryable, runId: string): Promise<FinishedRun | null> {
  const { rows } = await db.query<RunRow>(
    `SELECT project_id, status, output_text, input, file_ids, ${DURATION_MS}
     FROM runs WHERE id = $1 AND completed_at IS NOT NULL AND status IN ('completed', 'failed', 'cancelled')`,
    [runId],
  );
  return rows[0] ? finishedRunFrom(db, runId, rows[0]) : null;
}

const TOOL_CALLS_OF_RUN = statement(
  'tool_calls_of_run',
  `SELECT is_error, message, citations FROM run_steps
     WHERE (run_id = $1 OR run_id IN (SELECT id FROM runs WHERE parent_run_id = $1)) AND type = 'tool_call' AND status IN ('completed', 'failed')
     ORDER BY run_id, index`,
);

/** What the heuristics read of a finished run whose row is at hand: its tool calls and what it answered from. */
async function finishedRunFrom(db: Queryable, runId: string, run: RunRow): Promise<FinishedRun> {
  // A network run answers for everything its hops did.
  const steps = await db.query<{ is_error: boolean; message: ChatMessage | null; citations: Citation[] | null }>(TOOL_CALLS_OF_RUN, [
    runId,
  ]);
  const context: string[] = [];
  for (const step of steps.rows) {
    if (step.message?.role === 'tool' && !step.is_error) context.push(step.message.content);
    for (const citation of step.citations ?? []) context.push(citation.quote);
  }
  if (run.file_ids.length > 0) {
    // The first pages of the attachments, in the order given: bounded however long the files are.
    const pages = await db.query<{ text: string }>(
      `SELECT left(p.text, $3) AS text FROM file_pages p JOIN files f ON f.id = p.file_id
       WHERE f.project_id = $1 AND f.id = ANY($2) ORDER BY array_position($2, f.id), p.page_number LIMIT $4`,
      [run.project_id, run.file_ids, MAX_PAGE_CHARS, MAX_PAGES],
    );
    context.push(...pages.rows.map((page) => page.text));
  }
  return {
    status: run.status as FinishedRun['status'],
    durationMs: Math.max(0, Math.round(run.duration_ms)),
    outputText: run.output_text,
    toolCalls: steps.rows.map((s) => ({ isError: s.is_error })),
    context,
    input: run.input.map((m) => (typeof m.content === 'string' ? m.content : '')),
  };
}

/**
 * Writes `scores` for the run (replacing each scorer's earlier row) with the run's attribution, and
 * removes the rows of `cleared` scorers (those with nothing to judge now). Nothing for a run not finished.
 */
export async function saveScores(db: Queryable, runId: string, scores: Score[], cleared: string[] = []): Promise<number> {
  if (cleared.length > 0) await db.query('DELETE FROM run_scores WHERE run_id = $1 AND scorer = ANY($2)', [runId, cleared]);
  const written = await insertScores(db, runId, scores);
  if (written > 0) await refreshAttribution(db, runId);
  return written;
}

const INSERT_SCORES = statement(
  'insert_scores',
  `INSERT INTO run_scores (run_id, scorer, project_id, value, explanation, agent_id, network_id, api_key_id, model, metadata, run_created_at, run_completed_at)
     SELECT r.id, s.scorer, r.project_id, s.value, s.explanation, r.agent_id, coalesce(r.network_id, p.network_id), r.api_key_id,
       coalesce(r.resolved_model, r.model), r.metadata, r.created_at, r.completed_at
     FROM runs r LEFT JOIN runs p ON p.id = r.parent_run_id, unnest($2::text[], $3::float8[], $4::text[]) AS s(scorer, value, explanation)
     WHERE r.id = $1 AND r.completed_at IS NOT NULL
     ON CONFLICT (run_id, scorer) DO UPDATE SET value = excluded.value, explanation = excluded.explanation, scored_at = now()`,
);

/** Writes `scores` with the run's attribution, each replacing its scorer's earlier row; the rows written. */
async function insertScores(db: Queryable, runId: string, scores: Score[]): Promise<number> {
  if (scores.length === 0) return 0;
  const { rowCount } = await db.query(INSERT_SCORES, [
    runId,
    scores.map((s) => s.scorer),
    scores.map((s) => s.value),
    scores.map((s) => s.explanation),
  ]);
  return rowCount ?? 0;
}

/** Copies the run's attribution into every score of it again, so that all of a run's scores group alike. */
async function refreshAttribution(db: Queryable, runId: string): Promise<void> {
  await db.query(
    `UPDATE run_scores s SET agent_id = r.agent_id, network_id = coalesce(r.network_id, p.network_id), api_key_id = r.api_key_id,
       model = coalesce(r.resolved_model, r.model), metadata = r.metadata, run_created_at = r.created_at, run_completed_at = r.completed_at
     FROM runs r LEFT JOIN runs p ON p.id = r.parent_run_id
     WHERE s.run_id = $1 AND r.id = $1 AND r.completed_at IS NOT NULL
       AND (s.run_completed_at, s.run_created_at, s.model, s.metadata) IS DISTINCT FROM (r.completed_at, r.created_at, coalesce(r.resolved_model, r.model), r.metadata)`,
    [runId],
  );
}

/** Scores a finished run with the chosen heuristics (all by default), answering the scores; null when the run is not finished. */
export async function scoreFinishedRun(
  db: Queryable,
  runId: string,
  scorers: readonly HeuristicScorer[] = HEURISTIC_SCORERS,
): Promise<Score[] | null> {
  const run = await finishedRunOf(db, runId);
  if (!run) return null;
  const scores = heuristicScores(run, scorers);
  await saveScores(
    db,
    runId,
    scores,
    scorers.filter((name) => !scores.some((s) => s.scorer === name)),
  );
  return scores;
}

/**
 * Scores a run with every heuristic in the transaction that ends it, from the row that ending returned. No score
 * of the run can be there yet (a score is only written for a finished run), so none is cleared or attributed again.
 */
export async function scoreEndingRun(db: Queryable, runId: string, run: RunRow): Promise<Score[]> {
  const scores = heuristicScores(await finishedRunFrom(db, runId, run), HEURISTIC_SCORERS);
  await insertScores(db, runId, scores);
  return scores;
}

const COLUMNS = 'run_id, scorer, value, explanation, scored_at';
const ORDER = `ORDER BY array_position(ARRAY['completion', 'latency', 'tool_errors', 'non_empty', 'groundedness', 'judge']::text[], scorer) NULLS LAST, scorer`;

const SCORES_OF = statement('scores_of', `SELECT ${COLUMNS} FROM run_scores WHERE run_id = $1 ${ORDER}`);

export async function scoresOf(db: Queryable, runId: string): Promise<RunScoreRecord[]> {
  const { rows } = await db.query<RunScoreRecord>(SCORES_OF, [runId]);
  return rows;
}

export async function scoresOfRuns(db: Queryable, runIds: string[]): Promise<Map<string, RunScoreRecord[]>> {
  const byRun = new Map<string, RunScoreRecord[]>();
  if (runIds.length === 0) return byRun;
  const { rows } = await db.query<RunScoreRecord>(`SELECT ${COLUMNS} FROM run_scores WHERE run_id = ANY($1) ${ORDER}`, [runIds]);
  for (const row of rows) byRun.set(row.run_id, [...(byRun.get(row.run_id) ?? []), row]);
  return byRun;
}

export async function hasScore(db: Queryable, runId: string, scorer: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM run_scores WHERE run_id = $1 AND scorer = $2', [runId, scorer]);
  return rowCount === 1;
}
