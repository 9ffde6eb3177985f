/**
 * Background duties of the worker process: start extraction for any file whose start was missed (the
 * API died between commit and start, or Temporal was briefly down), remove blobs whose deletion is due,
 * and forget expired idempotency keys.
 */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Db } from '../records/db.js';
import type { BlobStore } from '../records/blobs/store.js';
import { filesStillProcessing } from '../records/files.js';
import { cancelBlobDeletion, claimDueBlobDeletions } from '../records/blob-deletions.js';
import { purgeExpiredResponses } from '../records/idempotency.js';
import { startExtraction } from './extraction-client.js';

export interface MaintenanceDeps {
  db: Db;
  blobs: BlobStore;
  client: Client;
  log: Logger;
}

/** Files older than this that are still `processing` get their (idempotent) start again. */
const MISSED_START_AFTER_MS = 60_000;

export async function restartMissedExtractions({ db, client }: MaintenanceDeps): Promise<number> {
  const files = await filesStillProcessing(db, new Date(Date.now() - MISSED_START_AFTER_MS));
  for (const file of files) await startExtraction(client, file.id);
  return files.length;
}

const SWEEP_BATCH = 100;
// A backlog (uploads refused during a blob-store outage) is worked off batch by batch within this, and
// the rest in the next interval.
const SWEEP_BUDGET_MS = 20_000;

export async function sweepBlobDeletions({ db, blobs }: MaintenanceDeps, budgetMs = SWEEP_BUDGET_MS): Promise<number> {
  const deadline = Date.now() + budgetMs;
  let removed = 0;
  for (;;) {
    const keys = await claimDueBlobDeletions(db, SWEEP_BATCH);
    for (const key of keys) {
      await blobs.delete(key);
      await cancelBlobDeletion(db, key);
    }
    removed += keys.length;
    if (keys.length < SWEEP_BATCH || Date.now() >= deadline) return removed;
  }
}

/** Runs every duty now and then every `intervalMs` until the returned stop function is called. */
export function runMaintenance(deps: MaintenanceDeps, intervalMs = 30_000): () => Promise<void> {
  let running: Promise<void> = Promise.resolve();
  const tick = () => {
    running = (async () => {
      for (const duty of [restartMissedExtractions, sweepBlobDeletions, ({ db }: MaintenanceDeps) => purgeExpiredResponses(db)]) {
        try {
          await duty(deps);
        } catch (err) {
          deps.log.warn({ err, duty: duty.name }, 'maintenance duty failed; it runs again next interval');
        }
      }
    })();
  };
  tick();
  const timer = setInterval(tick, intervalMs);
  return async () => {
    clearInterval(timer);
    await running;
  };
}
