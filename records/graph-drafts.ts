/**
 * A context file's graph items drafted a batch of parts at a time (`workflows/extraction/graph-stage.ts`), kept
 * until the extraction commits them with the file's status, and removed then.
 */
import type { Queryable } from './db.js';
import type { NewGraphItem } from './graph.js';

/** How far drafting has gone: the last part read, the characters analysed and the items found through it. */
export interface GraphProgress {
  after: number;
  analysed: number;
  items: number;
}

/** The row that marks every part read: past any part number. */
const FOUND = 2_147_483_647;

export async function storeGraphDraft(db: Queryable, fileId: string, progress: GraphProgress, items: NewGraphItem[]): Promise<void> {
  await db.query(
    `INSERT INTO file_graph_drafts (file_id, through_part, analysed, item_total, items) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (file_id, through_part) DO NOTHING`,
    [fileId, progress.after, progress.analysed, progress.items, JSON.stringify(items)],
  );
}

/** Marks the file's graph found: every part read, or its limits reached. */
export async function markGraphFound(db: Queryable, fileId: string): Promise<void> {
  await db.query(
    `INSERT INTO file_graph_drafts (file_id, through_part, analysed, item_total, items) VALUES ($1, $2, 0, 0, '[]')
     ON CONFLICT (file_id, through_part) DO NOTHING`,
    [fileId, FOUND],
  );
}

/** Where drafting stopped: `found` once the graph is, else the progress through the last batch (null for none). */
export async function graphDraftProgress(db: Queryable, fileId: string): Promise<{ found: boolean; progress: GraphProgress | null }> {
  const { rows } = await db.query<{ through_part: number; analysed: string; item_total: number }>(
    'SELECT through_part, analysed, item_total FROM file_graph_drafts WHERE file_id = $1 ORDER BY through_part DESC LIMIT 1',
    [fileId],
  );
  const last = rows[0];
  if (!last) return { found: false, progress: null };
  if (last.through_part === FOUND) return { found: true, progress: null };
  return { found: false, progress: { after: last.through_part, analysed: Number(last.analysed), items: last.item_total } };
}

/** The drafted items in the order found, once the graph is found; null before (nothing drafted, or not all of it). */
export async function draftedGraphItems(db: Queryable, fileId: string): Promise<NewGraphItem[] | null> {
  if (!(await graphDraftProgress(db, fileId)).found) return null;
  const { rows } = await db.query<{ items: NewGraphItem[] }>(
    'SELECT items FROM file_graph_drafts WHERE file_id = $1 AND through_part < $2 ORDER BY through_part',
    [fileId, FOUND],
  );
  return rows.flatMap((r) => r.items);
}

export async function discardGraphDrafts(db: Queryable, fileId: string): Promise<void> {
  await db.query('DELETE FROM file_graph_drafts WHERE file_id = $1', [fileId]);
}
