import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { freePort } from '../../cli/embedded.js';
import { newSecret } from '../../records/api-keys.js';
import { createDb, DatabaseUnavailableError, transaction } from '../../records/db.js';
import { migrate } from '../../records/migrate.js';
import { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { isolatedNamespace, postgres, scratch, temporal, testLog } from '../support/services.js';

describe('a database connection that PostgreSQL drops', function () {
  this.timeout(180_000);
  const processes: CliProcess[] = [];
  let databaseUrl: string;
  let env: Record<string, string>;

  before(async () => {
    const [pg, tp] = await Promise.all([postgres(), temporal()]);
    // A database of its own: the API process configures its own bootstrap key there.
    await pg.db.query('CREATE DATABASE agentplane_connection_loss');
    databaseUrl = pg.url.replace(/\/agentplane$/, '/agentplane_connection_loss');
    const db = createDb(databaseUrl, { max: 1, log: testLog });
    await migrate(db);
    await db.end();
    const blobDir = join(await scratch, 'connection-loss-blobs');
    await mkdir(blobDir, { recursive: true });
    env = {
      TEMPORAL_ADDRESS: tp.address,
      TEMPORAL_NAMESPACE: await isolatedNamespace('connection-loss'),
      AGENTPLANE_BLOB_DIR: blobDir,
      AGENTPLANE_ADMIN_KEY: newSecret(),
    };
  });

  after(async () => {
    for (const process of processes) {
      process.child.kill('SIGTERM');
      await process.exited;
    }
  });

  /** An `agentplane api` process whose database sessions carry `applicationName`. */
  async function startApi(applicationName: string): Promise<{ api: CliProcess; client: ApiClient }> {
    const port = await freePort();
    const api = runCli('api', {
      ...env,
      DATABASE_URL: `${databaseUrl}?application_name=${applicationName}`,
      PORT: String(port),
      HOST: '127.0.0.1',
    });
    processes.push(api);
    const client = new ApiClient(`http://127.0.0.1:${port}`, env.AGENTPLANE_ADMIN_KEY);
    await eventually(
      async () => {
        assert.equal(api.child.exitCode, null, api.output());
        assert.equal((await client.get('/readyz')).status, 200);
      },
      { timeoutMs: 60_000, message: 'the api did not become ready' },
    );
    return { api, client };
  }

  /** Holds a file's row locked until `release`, so a transaction that needs it waits mid-way. */
  async function lockFileRow(fileId: string): Promise<{ release(): Promise<void> }> {
    const locker = createDb(databaseUrl, { max: 1, log: testLog });
    const holder = await locker.connect();
    await holder.query('BEGIN');
    await holder.query('SELECT 1 FROM files WHERE id = $1 FOR UPDATE', [fileId]);
    return {
      async release() {
        await holder.query('ROLLBACK');
        holder.release();
        await locker.end();
      },
    };
  }

  /** Terminates the backend of `applicationName` that waits for a lock, once it does. */
  async function terminateWaitingBackend(applicationName: string): Promise<void> {
    const { db } = await postgres();
    await eventually(
      async () => {
        const { rows } = await db.query<{ terminated: boolean }>(
          `SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
         WHERE application_name = $1 AND wait_event_type = 'Lock'`,
          [applicationName],
        );
        assert.deepEqual(
          rows.map((r) => r.terminated),
          [true],
          `${applicationName} is not waiting for the row`,
        );
      },
      { timeoutMs: 60_000, message: `${applicationName} never waited for the locked row` },
    );
  }

  it('fails a transaction whose backend is terminated with DatabaseUnavailableError, and the pool serves the next statement', async () => {
    const { db: other } = await postgres();
    const db = createDb(databaseUrl, { max: 1, log: testLog });
    try {
      const lost = transaction(db, async (tx) => {
        const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
        // Waits until the backend has gone, so the next statement meets a closed connection.
        await other.query('SELECT pg_terminate_backend($1, 10000)', [rows[0]!.pid]);
        await tx.query('SELECT 1');
      });
      await assert.rejects(lost, DatabaseUnavailableError);
      // One client in the pool: it was closed as broken and replaced, not handed out again.
      const { rows } = await db.query<{ answer: number }>('SELECT 42 AS answer');
      assert.equal(rows[0]?.answer, 42);
    } finally {
      await db.end();
    }
  });

  it('logs an idle connection that PostgreSQL drops, and opens another for the next statement', async () => {
    const { db: other } = await postgres();
    const lines: string[] = [];
    const db = createDb(databaseUrl, { max: 1, log: pino({ level: 'warn' }, { write: (line: string) => lines.push(line) }) });
    try {
      const { rows } = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await other.query('SELECT pg_terminate_backend($1, 10000)', [rows[0]!.pid]);
      await eventually(() => assert.match(lines.join(''), /"msg":"an idle database connection was lost"/), {
        message: 'the lost connection was not logged',
      });
      const again = await db.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      assert.notEqual(again.rows[0]?.pid, rows[0]!.pid);
    } finally {
      await db.end();
    }
  });

  it('answers 503 with Retry-After when the API’s backend is terminated mid-delete, stays up, and the retried delete succeeds', async () => {
    const { api, client } = await startApi('connection-loss-api');
    const upload = await client.upload({ file: { data: Buffer.from('deleted twice'), filename: 'twice.txt' }, purpose: 'attachment' });
    assert.equal(upload.status, 200);
    const lock = await lockFileRow(upload.body.id);
    let refused;
    try {
      const deleting = client.delete(`/v1/files/${upload.body.id}`);
      await terminateWaitingBackend('connection-loss-api');
      refused = await deleting;
    } finally {
      await lock.release();
    }
    assert.equal(refused.status, 503, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, 'dependency_unavailable');
    assert.ok(Number(refused.headers.get('retry-after')) > 0, 'Retry-After is missing');

    const retried = await client.delete(`/v1/files/${upload.body.id}`);
    assert.equal(retried.status, 200, JSON.stringify(retried.body));
    assert.equal(api.child.exitCode, null, api.output());
  });

  it('keeps the worker running when its backend is terminated mid-commit, and the retried extraction reaches processed', async () => {
    const { client } = await startApi('connection-loss-uploads');
    const upload = await client.upload({ file: { data: Buffer.from('first\fsecond'), filename: 'commit.txt' }, purpose: 'context' });
    assert.equal(upload.status, 200);
    const lock = await lockFileRow(upload.body.id);
    const worker = runCli('worker', { ...env, DATABASE_URL: `${databaseUrl}?application_name=connection-loss-worker` });
    processes.push(worker);
    try {
      await terminateWaitingBackend('connection-loss-worker');
    } finally {
      await lock.release();
    }
    const died = worker.exited.then(({ code, signal }) => assert.fail(`the worker exited (${code ?? signal}): ${worker.output()}`));
    const file = await Promise.race([client.settledFile(upload.body.id, 90_000), died]);
    assert.equal(file.status, 'processed', worker.output());
    assert.equal(file.extracted.pages, 2);
    assert.equal(worker.child.exitCode, null, worker.output());
  });
});
