/**
 * Scoring a past range of finished runs again: the request, and the place its workflow has reached, kept as
 * a keyset cursor over (completed_at, id) so that each batch picks up where the last one committed.
 */
import type { Queryable } from './db.js';
import { newId } from './ids.js';

export type BackfillStatus = 'in_progress' | 'completed' | 'failed';

export interface QualityBackfillRecord {
  id: string;
  project_id: string;
  status: BackfillStatus;
  start_time: Date;
  end_time: Date;
  scorers: string[];
  runs_total: number;
  runs_scored: number;
  error: { code: string; message: string } | null;
  created_at: Date;
  completed_at: Date | null;
}

const COLUMNS = 'id, project_id, status, start_time, end_time, scorers, runs_total, runs_scored, error, created_at, completed_at';
const FINISHED = `status IN ('completed', 'failed', 'cancelled')`;

/** A new backfill over runs that ended in [start, end) (Unix seconds), counting them as it stands now. */
export async function insertBackfill(
  tx: Queryable,
  projectId: string,
  range: { start: number; end: number },
  scorers: string[],
): Promise<QualityBackfillRecord> {
  const { rows } = await tx.query<QualityBackfillRecord>(
    `INSERT INTO quality_backfills (id, project_id, status, start_time, end_time, scorers, runs_total)
     SELECT $1, $2, 'in_progress', to_timestamp($3), to_timestamp($4), $5, count(*)::integer FROM runs
     WHERE project_id = $2 AND completed_at >= to_timestamp($3) AND completed_at < to_timestamp($4) AND ${FINISHED}
     RETURNING ${COLUMNS}`,
    [newId('qbf'), projectId, range.start, range.end, scorers],
  );
  return rows[0]!;
}

export async function findBackfill(db: Queryable, projectId: string, id: string): Promise<QualityBackfillRecord | null> {
  const { rows } = await db.query<QualityBackfillRecord>(`SELECT ${COLUMNS} FROM quality_backfills WHERE id = $1 AND project_id = $2`, [
    id,
    projectId,
  ]);
  return rows[0] ?? null;
}

/** For the worker, which knows a backfill by id alone. */
export async function backfillById(db: Queryable, id: string): Promise<QualityBackfillRecord | null> {
  const { rows } = await db.query<QualityBackfillRecord>(`SELECT ${COLUMNS} FROM quality_backfills WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

/** The next `limit` finished runs of the range after the backfill's cursor, in (completed_at, id) order. */
export async function nextRunsToScore(db: Queryable, backfillId: string, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT r.id FROM quality_backfills b JOIN runs r ON r.project_id = b.project_id
     WHERE b.id = $1 AND r.completed_at >= b.start_time AND r.completed_at < b.end_time AND r.${FINISHED}
       AND (b.after_run_id IS NULL OR (r.completed_at, r.id) > (b.after_completed_at, b.after_run_id))
     ORDER BY r.completed_at, r.id LIMIT $2`,
    [backfillId, limit],
  );
  return rows.map((r) => r.id);
}

/** Moves the cursor past `lastRunId`, counting `scored` more runs, with the batch's scores. */
export async function advanceBackfill(tx: Queryable, backfillId: string, lastRunId: string, scored: number): Promise<void> {
  await tx.query(
    `UPDATE quality_backfills SET after_run_id = $2, after_completed_at = (SELECT completed_at FROM runs WHERE id = $2), runs_scored = runs_scored + $3
     WHERE id = $1`,
    [backfillId, lastRunId, scored],
  );
}

export async function finishBackfill(
  db: Queryable,
  backfillId: string,
  status: Exclude<BackfillStatus, 'in_progress'>,
  error: { code: string; message: string } | null = null,
): Promise<void> {
  await db.query(`UPDATE quality_backfills SET status = $2, error = $3, completed_at = now() WHERE id = $1 AND status = 'in_progress'`, [
    backfillId,
    status,
    error,
  ]);
}

/** Whether the run's `scorer` score was written at or after `since` (a judge call a retried batch need not repeat). */
export async function scoredSince(db: Queryable, runId: string, scorer: string, since: Date): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM run_scores WHERE run_id = $1 AND scorer = $2 AND scored_at >= $3', [
    runId,
    scorer,
    since,
  ]);
  return rowCount === 1;
}
