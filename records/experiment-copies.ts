/**
 * The experiment items copied from runs whose conversation is cleared (a thread deleted, a subject forgotten). An
 * item keeps a copy of its dataset item, which was taken from such a run, and its own run was given that input: both
 * lose the conversation as the source run does, and keep their status, scores, cost and latency.
 */
import type { Queryable } from './db.js';

/** The error code of a replayed call with no recorded answer, whose message quotes the call's arguments. */
const REPLAY_MISS = 'replay_miss';
const CLEARED_MISS = JSON.stringify({
  code: REPLAY_MISS,
  message: "A tool call had no recorded answer in the item's source run; its arguments were cleared with the conversation.",
});

/**
 * The items (aliased `e`) copied from the runs `runs` selects, in project $1: named by their source run, or, for items
 * made before items named it, through their dataset item while it exists.
 */
const copiedFrom = (runs: string) =>
  `e.project_id = $1 AND (e.source_run_id IN (${runs})
     OR e.dataset_item_id IN (SELECT d.id FROM dataset_items d WHERE d.project_id = $1 AND d.source_run_id IN (${runs})))`;

/**
 * The run of the first item copied from the runs `runs` selects (parameters $1, the project, and $2, as the caller's)
 * whose run is made and which has not ended (its run going, or its scores being written): while one is, their
 * conversation is not cleared, since the run, or the item's end, would write it again.
 */
export async function activeCopyRunOf(db: Queryable, projectId: string, runs: string, value: string): Promise<{ id: string } | null> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT e.run_id AS id FROM experiment_items e
      WHERE ${copiedFrom(runs)} AND e.run_id IS NOT NULL AND e.status IN ('queued', 'running') ORDER BY e.created_at LIMIT 1`,
    [projectId, value],
  );
  return rows[0] ?? null;
}

/**
 * Holds the items copied from `runIds` and their own runs (a network run's hops too) until the transaction ends,
 * and answers them. The items first, as the worker holds an item while it makes its run: an item whose run is being
 * made is waited for, and its run is then held with the rest.
 */
export async function holdCopiesOf(tx: Queryable, projectId: string, runIds: string[]): Promise<{ itemIds: string[]; runIds: string[] }> {
  if (runIds.length === 0) return { itemIds: [], runIds: [] };
  const items = await tx.query<{ id: string; run_id: string | null }>(
    `SELECT e.id, e.run_id FROM experiment_items e WHERE ${copiedFrom('SELECT unnest($2::text[])')} ORDER BY e.id FOR UPDATE`,
    [projectId, runIds],
  );
  const made = items.rows.flatMap((item) => (item.run_id ? [item.run_id] : []));
  const runs =
    made.length === 0
      ? []
      : (
          await tx.query<{ id: string }>(
            'SELECT id FROM runs WHERE project_id = $1 AND (id = ANY($2::text[]) OR parent_run_id = ANY($2::text[])) ORDER BY id FOR UPDATE',
            [projectId, made],
          )
        ).rows.map((run) => run.id);
  return { itemIds: items.rows.map((item) => item.id), runIds: runs };
}

/**
 * Clears the items' copy of the conversation: input, expected answer, recorded tool calls and the tools offered, the
 * output, the scores' explanations (which may quote the expected answer), and a replay miss's quoted arguments. How
 * many items were cleared now (those cleared before are not counted again).
 */
export async function clearCopies(tx: Queryable, itemIds: string[]): Promise<number> {
  if (itemIds.length === 0) return 0;
  const { rowCount } = await tx.query(
    `UPDATE experiment_items SET input = '[]', expected = NULL, tool_calls = NULL, tool_specs = NULL,
        output = CASE WHEN output IS NULL THEN NULL ELSE '' END,
        scores = (SELECT coalesce(jsonb_agg(s.score || '{"explanation": ""}' ORDER BY s.n), '[]')
                    FROM jsonb_array_elements(scores) WITH ORDINALITY AS s(score, n)),
        error = ${clearedMiss('error')},
        payloads_cleared_at = now()
      WHERE id = ANY($1::text[]) AND payloads_cleared_at IS NULL`,
    [itemIds],
  );
  return rowCount ?? 0;
}

/** SQL: the error in `column`, its message cleared when it is a replay miss (which quotes the call's arguments). */
export const clearedMiss = (column: string) =>
  `CASE WHEN ${column}->>'code' = '${REPLAY_MISS}' THEN '${CLEARED_MISS.replace(/'/g, "''")}'::jsonb ELSE ${column} END`;
