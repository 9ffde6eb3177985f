/** What a comparison reads of an experiment: its completed items, each with its scores, cost and latency. */
import type { Queryable } from './db.js';
import type { ComparedItem } from './experiment-comparison.js';

interface ItemRow {
  dataset_item_id: string;
  run_id: string | null;
  scores: { scorer: string; value: number }[];
  cost_usd: number | null;
  latency_ms: number | null;
}

/** An experiment holds at most a thousand items, so all of them are read at once. */
export async function completedItemsOf(db: Queryable, projectId: string, experimentId: string): Promise<ComparedItem[]> {
  const { rows } = await db.query<ItemRow>(
    `SELECT dataset_item_id, run_id, scores, cost_usd::float8 AS cost_usd, latency_ms FROM experiment_items
      WHERE experiment_id = $1 AND project_id = $2 AND status = 'completed' ORDER BY created_at, id`,
    [experimentId, projectId],
  );
  return rows.map((row) => ({
    dataset_item_id: row.dataset_item_id,
    run_id: row.run_id,
    scores: Object.fromEntries(row.scores.map((score) => [score.scorer, score.value])),
    cost_usd: row.cost_usd,
    latency_ms: row.latency_ms,
  }));
}
