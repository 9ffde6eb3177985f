/** Builds the shared dependencies (database, blob store, Temporal client) from resolved settings. */
import { Client } from '@temporalio/client';
import { pino, type Logger } from 'pino';
import { createDb, type Db } from '../records/db.js';
import { migrate, pendingMigrations } from '../records/migrate.js';
import { ensureBootstrapKey, holdBootstrapKey } from '../records/api-keys.js';
import { ControllerKeyTaken, ensureControllerKey, holdControllerKey } from '../records/controller-key.js';
import { FilesystemBlobStore } from '../records/blobs/filesystem.js';
import { S3BlobStore, type S3Settings } from '../records/blobs/s3.js';
import type { BlobStore } from '../records/blobs/store.js';
import { ModelCatalogue } from '../models/catalogue.js';
import { ModelGateway } from '../models/gateway.js';
import { ConfigError, type Config } from './config.js';
import { GIB } from '../records/files.js';
import { findTool } from './tools.js';
import type { RateLimitDefaults } from '../api/context.js';
import type { EventStreamLimits } from '../api/event-stream-slots.js';
import type { AdmissionLimits } from '../api/fair-admission.js';
import type { WebhookSettings } from '../workflows/webhooks/client.js';
import type { RetentionSettings } from '../records/retention.js';
import type { DeclaredWorkerPool } from '../api/routes/networks/worker-pool.js';
import { temporalConnection } from '../workflows/temporal-connection.js';
import type { FairShareSettings } from '../workflows/project-shares.js';

export interface Services {
  db: Db;
  blobs: BlobStore;
  temporal: Client;
  log: Logger;
  models: ModelCatalogue;
  gateway: ModelGateway;
  /** AGENTPLANE_GRAPH_MODEL: the model that reads relations from context files, beside the offline patterns. */
  graphModel?: string;
  /** AGENTPLANE_JUDGE_MODEL: the model that judges finished runs (an LLM-as-judge score); none, heuristics only. */
  judgeModel?: string;
  /** AGENTPLANE_MEMORY_MODEL: the model that reads what subjects state into memories; none, the offline engine only. */
  memoryModel?: string;
  /** The embedding model's folder: context search ranks by meaning as well as words; none, words only. */
  embeddingModelDir?: string;
  toolsAllowPrivate: boolean;
  rateLimits?: RateLimitDefaults;
  /** AGENTPLANE_EVENT_STREAMS_*, AGENTPLANE_EVENT_STREAM_STALL_SECONDS; the defaults when absent. */
  eventStreamLimits?: EventStreamLimits;
  /** AGENTPLANE_API_REQUESTS_*, AGENTPLANE_API_QUEUE_WAIT_SECONDS, AGENTPLANE_API_FAIR_SHARE_*; the defaults when absent. */
  admission?: AdmissionLimits;
  /** AGENTPLANE_WEBHOOK_*; the defaults when absent. */
  webhooks?: WebhookSettings;
  /** AGENTPLANE_RETENTION_*; the defaults when absent. */
  retention?: RetentionSettings;
  /** AGENTPLANE_BASE_PATH: the path browsers reach the API under; empty at the root. */
  basePath?: string;
  /** AGENTPLANE_SESSION_TTL_SECONDS: a console session's lifetime. */
  sessionTtlSeconds?: number;
  /** AGENTPLANE_IDEMPOTENCY_KEY_HOURS: how long an `Idempotency-Key` replays its answer. */
  idempotencyKeyHours?: number;
  /** AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT, in bytes: the most a project's files may hold in all. */
  fileStorageBytesPerProject?: number;
  /** AGENTPLANE_EXPERIMENTS_PER_PROJECT: the most experiments a project may have queued or running at once. */
  experimentsPerProject?: number;
  /** AGENTPLANE_METRICS_PORT: where the API serves /metrics without a key; unset, on its own port to the bootstrap key. */
  metricsPort?: number;
  /** The built console's folder; dist/console by default (tests serve one of their own). */
  consoleDir?: string;
  /** AGENTPLANE_WORKER_POOLS: the pools the operator runs, each for one project. */
  workerPools?: readonly DeclaredWorkerPool[];
  /** AGENTPLANE_WORKER_FAIR_SHARE_*: projects' turns on a busy worker; the defaults when absent. */
  fairShare?: FairShareSettings;
  close(): Promise<void>;
}

export interface ServiceSettings {
  databaseUrl: string;
  temporalAddress: string;
  temporalNamespace: string;
  s3?: S3Settings;
  blobDir?: string;
  logLevel?: string;
  toolsAllowPrivate?: boolean;
  rateLimits?: RateLimitDefaults;
  admission?: AdmissionLimits;
  eventStreamLimits?: EventStreamLimits;
  webhooks?: WebhookSettings;
  retention?: RetentionSettings;
  basePath?: string;
  sessionTtlSeconds?: number;
  idempotencyKeyHours?: number;
  fileStorageGiBPerProject?: number;
  experimentsPerProject?: number;
  metricsPort?: number;
  workerPools?: readonly DeclaredWorkerPool[];
  fairShare?: FairShareSettings;
  /** Where OPENAI_*, ANTHROPIC_* and AGENTPLANE_MODELS are read; the process's environment when absent. */
  modelEnv?: NodeJS.ProcessEnv;
}

