/**
 * What the benchmarks run against: PostgreSQL and Temporal started the way `agentplane dev` starts them,
 * and every server under test (the API, its worker, the baselines) as a Node process of its own, so each
 * has its own event loop and its memory can be read from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startPostgres, startTemporal, stopChild } from '../cli/embedded.js';
import { newSecret } from '../records/api-keys.js';
import { createLogger } from '../cli/runtime.js';
import { createDb } from '../records/db.js';
import { migrate } from '../records/migrate.js';
import { LOOPBACK_NETWORKS } from '../test/support/processes.js';
import { Connection } from '@temporalio/client';
import Long from 'long';

const READY_TIMEOUT_MS = 90_000;
const OUTPUT_TAIL_CHARS = 4000;

export interface ServerProcess {
  name: string;
  url: string;
  pid: number;
  /** The last few kilobytes it wrote, for error messages. */
  output(): string;
}

export interface Stack {
  adminKey: string;
  /** The PostgreSQL the API uses, for benchmarks that seed it directly. */
  databaseUrl: string;
  api: ServerProcess;
  bareUpload: ServerProcess;
  bareKoaPg: ServerProcess;
  /** The loopback OpenAI-compatible server the API and worker call (its URL ends in /v1). */
  model: ServerProcess;
  worker: ServerProcess;
  /** The compiled CLI, and the settings the API and the worker were started with: for benchmarks that start more. */
  cli: string;
  env: Record<string, string>;
  /**
   * Starts another API and worker on the same PostgreSQL, in a Temporal namespace of their own (so that each worker
   * takes only its own API's runs), with `env` added to their settings.
   */
  startPair(name: string, env: Record<string, string>): Promise<{ api: ServerProcess; worker: ServerProcess }>;
}

/** Things to undo, last first. Running it again waits for the same teardown. */
export class Teardown {
  private readonly steps: { name: string; undo: () => Promise<unknown> }[] = [];
  private running: Promise<void> | undefined;

  add(name: string, undo: () => Promise<unknown>): void {
    this.steps.push({ name, undo });
    // Something that came up after the teardown began (an interrupted start) is undone as well.
    if (this.running) this.running = this.running.then(() => this.undoAll());
  }

  async run(): Promise<void> {
    this.running ??= this.undoAll();
    for (let awaited: Promise<void> | undefined; awaited !== this.running;) {
      awaited = this.running;
      await awaited;
    }
  }

  private async undoAll(): Promise<void> {
    for (let step = this.steps.pop(); step; step = this.steps.pop()) {
      await step.undo().catch((err: Error) => console.error(`bench: stopping ${step!.name} failed: ${err.message}`));
    }
  }
}

const script = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));

/** `env`: settings for the API and the worker beyond the ones every benchmark needs. */
export async function startStack(teardown: Teardown, env: Record<string, string> = {}): Promise<Stack> {
  const dir = await mkdtemp(join(tmpdir(), 'agentplane-bench-'));
  teardown.add('the scratch directory', () => rm(dir, { recursive: true, force: true }));
  // Readable by others: as root, PostgreSQL drops to its own user and must reach its directory.
  await chmod(dir, 0o755);
  const blobDir = join(dir, 'blobs');
  const bareUploadDir = join(dir, 'bare-uploads');
  await Promise.all([mkdir(blobDir), mkdir(bareUploadDir)]);

  // fsync off, as in the test suite: the figures are about the API, not the disk under PostgreSQL.
  const starting = { postgres: startPostgres(join(dir, 'postgres'), { durable: false }), temporal: startTemporal() };
  // Registered before either is up: should one fail to start, the other is still stopped once it is.
  teardown.add('PostgreSQL', () =>
    starting.postgres.then(
      (service) => service.stop(),
      () => {},
    ),
  );
  teardown.add('Temporal', () =>
    starting.temporal.then(
      (service) => service.stop(),
      () => {},
    ),
  );
  const [postgres, temporal] = await Promise.all([starting.postgres, starting.temporal]);

  // Migrated here so the API and the worker can start side by side.
  const db = createDb(postgres.url, { max: 1, log: createLogger('warn') });
  await migrate(db).finally(() => db.end());

  // Up before the API and the worker, which list its models when they start.
  const modelPort = await freePort();
  const modelServer = await startServer(teardown, 'loopback model server', modelPort, [script('./model-server.js')], {}, '/v1/models');
  const model = { ...modelServer, url: `${modelServer.url}/v1` };

  const adminKey = newSecret();
  const agentplaneEnv = {
    DATABASE_URL: postgres.url,
    TEMPORAL_ADDRESS: temporal.address,
    AGENTPLANE_BLOB_DIR: blobDir,
    AGENTPLANE_ADMIN_KEY: adminKey,
    HOST: '127.0.0.1',
    LOG_LEVEL: 'warn',
    OPENAI_BASE_URL: model.url,
    // The webhooks benchmark's receiver listens on loopback, and nothing else is reached.
    AGENTPLANE_WEBHOOK_ALLOW_PRIVATE: 'true',
    AGENTPLANE_OUTBOUND_NETWORKS: LOOPBACK_NETWORKS,
    ...env,
  };
  const cli = script('../cli/agentplane.js');
  const [apiPort, bareUploadPort, bareKoaPgPort] = await Promise.all([freePort(), freePort(), freePort()]);
  // All spawned before the first wait, so a failure of one leaves no other to start after teardown.
  const worker = startProcess(teardown, 'worker', [cli, 'worker'], agentplaneEnv);
  const workerProcess: ServerProcess = { name: 'worker', url: '', pid: worker.child.pid!, output: worker.output };
  const [api, bareUpload, bareKoaPg] = await Promise.all([
    startServer(teardown, 'api', apiPort, [cli, 'api'], agentplaneEnv, '/readyz'),
    startServer(
      teardown,
      'bare upload server',
      bareUploadPort,
      [script('./baselines/bare-upload-server.js')],
      { UPLOAD_DIR: bareUploadDir },
      '/',
    ),
    startServer(
      teardown,
      'bare Koa + pg',
      bareKoaPgPort,
      [script('./baselines/bare-koa-pg.js')],
      { DATABASE_URL: postgres.url },
      '/healthz',
    ),
  ]);
  const startPair = async (name: string, pairEnv: Record<string, string>) => {
    const namespace = `bench-${name}`;
    await registerNamespace(temporal.address, namespace);
    const settings = { ...agentplaneEnv, TEMPORAL_NAMESPACE: namespace, ...pairEnv };
    const pairWorker = startProcess(teardown, `${name} worker`, [cli, 'worker'], settings);
    const pairApi = await startServer(teardown, `${name} api`, await freePort(), [cli, 'api'], settings, '/readyz');
    return { api: pairApi, worker: { name: `${name} worker`, url: '', pid: pairWorker.child.pid!, output: pairWorker.output } };
  };
  return {
    adminKey,
    databaseUrl: postgres.url,
    api,
    bareUpload,
    bareKoaPg,
    model,
    worker: workerProcess,
    cli,
    env: agentplaneEnv,
    startPair,
  };
}

