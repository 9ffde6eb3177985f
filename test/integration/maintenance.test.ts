import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { pino } from 'pino';
import { newTenant, startTestApi, workflowBundle, type TestApi } from '../support/api.js';
import { isolatedNamespace } from '../support/services.js';
import { eventsFor } from '../../records/events.js';
import { releaseBlob, stageUpload } from '../../records/blob-leases.js';
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
    await releaseBlob(api.services.db, due);
    await stageUpload(api.services.db, leased);

    await sweepBlobDeletions(deps);

    assert.equal(await api.services.blobs.exists(due), false);
    assert.equal(await api.services.blobs.exists(leased), true);
    const { rows } = await api.services.db.query('SELECT blob_key FROM blob_deletions WHERE blob_key = ANY($1)', [[due, leased]]);
    assert.deepEqual(rows, [{ blob_key: leased }]);
    await api.services.db.query('DELETE FROM blob_deletions WHERE blob_key = $1', [leased]);
    await api.services.blobs.delete(leased);
  });

  it('clears a backlog of due blobs in one sweep, not a batch per interval', async () => {
    const keys = Array.from({ length: 250 }, (_, i) => `files/maintenance/backlog-${i}`);
    for (const key of keys) {
      await api.services.blobs.put(key, Readable.from([Buffer.from(key)]));
      await releaseBlob(api.services.db, key);
    }

    assert.ok((await sweepBlobDeletions(deps)) >= keys.length);

    const { rows } = await api.services.db.query('SELECT count(*)::int AS left FROM blob_deletions WHERE blob_key = ANY($1)', [keys]);
    assert.equal(rows[0].left, 0);
    for (const key of keys) assert.equal(await api.services.blobs.exists(key), false, key);
  });
});
