/**
 * Embeddings of a context file's pages or transcript segments (their first 256 tokens each), so that search
 * finds passages by meaning as well as by their words. Written before the file completes, in order, a batch at a
 * time: a stage run again, or the next slice, goes on after the last part embedded.
 */
import type { Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import { lastEmbeddedPart, storeEmbeddings } from '../../records/file-content.js';
import { embedderAt } from '../../models/embeddings.js';

/** Parts embedded at a time: one model run, then a heartbeat. */
const BATCH = 16;

/**
 * Embeds the parts after the last one embedded, until the last (`done`) or until `until` (milliseconds since the
 * epoch) has passed with parts left (`more`); at least one batch either way, so that every slice moves on.
 */
export async function embedParts(db: Db, fileId: string, modelDir: string, context: Context, until = Infinity): Promise<'done' | 'more'> {
  const embedder = await embedderAt(modelDir);
  let after = await lastEmbeddedPart(db, fileId);
  for (;;) {
    const { rows } = await db.query<{ page_number: number; text: string }>(
      `SELECT page_number, left(text, 4000) AS text FROM file_pages WHERE file_id = $1 AND page_number > $2 AND text ~ '\\S' ORDER BY page_number LIMIT $3`,
      [fileId, after, BATCH],
    );
    if (rows.length === 0) return 'done';
    after = rows.at(-1)!.page_number;
    const vectors = await embedder.embed(rows.map((r) => r.text));
    await storeEmbeddings(
      db,
      fileId,
      rows.map((r, i) => ({ part: r.page_number, embedding: vectors[i]! })),
    );
    context.heartbeat({ embedded: after });
    if (rows.length === BATCH && Date.now() >= until) return 'more';
  }
}
