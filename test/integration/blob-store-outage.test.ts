import assert from 'node:assert/strict';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import { serveApi } from '../../cli/api-process.js';
import type { Stoppable } from '../../cli/processes.js';
import { S3BlobStore } from '../../records/blobs/s3.js';
import { newTenant, sharedApi, type Tenant, type TestApi } from '../support/api.js';
import { ApiClient } from '../support/client.js';
import { isolatedNamespace, scratch, startMinio } from '../support/services.js';

describe('uploads while the blob store is down', function () {
  this.timeout(120_000);
  let api: TestApi;
  let tenant: Tenant;
  let store: Awaited<ReturnType<typeof startMinio>>;
  let server: Stoppable;
  let client: ApiClient;

  before(async () => {
    api = await sharedApi();
    tenant = await newTenant(api, 'blob-store-outage');
    // A MinIO of its own, to stop without disturbing the other suites.
    store = await startMinio(join(await scratch, 'minio-outage'));
    const blobs = await new S3BlobStore({
      endpoint: store.endpoint,
      bucket: 'agentplane-outage',
      accessKey: store.accessKey,
      secretKey: store.secretKey,
    }).init();
    // Extractions go to a namespace no worker polls: the shared worker reads another blob store.
    const temporal = new Client({ connection: api.services.temporal.connection, namespace: await isolatedNamespace('blob-store-outage') });
    const served = await serveApi({ ...api.services, blobs, temporal }, 0, '127.0.0.1');
    server = served;
    client = new ApiClient(served.url, tenant.admin.key);
  });

  after(async () => {
    await server?.stop();
    await store?.stop();
  });

  const pendingDeletions = async () =>
    (
      await api.services.db.query<{ blob_key: string }>('SELECT blob_key FROM blob_deletions WHERE blob_key LIKE $1', [
        `files/${tenant.projectId}/%`,
      ])
    ).rows;

  it('answers 503 with Retry-After and leaves no blob deletion pending, then accepts uploads once the store is back', async () => {
    await store.stop();
    try {
      for (let n = 0; n < 5; n++) {
        const refused = await client.upload({
          file: { data: Buffer.from(`refused ${n}`), filename: 'refused.txt' },
          purpose: 'attachment',
        });
        assert.equal(refused.status, 503, JSON.stringify(refused.body));
        assert.equal(refused.body.error.code, 'dependency_unavailable');
        assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After is missing');
      }
      assert.deepEqual(await pendingDeletions(), [], 'nothing reached the store, so nothing is left to remove');
    } finally {
      await store.start();
    }

    const accepted = await client.upload({ file: { data: Buffer.from('accepted'), filename: 'accepted.txt' }, purpose: 'attachment' });
    assert.equal(accepted.status, 200, JSON.stringify(accepted.body));
    assert.deepEqual(await pendingDeletions(), []);
  });
});
