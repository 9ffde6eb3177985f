/**
 * Embeddings of a context file's pages or transcript segments (their first 256 tokens each), so that search
 * finds passages by meaning as well as by their words. Written before the file completes; a retried stage
 * writes them again, the same.
 */
import type { Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import { storeEmbeddings } from '../../records/file-content.js';
import { embedderAt } from '../../models/embeddings.js';

/** Parts embedded at a time: one model run, then a heartbeat. */
const BATCH = 16;

export async function embedParts(db: Db, fileId: string, modelDir: string, context: Context): Promise<void> {
  const embedder = await embedderAt(modelDir);
  let after = 0;
  for (;;) {
    const { rows } = await db.query<{ page_number: number; text: string }>(
      `SELECT page_number, left(text, 4000) AS text FROM file_pages WHERE file_id = $1 AND page_number > $2 AND text ~ '\\S' ORDER BY page_number LIMIT $3`,
      [fileId, after, BATCH],
    );
    if (rows.length === 0) return;
    after = rows.at(-1)!.page_number;
    const vectors = await embedder.embed(rows.map((r) => r.text));
    await storeEmbeddings(
      db,
      fileId,
      rows.map((r, i) => ({ part: r.page_number, embedding: vectors[i]! })),
    );
    context.heartbeat({ embedded: after });
  }
}
