import assert from 'node:assert/strict';
import { freePort, startTemporal } from '../../cli/embedded.js';
import { newSecret } from '../../records/api-keys.js';
import { createDb } from '../../records/db.js';
import { S3BlobStore } from '../../records/blobs/s3.js';
import { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { isolatedNamespace, minio, postgres, temporal, testLog } from '../support/services.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { newTenant } from '../support/api.js';
import { createAgent } from '../support/agents.js';

describe('agentplane migrate, api and worker as separate processes on S3 storage', function () {
  this.timeout(180_000);
  const processes: CliProcess[] = [];
  let env: Record<string, string>;
  let databaseUrl: string;

  before(async () => {
    const [pg, tp, s3] = await Promise.all([postgres(), temporal(), minio()]);
    // A database of its own, so the migration starts from nothing.
    const admin = createDb(pg.url, { max: 1, log: testLog });
    await admin.query('CREATE DATABASE agentplane_production');
    await admin.end();
    databaseUrl = pg.url.replace(/\/agentplane$/, '/agentplane_production');
    env = {
      DATABASE_URL: databaseUrl,
      TEMPORAL_ADDRESS: tp.address,
      TEMPORAL_NAMESPACE: await isolatedNamespace('production-e2e'),
      S3_ENDPOINT: s3.endpoint,
      S3_BUCKET: 'agentplane-production',
      S3_ACCESS_KEY: s3.accessKey,
      S3_SECRET_KEY: s3.secretKey,
      AGENTPLANE_ADMIN_KEY: newSecret(),
      // As the chart runs it: `migrate` is a deploy step of its own, and the api only checks the schema.
      AGENTPLANE_MIGRATE: 'false',
    };
  });

  after(async () => {
    for (const process of processes) {
      process.child.kill('SIGTERM');
      await process.exited;
    }
  });

  it('refuses to start the api with AGENTPLANE_MIGRATE=false on a schema that is behind, naming the command to run', async () => {
    const api = runCli('api', { ...env, PORT: String(await freePort()), HOST: '127.0.0.1' });
    assert.equal((await api.exited).code, 1, api.output());
    assert.match(
      api.output(),
      /agentplane: the database schema is behind this version \(001_foundation\.sql, .*not applied\).*run `agentplane migrate` first/,
    );
    const db = createDb(databaseUrl, { max: 1, log: testLog });
    try {
      const { rows } = await db.query(`SELECT to_regclass('schema_migrations') AS found`);
      assert.equal(rows[0]?.found, null, 'the api migrated nothing');
    } finally {
      await db.end();
    }
  });

  it('migrates an empty database once, then reports it up to date', async () => {
    const first = runCli('migrate', { DATABASE_URL: databaseUrl });
    assert.equal((await first.exited).code, 0, first.output());
    assert.match(first.output(), /applied 001_foundation\.sql/);
    const second = runCli('migrate', { DATABASE_URL: databaseUrl });
    assert.equal((await second.exited).code, 0, second.output());
    assert.match(second.output(), /the schema is up to date/);
  });

  it('serves uploads into the bucket, extracts them in the worker process, and deletes them from the bucket', async () => {
    const port = await freePort();
    const api = runCli('api', { ...env, PORT: String(port), HOST: '127.0.0.1' });
    const worker = runCli('worker', env);
    processes.push(api, worker);
    const client = new ApiClient(`http://127.0.0.1:${port}`, env.AGENTPLANE_ADMIN_KEY);
    await eventually(
      async () => {
        assert.equal(api.child.exitCode, null, api.output());
        assert.equal((await client.get('/readyz')).status, 200);
      },
      { timeoutMs: 60_000, message: 'the api did not become ready' },
    );

    const upload = await client.upload({
      file: { data: Buffer.from('stored in S3\fsecond page'), filename: 's3.txt' },
      purpose: 'context',
    });
    assert.equal(upload.status, 200);
    const file = await eventually(
      async () => {
        const current = await client.get(`/v1/files/${upload.body.id}`);
        assert.equal(current.body.status, 'processed', worker.output());
        return current.body;
      },
      { timeoutMs: 60_000, message: 'the worker process did not extract the file' },
    );
    assert.equal(file.extracted.pages, 2);

    const bucket = await new S3BlobStore({
      endpoint: env.S3_ENDPOINT!,
      bucket: env.S3_BUCKET!,
      accessKey: env.S3_ACCESS_KEY!,
      secretKey: env.S3_SECRET_KEY!,
    }).init();
    const { project_id: projectId } = (await client.get('/v1/api-keys')).body.data[0];
    const blobKey = `files/${projectId}/${upload.body.id}`;
    assert.ok(await bucket.exists(blobKey), 'the upload is in the bucket');

    assert.equal((await client.delete(`/v1/files/${upload.body.id}`)).status, 200);
    assert.equal(await bucket.exists(blobKey), false, 'the blob left the bucket with its file');
  });

  it("holds each project to the operator's file storage and experiments, as set in the api process's environment", async () => {
    const port = await freePort();
    const api = runCli('api', {
      ...env,
      PORT: String(port),
      HOST: '127.0.0.1',
      AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT: '1',
      AGENTPLANE_EXPERIMENTS_PER_PROJECT: '1',
    });
    processes.push(api);
    const root = new ApiClient(`http://127.0.0.1:${port}`, env.AGENTPLANE_ADMIN_KEY);
    await eventually(async () => assert.equal((await root.get('/readyz')).status, 200, api.output()), {
      timeoutMs: 60_000,
      message: 'the api did not become ready',
    });
    const tenant = await newTenant({ url: `http://127.0.0.1:${port}`, root }, 'operator-limits');

    // The project's files come to 1 GiB, the most they may hold here: the next upload is refused.
    const upload = () =>
      tenant.admin.upload({ file: { data: Buffer.from('one more'), filename: 'more.txt', type: 'text/plain' }, purpose: 'attachment' });
    const first = await upload();
    assert.equal(first.status, 200, JSON.stringify(first.body));
    const db = createDb(databaseUrl, { max: 1, log: testLog });
    try {
      await db.query('UPDATE files SET bytes = $2 WHERE id = $1', [first.body.id, 2 ** 30]);
    } finally {
      await db.end();
    }
    const full = await upload();
    assert.equal(full.status, 409, JSON.stringify(full.body));
    assert.equal(full.body.error.code, 'file_storage_full');

    // One experiment queued (no worker takes it here), the most the project may have: the next is refused.
    const agent = await createAgent(tenant.admin);
    const dataset = (await tenant.admin.post('/v1/datasets', { name: 'limits' })).body;
    assert.equal((await tenant.admin.post(`/v1/datasets/${dataset.id}/items`, { items: [{ input: 'q' }] })).status, 201);
    const start = () => tenant.admin.post('/v1/experiments', { dataset_id: dataset.id, agent_id: agent.id, scorers: ['completion'] });
    const queued = await start();
    assert.equal(queued.status, 201, JSON.stringify(queued.body));
    const refused = await start();
    assert.equal(refused.status, 429, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'concurrent_experiments_exceeded');
    assert.equal((await tenant.admin.post(`/v1/experiments/${queued.body.id}/cancel`, {})).status, 200);

    api.child.kill('SIGTERM');
    assert.equal((await api.exited).code, 0, api.output());
    processes.splice(processes.indexOf(api), 1);
  });

  it('keeps the previous admin key working beside the next one during a rolling update, until it is retired', async () => {
    const nextKey = newSecret();
    const replicas = [env.AGENTPLANE_ADMIN_KEY!, nextKey].map((key) => ({ port: 0, key }));
    for (const replica of replicas) {
      replica.port = await freePort();
      processes.push(runCli('api', { ...env, AGENTPLANE_ADMIN_KEY: replica.key, PORT: String(replica.port), HOST: '127.0.0.1' }));
    }
    for (const { port } of replicas) {
      await eventually(async () => assert.equal((await new ApiClient(`http://127.0.0.1:${port}`).get('/healthz')).status, 200), {
        timeoutMs: 60_000,
        message: 'a replica did not start',
      });
    }
    for (const { port } of replicas) {
      for (const { key } of replicas) {
        const response = await new ApiClient(`http://127.0.0.1:${port}`, key).get('/v1/api-keys');
        assert.equal(response.status, 200, `a replica refused the ${key === nextKey ? 'next' : 'previous'} key`);
      }
    }

    const retire = runCli('retire-admin-keys', { DATABASE_URL: databaseUrl, AGENTPLANE_ADMIN_KEY: nextKey });
    assert.equal((await retire.exited).code, 0, retire.output());
    assert.match(retire.output(), /revoked 1 previous bootstrap key/);
    for (const { port } of replicas) {
      // Verified keys are cached for 5 seconds per process.
      await eventually(
        async () =>
          assert.equal((await new ApiClient(`http://127.0.0.1:${port}`, env.AGENTPLANE_ADMIN_KEY).get('/v1/api-keys')).status, 401),
        {
          timeoutMs: 15_000,
          message: 'the retired key still works',
        },
      );
      assert.equal((await new ApiClient(`http://127.0.0.1:${port}`, nextKey).get('/v1/api-keys')).status, 200);
    }
    for (const process of processes.splice(-2)) {
      process.child.kill('SIGTERM');
      assert.equal((await process.exited).code, 0, process.output());
    }
  });

  it('starts the api and the worker while Temporal is down, accepts uploads, and extracts them once Temporal is up', async () => {
    const temporalPort = await freePort();
    const laterEnv = { ...env, TEMPORAL_ADDRESS: `127.0.0.1:${temporalPort}`, TEMPORAL_NAMESPACE: 'default' };
    const port = await freePort();
    const api = runCli('api', { ...laterEnv, PORT: String(port), HOST: '127.0.0.1' });
    processes.push(api);
    const client = new ApiClient(`http://127.0.0.1:${port}`, env.AGENTPLANE_ADMIN_KEY);
    await eventually(
      async () => {
        assert.equal(api.child.exitCode, null, api.output());
        assert.equal((await client.get('/healthz')).status, 200);
      },
      { timeoutMs: 60_000, message: 'the api did not start without Temporal' },
    );
    const notReady = await client.get('/readyz');
    assert.equal(notReady.status, 503);
    assert.equal(notReady.body.checks.temporal, 'unavailable');

    const upload = await client.upload({ file: { data: Buffer.from('waits for Temporal'), filename: 'later.txt' }, purpose: 'context' });
    assert.equal(upload.status, 200);
    assert.equal(upload.body.status, 'processing');
    const worker = runCli('worker', laterEnv);
    processes.push(worker);
    await eventually(() => assert.match(worker.output(), /waiting for Temporal/), {
      timeoutMs: 30_000,
      message: 'the worker did not wait for Temporal',
    });
    assert.equal(worker.child.exitCode, null, worker.output());

    const later = await startTemporal({ port: temporalPort });
    try {
      // Maintenance restarts extractions older than a minute; age this one instead of waiting.
      const db = createDb(databaseUrl, { max: 1, log: testLog });
      await db.query(`UPDATE files SET created_at = now() - interval '2 minutes' WHERE id = $1`, [upload.body.id]);
      await db.end();
      await eventually(async () => assert.equal((await client.get('/readyz')).status, 200), {
        timeoutMs: 60_000,
        message: 'the api did not become ready',
      });
      const file = await client.settledFile(upload.body.id, 90_000);
      assert.equal(file.status, 'processed', worker.output());
      for (const process of processes.splice(-2)) {
        process.child.kill('SIGTERM');
        assert.equal((await process.exited).code, 0, process.output());
      }
    } finally {
      await later.stop();
    }
  });

  it('stops cleanly on SIGTERM', async () => {
    for (const process of processes.splice(0)) {
      process.child.kill('SIGTERM');
      const { code } = await process.exited;
      assert.equal(code, 0, process.output());
    }
  });
});
