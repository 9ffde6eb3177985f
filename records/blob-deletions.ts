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

/** How long a sweep holds the deletions it took; should it die meanwhile, they come due again. */
const SWEEP_CLAIM_SECONDS = 120;

/**
 * Takes up to `limit` due deletions for one sweep. Taking them moves them out of due, so a sweep in
 * another process takes others (and skips rows being taken at the same moment).
 */
export async function claimDueBlobDeletions(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ blob_key: string }>(
    `UPDATE blob_deletions SET due_at = now() + make_interval(secs => $2)
     WHERE blob_key IN (SELECT blob_key FROM blob_deletions WHERE due_at <= now() ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED)
     RETURNING blob_key`,
    [limit, SWEEP_CLAIM_SECONDS],
  );
  return rows.map((r) => r.blob_key);
}
