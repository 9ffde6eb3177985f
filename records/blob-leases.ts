/**
 * The one owner of blob leases: no blob outlives the record that owns it, even if a process dies. A lease
 * row (`blob_deletions`) is staged before an upload streams, dropped in the transaction that commits the
 * owning record (the blob is kept), and written again in the transaction that deletes the record (the
 * blob is released). Whatever is due is removed by the sweep; removals that can happen at once do.
 */
import type { Db, Queryable } from './db.js';
import { transaction } from './db.js';
import type { BlobStore } from './blobs/store.js';

/** How long an upload may stream before its unclaimed blob is due for removal. */
export const UPLOAD_LEASE_SECONDS = 3600;

async function leaseBlob(db: Queryable, blobKey: string, delaySeconds: number): Promise<void> {
  await db.query(
    `INSERT INTO blob_deletions (blob_key, due_at) VALUES ($1, now() + make_interval(secs => $2))
     ON CONFLICT (blob_key) DO UPDATE SET due_at = EXCLUDED.due_at`,
    [blobKey, delaySeconds],
  );
}

/** Before an upload streams: should the process die mid-upload, the blob is removed once the lease is due. */
export function stageUpload(db: Queryable, blobKey: string): Promise<void> {
  return leaseBlob(db, blobKey, UPLOAD_LEASE_SECONDS);
}

async function dropLease(db: Queryable, blobKey: string): Promise<void> {
  await db.query('DELETE FROM blob_deletions WHERE blob_key = $1', [blobKey]);
}

/** In the transaction that commits the record owning the blob. */
export function keepBlob(tx: Queryable, blobKey: string): Promise<void> {
  return dropLease(tx, blobKey);
}

/** In the transaction that deletes the record owning the blob: the blob is due for removal now. */
export function releaseBlob(tx: Queryable, blobKey: string): Promise<void> {
  return leaseBlob(tx, blobKey, 0);
}

/** An upload whose bytes never reached the store (a failed put leaves nothing there): its lease goes at once. */
export function dropUnwrittenUpload(db: Queryable, blobKey: string): Promise<void> {
  return dropLease(db, blobKey);
}

/**
 * Removes a blob no record owns, and its lease. When the store cannot be reached the lease is made due
 * at once, so the next sweep removes it rather than waiting out an upload lease. True when removed.
 */
export async function removeBlob(db: Db, blobs: BlobStore, blobKey: string): Promise<boolean> {
  try {
    await blobs.delete(blobKey);
  } catch {
    await releaseBlob(db, blobKey);
    return false;
  }
  await dropLease(db, blobKey);
  return true;
}

/**
 * Removes the blobs whose leases are due, a batch at a time until none is left or the time budget is
 * spent. Rows are locked with SKIP LOCKED, so sweeps running at once on several workers never take the
 * same blob. A removal that fails leaves its lease for the next sweep. Returns how many were removed.
 */
export async function sweepDueBlobs(db: Db, blobs: BlobStore, options: { batch?: number; budgetMs?: number } = {}): Promise<number> {
  const batch = options.batch ?? 100;
  const deadline = Date.now() + (options.budgetMs ?? 20_000);
  let removed = 0;
  for (;;) {
    const { taken, done } = await transaction(db, async (tx) => {
      const { rows } = await tx.query<{ blob_key: string }>(
        'SELECT blob_key FROM blob_deletions WHERE due_at <= now() ORDER BY due_at LIMIT $1 FOR UPDATE SKIP LOCKED',
        [batch],
      );
      const gone: string[] = [];
      for (const { blob_key } of rows) {
        // The store is down: stop here, the rest is still due next time.
        if (
          !(await blobs.delete(blob_key).then(
            () => true,
            () => false,
          ))
        )
          break;
        gone.push(blob_key);
      }
      if (gone.length > 0) await tx.query('DELETE FROM blob_deletions WHERE blob_key = ANY($1)', [gone]);
      return { taken: gone.length, done: rows.length < batch || gone.length < rows.length };
    });
    removed += taken;
    if (done || Date.now() > deadline) return removed;
  }
}
