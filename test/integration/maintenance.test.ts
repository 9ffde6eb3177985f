import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { pino } from 'pino';
import { newTenant, startTestApi, workflowBundle, type TestApi } from '../support/api.js';
import { isolatedNamespace } from '../support/services.js';
import { eventually } from '../support/eventually.js';
import { eventsFor } from '../../records/events.js';
import { scheduleBlobDeletion } from '../../records/blob-deletions.js';
import type { BlobStore } from '../../records/blobs/store.js';
import { createWorker } from '../../workflows/worker.js';
import { restartMissedExtractions, sweepBlobDeletions, type MaintenanceDeps } from '../../workflows/maintenance.js';
import { extractionWorkflowId } from '../../workflows/names.js';

describe('the worker’s maintenance duties', function () {
  this.timeout(120_000);
  let api: TestApi;
  let namespace: string;
  let deps: MaintenanceDeps;

  before(async () => {
    namespace = await isolatedNamespace('maintenance');
    api = await startTestApi({ worker: false, namespace });
    deps = { db: api.services.db, blobs: api.services.blobs, client: api.services.temporal, log: pino({ level: 'silent' }) };
  });

  after(async () => api?.stop());

  it('starts extraction for a file whose start was missed once it is a minute old, and it reaches processed once', async () => {
    const tenant = await newTenant(api, 'maintenance');
    const upload = await tenant.admin.upload({ file: { data: Buffer.from('missed\fstart'), filename: 'missed.txt' }, purpose: 'context' });
    const workflowId = extractionWorkflowId(upload.body.id);
    // As if the API had died between committing the record and starting the workflow.
    await api.services.temporal.workflow.getHandle(workflowId).terminate('simulating a start that never happened');

    await restartMissedExtractions(deps);
    assert.equal((await api.services.temporal.workflow.getHandle(workflowId).describe()).status.name, 'TERMINATED', 'a young file is left alone');

    await api.services.db.query(`UPDATE files SET created_at = now() - interval '2 minutes' WHERE id = $1`, [upload.body.id]);
    await restartMissedExtractions(deps);
    assert.equal((await api.services.temporal.workflow.getHandle(workflowId).describe()).status.name, 'RUNNING');

    const { worker, connection } = await createWorker({ ...deps, temporalAddress: api.temporalAddress, namespace, workflowBundle: await workflowBundle() });
    const running = worker.run();
    try {
      const file = await tenant.admin.settledFile(upload.body.id);
      assert.equal(file.status, 'processed');
      assert.equal(file.extracted.pages, 2);
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
    }
    assert.equal((await eventsFor(api.services.db, tenant.projectId, 'file.processed', upload.body.id)).length, 1);
  });

  it('removes the blobs whose deletion is due, and keeps those still leased', async () => {
    const due = 'files/maintenance/due';
    const leased = 'files/maintenance/leased';
    await api.services.blobs.put(due, Readable.from([Buffer.from('due')]));
    await api.services.blobs.put(leased, Readable.from([Buffer.from('leased')]));
    await scheduleBlobDeletion(api.services.db, due, 0);
    await scheduleBlobDeletion(api.services.db, leased, 3600);

    await sweepBlobDeletions(deps);

    assert.equal(await api.services.blobs.exists(due), false);
    assert.equal(await api.services.blobs.exists(leased), true);
    const { rows } = await api.services.db.query('SELECT blob_key FROM blob_deletions WHERE blob_key = ANY($1)', [[due, leased]]);
    assert.deepEqual(rows, [{ blob_key: leased }]);
    await api.services.db.query('DELETE FROM blob_deletions WHERE blob_key = $1', [leased]);
    await api.services.blobs.delete(leased);
  });

  it('removes a backlog larger than one batch in one sweep, and two sweeps side by side remove each blob once', async () => {
    const keys = Array.from({ length: 250 }, (_, n) => `files/maintenance-backlog/blob-${n}`);
    for (const key of keys) await api.services.blobs.put(key, Readable.from([Buffer.from(key)]));
    await api.services.db.query(`INSERT INTO blob_deletions (blob_key, due_at) SELECT unnest($1::text[]), now()`, [keys]);
    // The same store, noting each removal.
    const store = api.services.blobs;
    const removals: string[] = [];
    const noting: BlobStore = {
      put: (key, body) => store.put(key, body),
      get: (key) => store.get(key),
      exists: (key) => store.exists(key),
      check: () => store.check(),
      delete: async (key) => {
        removals.push(key);
        await store.delete(key);
      },
    };
    const counted: MaintenanceDeps = { ...deps, blobs: noting };

    await Promise.all([sweepBlobDeletions(counted), sweepBlobDeletions(counted)]);

    // The shared worker sweeps too; what it took, it finishes at once.
    await eventually(async () => {
      const { rows } = await api.services.db.query('SELECT count(*)::int AS n FROM blob_deletions WHERE blob_key = ANY($1)', [keys]);
      assert.equal(rows[0]?.n, 0, 'deletions are still pending');
    }, { timeoutMs: 10_000, message: 'the backlog was not swept' });
    for (const key of keys) assert.equal(await api.services.blobs.exists(key), false, `${key} is still stored`);
    assert.equal(new Set(removals).size, removals.length, 'a blob was removed by both sweeps');
  });
});