/**
 * `api` and `worker` hand their whole configuration to `openServices`: a setting named otherwise here
 * than in the configuration would be dropped there without a word, so this fails to compile instead.
 */
const SETTINGS_ARE_READ: [Exclude<keyof ServiceSettings, keyof Config>] extends [never] ? true : never = true;
void SETTINGS_ARE_READ;

export function createLogger(level = 'info'): Logger {
  return pino({ level, base: { service: 'agentplane' } });
}

export async function openServices(settings: ServiceSettings, log = createLogger(settings.logLevel)): Promise<Services> {
  const db = createDb(settings.databaseUrl, { log });
  const blobs = settings.s3 ? await new S3BlobStore(settings.s3).init() : await new FilesystemBlobStore(settings.blobDir!).init();
  // Lazy: the API starts while Temporal is still coming up, answers /readyz 503 meanwhile, and keeps
  // accepting uploads, whose extractions the worker's reconciler starts once Temporal answers.
  const connection = temporalConnection(settings.temporalAddress);
  const temporal = new Client({ connection, namespace: settings.temporalNamespace });
  const modelEnv = settings.modelEnv ?? process.env;
  const models = await ModelCatalogue.load(modelEnv, log);
  return {
    db,
    blobs,
    temporal,
    log,
    models,
    gateway: new ModelGateway(models, modelEnv),
    graphModel: modelEnv.AGENTPLANE_GRAPH_MODEL || undefined,
    judgeModel: modelEnv.AGENTPLANE_JUDGE_MODEL || undefined,
    memoryModel: modelEnv.AGENTPLANE_MEMORY_MODEL || undefined,
    embeddingModelDir: embeddingModelDir(log),
    toolsAllowPrivate: settings.toolsAllowPrivate ?? false,
    rateLimits: settings.rateLimits,
    eventStreamLimits: settings.eventStreamLimits,
    admission: settings.admission,
    webhooks: settings.webhooks,
    retention: settings.retention,
    basePath: settings.basePath,
    sessionTtlSeconds: settings.sessionTtlSeconds,
    idempotencyKeyHours: settings.idempotencyKeyHours,
    fileStorageBytesPerProject: settings.fileStorageGiBPerProject === undefined ? undefined : settings.fileStorageGiBPerProject * GIB,
    experimentsPerProject: settings.experimentsPerProject,
    metricsPort: settings.metricsPort,
    workerPools: settings.workerPools,
    fairShare: settings.fairShare,
    async close() {
      await connection.close();
      await db.end();
    },
  };
}

/**
 * Schema first, then the bootstrap key: what every process that serves the API needs before it listens.
 * With `migrate: false` the schema is only checked, since a deploy step migrates it.
 */
export async function prepareDatabase(
  db: Db,
  adminKey: string | undefined,
  log: Logger,
  options: { migrate?: boolean; controllerKey?: string } = {},
): Promise<void> {
  if (options.migrate === false) {
    const pending = await pendingMigrations(db);
    if (pending.length > 0) {
      throw new ConfigError(
        `the database schema is behind this version (${pending.join(', ')} not applied) and AGENTPLANE_MIGRATE=false: run \`agentplane migrate\` first.`,
      );
    }
  } else {
    const applied = await migrate(db);
    if (applied.length > 0) log.info({ applied }, 'migrations applied');
  }
  if (adminKey) await ensureBootstrapKey(db, adminKey);
  if (options.controllerKey) {
    await ensureControllerKey(db, options.controllerKey).catch((err) => {
      throw err instanceof ControllerKeyTaken ? new ConfigError(err.message) : err;
    });
  }
}

/**
 * Reports the configured bootstrap key (and the controller's, when configured) held once a minute for as long
 * as this process serves the API, so that each outlives a rolling update that configures another one
 * (records/api-keys.ts, records/controller-key.ts).
 */
export function keepConfiguredKeysHeld(
  db: Db,
  keys: { adminKey?: string; controllerKey?: string },
  log: Logger,
  everyMs = 60_000,
): { stop(): Promise<void> } {
  const { adminKey, controllerKey } = keys;
  let running: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    running = Promise.all([
      adminKey && holdBootstrapKey(db, adminKey).catch((err) => log.warn({ err }, 'could not report the bootstrap key held; retrying')),
      controllerKey &&
        holdControllerKey(db, controllerKey).catch((err) => log.warn({ err }, "could not report the controller's key held; retrying")),
    ]).then(() => {});
  }, everyMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}

/** Where scripts/deps put the embedding model; without it, context search ranks by words alone. */
function embeddingModelDir(log: Logger): string | undefined {
  try {
    return findTool('embedding-model');
  } catch (err) {
    log.warn({ err }, 'the embedding model is not installed: context search ranks by words alone');
    return undefined;
  }
}