/** Registers a Temporal namespace and waits until the server knows it. */
async function registerNamespace(address: string, namespace: string): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(86_400) },
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const known = await connection.workflowService.describeNamespace({ namespace }).then(
        () => true,
        () => false,
      );
      if (known) return;
      if (Date.now() > deadline) throw new Error(`Temporal did not know the namespace ${namespace} in time`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  } finally {
    await connection.close();
  }
}

/**
 * With BENCH_CPU_PROF_DIR set, each process writes V8 CPU profiles into a folder of its own there when it exits
 * (`<name>/CPU.….cpuprofile`): one for each of its threads, so that the worker's main thread (its activities) and
 * its workflow threads each have theirs, and none overwrites another's.
 */
function profiling(name: string): string[] {
  const dir = process.env.BENCH_CPU_PROF_DIR;
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${join(dir, name.replace(/\W+/g, '-'))}`] : [];
}

function startProcess(
  teardown: Teardown,
  name: string,
  args: string[],
  env: Record<string, string>,
): { child: ChildProcess; output: () => string } {
  const child = spawn(process.execPath, [...profiling(name), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  teardown.add(name, () => stopChild(child));
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-OUTPUT_TAIL_CHARS));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { child, output: () => output };
}

/** Starts a server on `port` (loopback) at once, and resolves when `readyPath` answers 200. */
function startServer(
  teardown: Teardown,
  name: string,
  port: number,
  args: string[],
  env: Record<string, string>,
  readyPath: string,
): Promise<ServerProcess> {
  const { child, output } = startProcess(teardown, name, args, { ...env, PORT: String(port) });
  return whenReady(name, `http://127.0.0.1:${port}`, readyPath, child, output);
}

/** Resolves once `readyPath` under `url` answers 200, asking every `intervalMs`; fails if `child` exits first. */
export async function whenReady(
  name: string,
  url: string,
  readyPath: string,
  child: ChildProcess,
  output: () => string,
  intervalMs = 200,
): Promise<ServerProcess> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited (${child.exitCode}) before it was ready:\n${output()}`);
    const status = await fetch(url + readyPath, { signal: AbortSignal.timeout(2000) }).then(
      (response) => response.arrayBuffer().then(() => response.status),
      () => 0,
    );
    if (status === 200) return { name, url, pid: child.pid!, output };
    if (Date.now() > deadline)
      throw new Error(`${name} was not ready within ${READY_TIMEOUT_MS / 1000} s (last status ${status}):\n${output()}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

/** What a benchmark that seeds the database and reads through the API is given. */
export interface BenchTarget {
  apiUrl: string;
  adminKey: string;
  databaseUrl: string;
}

/** A JSON request to the API with `key`; its body, or an error naming the request and the answer. */
export async function callApi(url: string, key: string, init: RequestInit = {}): Promise<any> {
  const response = await fetch(url, {
    ...init,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...init.headers },
  });
  const body = await response.json();
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url} answered ${response.status}: ${JSON.stringify(body).slice(0, 500)}`);
  return body;
}
