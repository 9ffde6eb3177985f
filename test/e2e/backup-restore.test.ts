/**
 * Backup and restore under load, as docs/operations.md says to do it: PostgreSQL's base backup (the
 * low-level API: pg_backup_start, a copy of the data directory, pg_backup_stop, the WAL after it) recovered
 * to a point in time, and the bucket's object versions as of that same time (S3 versioning). Restored into a
 * fresh database and a fresh bucket, the platform finds every run, file, graph item and audit entry it showed
 * before the backup, every file's bytes, and no blob that neither a record nor a pending removal accounts for.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { appendFile, chmod, copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import * as Minio from 'minio';
import { Client, Connection } from '@temporalio/client';
import { freePort, startPostgres, type RunningPostgres } from '../../cli/embedded.js';
import { newSecret } from '../../records/api-keys.js';
import { createDb, type Db } from '../../records/db.js';
import { migrate } from '../../records/migrate.js';
import { restartLostWork } from '../../workflows/recovery.js';
import { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { startOpenAiServer, type OpenAiServer } from '../support/model-servers/openai.js';
import { runCli, type CliProcess } from '../support/processes.js';
import { isolatedNamespace, minio, scratch, temporal, testLog } from '../support/services.js';

/** Runs a command to its end; its exit code. */
function command(name: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(name, args, { stdio: 'ignore' });
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

interface Shown {
  runs: string[];
  files: string[];
  nodes: string[];
  audit: string[];
}

describe('a backup taken under load, restored into a fresh database and bucket', function () {
  this.timeout(300_000);
  const processes: CliProcess[] = [];
  const clusters: RunningPostgres[] = [];
  let openai: OpenAiServer;
  let s3: Minio.Client;
  let base: Record<string, string>;

  const startPlatform = async (databaseUrl: string, bucket: string): Promise<ApiClient> => {
    const port = await freePort();
    const env = { ...base, DATABASE_URL: databaseUrl, S3_BUCKET: bucket };
    const api = runCli('api', { ...env, PORT: String(port), HOST: '127.0.0.1' });
    processes.push(api, runCli('worker', env));
    const client = new ApiClient(`http://127.0.0.1:${port}`, base.AGENTPLANE_ADMIN_KEY!);
    await eventually(
      async () => {
        assert.equal(api.child.exitCode, null, api.output());
        assert.equal((await client.get('/readyz')).status, 200);
      },
      { timeoutMs: 60_000, message: 'the api did not become ready' },
    );
    return client;
  };

  const stopPlatform = async (signal: NodeJS.Signals = 'SIGTERM') => {
    for (const process of processes.splice(0)) {
      process.child.kill(signal);
      await process.exited;
    }
  };

  before(async () => {
    const [tp, minioServer] = await Promise.all([temporal(), minio()]);
    s3 = new Minio.Client({
      endPoint: '127.0.0.1',
      port: Number(new URL(minioServer.endpoint).port),
      useSSL: false,
      accessKey: minioServer.accessKey,
      secretKey: minioServer.secretKey,
    });
    await s3.makeBucket('agentplane-backup-source');
    await s3.setBucketVersioning('agentplane-backup-source', { Status: 'Enabled' });
    await s3.makeBucket('agentplane-backup-restored');
    openai = await startOpenAiServer({ models: [] });
    openai.setFallback({ text: ['Restored answers.'], usage: { input: 9, output: 2 } });
    base = {
      TEMPORAL_ADDRESS: tp.address,
      TEMPORAL_NAMESPACE: await isolatedNamespace('backup-restore'),
      S3_ENDPOINT: minioServer.endpoint,
      S3_ACCESS_KEY: minioServer.accessKey,
      S3_SECRET_KEY: minioServer.secretKey,
      AGENTPLANE_ADMIN_KEY: newSecret(),
      OPENAI_BASE_URL: openai.url,
    };
  });

  after(async () => {
    await stopPlatform();
    for (const cluster of clusters) await cluster.stop().catch(() => undefined);
    await openai?.stop();
  });

  it('finds every record it showed before, every file’s bytes, and no blob unaccounted for', async () => {
    const dir = await scratch;
    const sourceDir = join(dir, 'backup-source');
    // Durable: a base backup relies on full-page writes and on what the WAL says being on disk.
    const source = await startPostgres(sourceDir);
    clusters.push(source);
    const sourceDb = createDb(source.url, { max: 2, log: testLog });
    await migrate(sourceDb);
    const client = await startPlatform(source.url, 'agentplane-backup-source');

    // Load: files uploaded (some deleted again) and runs made, until stopped.
    const agent = await client.post('/v1/agents', { name: 'restorable', model: 'gpt-4.1-mini', instructions: 'Answer.' });
    assert.equal(agent.status, 201, JSON.stringify(agent.body));
    let loading = true;
    const uploaded: string[] = [];
    // What the checks below look for is never deleted by the load; what came after may be. While the checks
    // take their list, the load deletes nothing, and a deletion under way ends before they start.
    const kept = new Set<string>();
    let holding = false;
    let deletion: Promise<void> = Promise.resolve();
    const load = (async () => {
      for (let i = 0; loading; i++) {
        const file = await client.upload({
          file: { data: Buffer.from(`Ledger page ${i}: Ada Lovelace wrote to Charles Babbage.`), filename: `page-${i}.txt` },
          purpose: 'context',
        });
        assert.equal(file.status, 200, JSON.stringify(file.body));
        uploaded.push(file.body.id);
        const doomed = uploaded.find((id) => !kept.has(id));
        if (i % 3 === 2 && doomed && !holding) {
          uploaded.splice(uploaded.indexOf(doomed), 1);
          deletion = (async () => assert.equal((await client.delete(`/v1/files/${doomed}`)).status, 200))();
          await deletion;
        }
        const run = await client.post(`/v1/agents/${agent.body.id}/run`, { input: `Question ${i}`, wait: false });
        assert.equal(run.status, 202, JSON.stringify(run.body));
      }
    })();

    const shownNow = async (): Promise<Shown> => {
      const ids = async (path: string) => ((await client.get(path)).body.data as { id: string }[]).map((item) => item.id);
      const files = await ids('/v1/files?limit=100');
      const processed = [];
      for (const id of files) if ((await client.get(`/v1/files/${id}`)).body.status === 'processed') processed.push(id);
      const nodes = (await Promise.all(processed.map((id) => ids(`/v1/files/${id}/nodes?limit=100`)))).flat();
      return { runs: await ids('/v1/runs?limit=100'), files, nodes, audit: await ids('/v1/audit-logs?limit=100') };
    };
    await eventually(async () => assert.ok((await shownNow()).nodes.length > 0), {
      timeoutMs: 60_000,
      message: 'no file was extracted under load',
    });
    holding = true;
    await deletion;
    const before = await shownNow();
    for (const id of [...uploaded, ...before.files]) kept.add(id);
    holding = false;

    // Work in flight at the backup: a run whose model call is still streaming when it is taken.
    openai.enqueue({ text: ['Still '], hang: true });
    await eventually(
      async () => {
        const { rows } = await sourceDb.query(`SELECT 1 FROM run_steps WHERE status = 'in_progress' AND type = 'model_call'`);
        assert.ok(rows.length > 0);
      },
      { timeoutMs: 30_000, message: 'no model call was under way' },
    );

    // The base backup, while the load goes on.
    const backupDir = join(dir, 'backup-restored');
    const walDir = join(dir, 'backup-wal');
    await mkdir(walDir, { recursive: true });
    // And a blob whose removal is pending at the backup, as a file's is between its deletion and its blob's.
    const pending = 'files/proj_backup/file_removal_pending';
    await s3.putObject('agentplane-backup-source', pending, Buffer.from('deleted, not yet removed'));
    await sourceDb.query(`INSERT INTO blob_deletions (blob_key, due_at) VALUES ($1, now())`, [pending]);
    const session = await sourceDb.connect();
    let pointInTime: string;
    try {
      await session.query(`SELECT pg_backup_start('agentplane backup test', true)`);
      await mkdir(backupDir, { mode: 0o700 });
      // tar keeps owners and modes; files that change or go while it reads are the WAL's to mend (exit 1).
      const copied = await command('sh', [
        '-c',
        `tar -C ${sourceDir} -cf - --warning=no-file-changed --warning=no-file-removed --ignore-failed-read ` +
          `--exclude=./postmaster.pid --exclude=./postmaster.opts --exclude='./pg_wal/*' . | tar -C ${backupDir} -xpf -`,
      ]);
      assert.ok(copied === 0 || copied === 1, `copying the data directory exited ${copied}`);
      const { rows } = await session.query<{ labelfile: string }>('SELECT labelfile FROM pg_backup_stop(false)');
      await writeFile(join(backupDir, 'backup_label'), rows[0]!.labelfile);
      pointInTime = (
        await session.query<{ at: string }>(
          `SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || '+00' AS at`,
        )
      ).rows[0]!.at;
    } finally {
      session.release();
    }
    // A little more load past the point in time, then the WAL that holds it.
    const uploadedBy = uploaded.length;
    await eventually(() => assert.ok(uploaded.length > uploadedBy + 2), { timeoutMs: 30_000, message: 'the load stalled' });
    await sourceDb.query('SELECT pg_switch_wal()');
    for (const segment of await readdir(join(sourceDir, 'pg_wal')))
      if (/^[0-9A-F]{24}$/.test(segment)) await copyFile(join(sourceDir, 'pg_wal', segment), join(walDir, segment));
    await chmod(walDir, 0o755);
    assert.equal(await command('chown', ['-R', '--reference', sourceDir, walDir]), 0);
    loading = false;
    await load;

    // The bucket as it stood at that time: each key's newest version no later than it, unless that is a deletion.
    const cutoff = new Date(pointInTime.replace(' ', 'T').replace('+00', 'Z'));
    const versions = await new Promise<{ name: string; lastModified: Date; versionId: string; isDeleteMarker: boolean }[]>(
      (resolve, reject) => {
        const found: { name: string; lastModified: Date; versionId: string; isDeleteMarker: boolean }[] = [];
        s3.listObjects('agentplane-backup-source', '', true, { IncludeVersion: true })
          .on('data', (item) => found.push(item as never))
          .on('error', reject)
          .on('end', () => resolve(found));
      },
    );
    const asOf = new Map<string, (typeof versions)[number]>();
    for (const version of versions.filter((v) => v.lastModified <= cutoff))
      if (!asOf.has(version.name) || asOf.get(version.name)!.lastModified < version.lastModified) asOf.set(version.name, version);
    for (const version of asOf.values()) {
      if (version.isDeleteMarker) continue;
      const bytes = await s3.getObject('agentplane-backup-source', version.name, { versionId: version.versionId });
      await s3.putObject('agentplane-backup-restored', version.name, bytes);
    }
    // The site the backup came from is gone, its model call in the middle.
    await stopPlatform('SIGKILL');
    await sourceDb.end();

    // The restore: recovery to the point in time, then the platform on the restored database and bucket.
    await appendFile(
      join(backupDir, 'postgresql.auto.conf'),
      `restore_command = 'cp "${walDir}/%f" "%p"'\nrecovery_target_time = '${pointInTime}'\nrecovery_target_action = 'promote'\n`,
    );
    await writeFile(join(backupDir, 'recovery.signal'), '');
    await copyFile(`${sourceDir}.password`, `${backupDir}.password`);
    assert.equal(await command('chown', ['-R', '--reference', sourceDir, backupDir]), 0);
    const restored = await startPostgres(backupDir);
    clusters.push(restored);
    const restoredDb: Db = createDb(restored.url, { max: 2, log: testLog });
    try {
      base.TEMPORAL_NAMESPACE = await isolatedNamespace('backup-restored');
      const after = await startPlatform(restored.url, 'agentplane-backup-restored');
      // The fresh namespace has none of the work in flight at the backup: `agentplane recover` starts it again,
      // and every run and file ends.
      const { rows: inFlight } = await restoredDb.query(`SELECT id FROM runs WHERE status IN ('queued', 'in_progress')`);
      assert.ok(inFlight.length > 0, 'no run was in flight at the backup');
      const recovering = runCli('recover', { ...base, DATABASE_URL: restored.url, S3_BUCKET: 'agentplane-backup-restored' });
      assert.equal((await recovering.exited).code, 0, recovering.output());
      assert.match(recovering.output(), /started again \d+ extractions and [1-9]\d* runs/);
      await eventually(
        async () => {
          const { rows } = await restoredDb.query<{ kind: string; id: string }>(
            `SELECT 'run' AS kind, id FROM runs WHERE status IN ('queued', 'in_progress')
             UNION ALL SELECT 'file', id FROM files WHERE status = 'processing'`,
          );
          assert.deepEqual(rows, []);
        },
        { timeoutMs: 90_000, message: 'work in flight at the backup did not end after recover' },
      );
      // Again, it finds nothing to do.
      const connection = await Connection.connect({ address: base.TEMPORAL_ADDRESS! });
      try {
        const again = await restartLostWork(restoredDb, new Client({ connection, namespace: base.TEMPORAL_NAMESPACE }));
        assert.deepEqual({ ...again, checked: 0 }, { checked: 0, files: 0, runs: 0, webhookDeliveries: 0 });
      } finally {
        await connection.close();
      }
      for (const id of before.runs) assert.equal((await after.get(`/v1/runs/${id}`)).status, 200, `run ${id}`);
      for (const id of before.files) {
        const file = await after.get(`/v1/files/${id}`);
        assert.equal(file.status, 200, `file ${id}`);
      }
      const nodesAfter = new Set(
        (await Promise.all(before.files.map(async (id) => (await after.get(`/v1/files/${id}/nodes?limit=100`)).body.data ?? [])))
          .flat()
          .map((node: { id: string }) => node.id),
      );
      for (const id of before.nodes) assert.ok(nodesAfter.has(id), `graph item ${id}`);
      const { rows: audited } = await restoredDb.query<{ id: string }>('SELECT id FROM audit_logs WHERE id = ANY($1::text[])', [
        before.audit,
      ]);
      assert.equal(audited.length, before.audit.length, 'audit entries shown before the backup are missing');

      // Every file's bytes are in the bucket; every blob there is a file's, or one whose removal is pending. The
      // records are read first: the restored platform's sweep may meanwhile remove a blob whose removal was
      // pending at the backup, and its pending row with it, so the bucket is listed after, as it stands then.
      const { rows: owned } = await restoredDb.query<{ blob_key: string }>(
        'SELECT blob_key FROM files UNION SELECT blob_key FROM blob_deletions',
      );
      const { rows: fileBlobs } = await restoredDb.query<{ blob_key: string }>('SELECT blob_key FROM files');
      const inBucket = new Set(
        await new Promise<string[]>((resolve, reject) => {
          const found: string[] = [];
          s3.listObjects('agentplane-backup-restored', '', true)
            .on('data', (item) => found.push(item.name!))
            .on('error', reject)
            .on('end', () => resolve(found));
        }),
      );
      for (const { blob_key } of fileBlobs) assert.ok(inBucket.has(blob_key), `the bytes of ${blob_key} are missing`);
      const accounted = new Set(owned.map((row) => row.blob_key));
      assert.deepEqual(
        [...inBucket].filter((key) => !accounted.has(key)),
        [],
      );
    } finally {
      await restoredDb.end();
    }
  });
});
