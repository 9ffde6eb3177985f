/**
 * Maintenance's I/O: start extraction for any file whose start was missed (the API died between commit
 * and start, or Temporal was briefly down) and likewise any run's, remove blobs whose deletion is due, and forget expired
 * idempotency keys. Each is safe to repeat.
 */
import { Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import type { BlobStore } from '../../records/blobs/store.js';
import { filesStillProcessing } from '../../records/files.js';
import { sweepDueBlobs } from '../../records/blob-leases.js';
import { purgeExpiredResponses } from '../../records/idempotency.js';
import { startExtraction } from '../extraction/client.js';
import { staleQueuedRuns } from '../../records/runs.js';
import { startRunWorkflow } from '../runs/client.js';
import { startNetworkRunWorkflow } from '../networks/client.js';

/** Files older than this that are still `processing` get their (idempotent) start again. */
const MISSED_START_AFTER_MS = 60_000;
/** Runs queued longer than this get their (idempotent) start again; a waiting `enqueue` run keeps its workflow. */
const MISSED_RUN_START_AFTER_S = 15;

export const createMaintenanceActivities = ({ db, blobs }: { db: Db; blobs: BlobStore }) => ({
  async restartMissedExtractions(): Promise<number> {
    // The worker's own client: the same Temporal connection and namespace as the worker running this.
    const { client } = Context.current();
    const files = await filesStillProcessing(db, new Date(Date.now() - MISSED_START_AFTER_MS));
    for (const file of files) await startExtraction(client, file.id);
    return files.length;
  },

  async restartMissedRuns(): Promise<number> {
    const { client } = Context.current();
    const runs = await staleQueuedRuns(db, MISSED_RUN_START_AFTER_S, 100);
    for (const run of runs) await (run.network ? startNetworkRunWorkflow(client, run.id, run.workerPool ?? undefined) : startRunWorkflow(client, run.id));
    return runs.length;
  },

  /** Sweeps until nothing is due or its time budget is spent; see `sweepDueBlobs`. */
  removeDueBlobs(): Promise<number> {
    return sweepDueBlobs(db, blobs);
  },

  purgeExpiredIdempotencyKeys(): Promise<number> {
    return purgeExpiredResponses(db);
  },
});

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
