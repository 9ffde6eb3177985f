/**
 * Blob deletions that must happen even if the process dies: a row is written before an upload streams
 * (removed when its file record commits) and in the transaction that deletes a file. A sweep removes
 * the blobs whose rows are due.
 */
import type { Queryable } from './db.js';

/** The lease an upload holds on its blob key until the file record commits. */
export const UPLOAD_LEASE_SECONDS = 3600;

export async function scheduleBlobDeletion(db: Queryable, blobKey: string, delaySeconds = 0): Promise<void> {
  await db.query(
    `INSERT INTO blob_deletions (blob_key, due_at) VALUES ($1, now() + make_interval(secs => $2))
     ON CONFLICT (blob_key) DO UPDATE SET due_at = EXCLUDED.due_at`,
    [blobKey, delaySeconds],
  );
}

export async function cancelBlobDeletion(db: Queryable, blobKey: string): Promise<void> {
  await db.query('DELETE FROM blob_deletions WHERE blob_key = $1', [blobKey]);
}

export async function dueBlobDeletions(db: Queryable, limit = 100): Promise<string[]> {
  const { rows } = await db.query<{ blob_key: string }>(
    'SELECT blob_key FROM blob_deletions WHERE due_at <= now() ORDER BY due_at LIMIT $1',
    [limit],
  );
  return rows.map((r) => r.blob_key);
}
