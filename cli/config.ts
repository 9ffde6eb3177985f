/** Everything the processes read from the environment, in one place (the README lists the same). */
import { resolve } from 'node:path';
import type { S3Settings } from '../records/blobs/s3.js';
import { TASK_QUEUE } from '../workflows/names.js';
import type { RateLimitDefaults } from '../api/context.js';
import { DEFAULT_EVENT_STREAM_LIMITS, type EventStreamLimits } from '../api/event-stream-slots.js';
import { DEFAULT_ADMISSION_LIMITS, type AdmissionLimits } from '../api/fair-admission.js';
import { DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from '../workflows/webhooks/client.js';
import { DEFAULT_RETENTION, type RetentionSettings } from '../records/retention.js';
import { DEFAULT_IDEMPOTENCY_KEY_HOURS } from '../records/idempotency.js';
import { DEFAULT_FILE_STORAGE_GIB_PER_PROJECT } from '../records/files.js';
import { DEFAULT_EXPERIMENTS_PER_PROJECT } from '../records/experiments.js';
import { DEFAULT_EXTRACTION_SLICE_SECONDS, DEFAULT_FAIR_SHARE, type FairShareSettings } from '../workflows/project-shares.js';
import { HOST_CALL_SLOTS_PER_PROJECT, RUN_ACTIVITY_SLOTS } from '../workflows/slot-shares.js';
import { normaliseBasePath } from '../api/base-path.js';
import { DEFAULT_SESSION_TTL_SECONDS } from '../api/middleware/console-session.js';
import { DEFAULT_SHUTDOWN_GRACE_SECONDS } from './shutdown.js';
import { dnsServersFromEnv, dnsServersProblem } from '../tools/outbound-lookups.js';
import { outboundNetworksFromEnv, outboundNetworksProblem } from '../tools/network-guard.js';
import { CONTROLLER_POOL_PREFIX, type DeclaredWorkerPool } from '../api/routes/networks/worker-pool.js';

export interface Config {
  port: number;
  /** Unset: `dev` listens on loopback only, `api` on every interface. */
  host?: string;
  dataDir: string;
  adminKey?: string;
  /** AGENTPLANE_CONTROLLER_KEY: the Kubernetes controller's key, registered at start with the agents scopes only. */
  controllerKey?: string;
  /** AGENTPLANE_WORKER_POOLS: the worker pools the operator runs, each for one project. */
  workerPools: DeclaredWorkerPool[];
  databaseUrl?: string;
  temporalAddress?: string;
  temporalNamespace: string;
  s3?: S3Settings;
  blobDir?: string;
  logLevel: string;
  /** AGENTPLANE_TOOLS_ALLOW_PRIVATE: agent tools may call private and loopback addresses. */
  toolsAllowPrivate: boolean;
  /** AGENTPLANE_WEBHOOK_*: whether endpoints may be private, and the retry schedule and disabling of deliveries. */
  webhooks: WebhookSettings;
  /** AGENTPLANE_RETENTION_*: how long what ages is kept (records/retention.ts). */
  retention: RetentionSettings;
  /** The environment the model providers' settings are read from (OPENAI_*, ANTHROPIC_*, AGENTPLANE_MODELS). */
  modelEnv: NodeJS.ProcessEnv;
  /** Where `worker` answers /healthz and /readyz for a pod's probes; none when unset. */
  probePort?: number;
  /** AGENTPLANE_METRICS_PORT: where `api` and `dev` serve /metrics without a key; unset, on PORT to the bootstrap key. */
  metricsPort?: number;
  /** The Temporal task queue `worker` polls: the shared one, or a network's worker pool's. */
  taskQueue: string;
  /** AGENTPLANE_EXTRACTION_CONCURRENCY: CPU-heavy extraction stages one worker runs at once; default one per core. */
  extractionConcurrency?: number;
  /** AGENTPLANE_WORKER_FAIR_SHARE_*: when and for how long a project over its share of a busy worker waits for its turn. */
  fairShare: FairShareSettings;
  /** AGENTPLANE_RATE_LIMIT_*: the limits of keys without their own, and of each project's keys together; unset, unlimited. */
  rateLimits: RateLimitDefaults;
  /** AGENTPLANE_EVENT_STREAMS_PER_KEY, _PER_PROCESS, AGENTPLANE_EVENT_STREAM_STALL_SECONDS: run event streams' bounds. */
  eventStreamLimits: EventStreamLimits;
  /** AGENTPLANE_API_REQUESTS_AT_ONCE, _QUEUED_PER_PROJECT, AGENTPLANE_API_QUEUE_WAIT_SECONDS, AGENTPLANE_API_FAIR_SHARE_*: fair admission's bounds. */
  admission: AdmissionLimits;
  /** AGENTPLANE_BASE_PATH: the path browsers reach the API under (`/agentplane`), normalised; '' at the root. */
  basePath: string;
  /** AGENTPLANE_SESSION_TTL_SECONDS: how long a console session lasts from sign-in; 8 hours by default. */
  sessionTtlSeconds: number;
  /** AGENTPLANE_IDEMPOTENCY_KEY_HOURS: how long an `Idempotency-Key` replays its answer. */
  idempotencyKeyHours: number;
  /** AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT: the most a project's files may hold in all, in GiB. */
  fileStorageGiBPerProject: number;
  /** AGENTPLANE_EXPERIMENTS_PER_PROJECT: the most experiments a project may have queued or running at once. */
  experimentsPerProject: number;
  /** AGENTPLANE_SHUTDOWN_GRACE_SECONDS: how long a process may take to stop on SIGTERM before it exits regardless. */
  shutdownGraceSeconds: number;
  /** False: `api` leaves migrations to `agentplane migrate` (a deploy step) and refuses a schema that is behind. */
  migrate: boolean;
}

export class ConfigError extends Error {}

export function readConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty PORT means unset; Number() alone would take '', ' ', '0x50' or '1e3' for a port.
  const portText = env.PORT || '8080';
  const port = Number(portText);
  if (!/^\d+$/.test(portText) || port > 65535) throw new ConfigError(`PORT must be a port number, not '${env.PORT}'.`);
  const dataDir = resolve(env.AGENTPLANE_DATA_DIR ?? './.agentplane');
  const s3Vars = ['S3_ENDPOINT', 'S3_BUCKET', 'S3_ACCESS_KEY', 'S3_SECRET_KEY'] as const;
  let s3: S3Settings | undefined;
  if (s3Vars.some((name) => env[name])) {
    const missing = s3Vars.filter((name) => !env[name]);
    if (missing.length > 0) throw new ConfigError(`S3 storage is partly configured: set ${missing.join(', ')}.`);
    s3 = {
      endpoint: env.S3_ENDPOINT!,
      bucket: env.S3_BUCKET!,
      accessKey: env.S3_ACCESS_KEY!,
      secretKey: env.S3_SECRET_KEY!,
      region: env.S3_REGION,
    };
  }
  for (const name of ['AGENTPLANE_ADMIN_KEY', 'AGENTPLANE_CONTROLLER_KEY']) {
    if (env[name] !== undefined && !/^ap_[A-Za-z0-9_-]{20,120}$/.test(env[name])) {
      throw new ConfigError(`${name} must look like ap_ followed by 20 to 120 letters, digits, _ or -.`);
    }
  }
  if (env.AGENTPLANE_CONTROLLER_KEY !== undefined && env.AGENTPLANE_CONTROLLER_KEY === env.AGENTPLANE_ADMIN_KEY) {
    throw new ConfigError(
      'AGENTPLANE_CONTROLLER_KEY must differ from AGENTPLANE_ADMIN_KEY: the controller gets a key of its own, with the agents scopes only.',
    );
  }
  const migrate = env.AGENTPLANE_MIGRATE || 'true';
  if (migrate !== 'true' && migrate !== 'false')
    throw new ConfigError(`AGENTPLANE_MIGRATE must be true or false, not '${env.AGENTPLANE_MIGRATE}'.`);
  const allowPrivate = env.AGENTPLANE_TOOLS_ALLOW_PRIVATE || 'false';
  if (allowPrivate !== 'true' && allowPrivate !== 'false') {
    throw new ConfigError(`AGENTPLANE_TOOLS_ALLOW_PRIVATE must be true or false, not '${env.AGENTPLANE_TOOLS_ALLOW_PRIVATE}'.`);
  }
  const taskQueue = env.AGENTPLANE_TASK_QUEUE || TASK_QUEUE;
  if (!/^[a-z0-9]([a-z0-9.-]{0,98}[a-z0-9])?$/.test(taskQueue)) {
    throw new ConfigError(`AGENTPLANE_TASK_QUEUE must be 1 to 100 lowercase letters, digits, . and -, not '${env.AGENTPLANE_TASK_QUEUE}'.`);
  }
  const concurrencyText = env.AGENTPLANE_EXTRACTION_CONCURRENCY || undefined;
  if (concurrencyText !== undefined && (!/^\d+$/.test(concurrencyText) || Number(concurrencyText) < 1 || Number(concurrencyText) > 64)) {
    throw new ConfigError(`AGENTPLANE_EXTRACTION_CONCURRENCY must be a whole number from 1 to 64, not '${concurrencyText}'.`);
  }
  const probePortText = env.AGENTPLANE_PROBE_PORT;
  if (probePortText !== undefined && (!/^\d+$/.test(probePortText) || Number(probePortText) > 65535)) {
    throw new ConfigError(`AGENTPLANE_PROBE_PORT must be a port number, not '${probePortText}'.`);
  }
  const metricsPortText = env.AGENTPLANE_METRICS_PORT || undefined;
  if (metricsPortText !== undefined && (!/^\d+$/.test(metricsPortText) || Number(metricsPortText) > 65535)) {
    throw new ConfigError(`AGENTPLANE_METRICS_PORT must be a port number, not '${metricsPortText}'.`);
  }
  const rateLimits = {
    requestsPerMinute: wholeNumber(env, 'AGENTPLANE_RATE_LIMIT_REQUESTS_PER_MINUTE', 1, 1_000_000, undefined),
    concurrentRuns: wholeNumber(env, 'AGENTPLANE_RATE_LIMIT_CONCURRENT_RUNS', 1, 100_000, undefined),
    projectRequestsPerMinute: wholeNumber(env, 'AGENTPLANE_RATE_LIMIT_PROJECT_REQUESTS_PER_MINUTE', 1, 10_000_000, undefined),
    projectConcurrentRuns: wholeNumber(env, 'AGENTPLANE_RATE_LIMIT_PROJECT_CONCURRENT_RUNS', 1, 1_000_000, undefined),
  };
  const fairShare: FairShareSettings = {
    busyUtilization: wholeNumber(env, 'AGENTPLANE_WORKER_FAIR_SHARE_BUSY_PERCENT', 0, 100, DEFAULT_FAIR_SHARE.busyUtilization * 100) / 100,
    maxWaitMs: wholeNumber(env, 'AGENTPLANE_WORKER_FAIR_SHARE_MAX_WAIT_MS', 0, 60_000, DEFAULT_FAIR_SHARE.maxWaitMs),
    hostCallsPerProject: wholeNumber(env, 'AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT', 1, RUN_ACTIVITY_SLOTS, HOST_CALL_SLOTS_PER_PROJECT),
    extractionSliceSeconds: wholeNumber(env, 'AGENTPLANE_EXTRACTION_SLICE_SECONDS', 1, 3_600, DEFAULT_EXTRACTION_SLICE_SECONDS),
  };
  const webhookAllowPrivate = env.AGENTPLANE_WEBHOOK_ALLOW_PRIVATE || 'false';
  if (webhookAllowPrivate !== 'true' && webhookAllowPrivate !== 'false') {
    throw new ConfigError(`AGENTPLANE_WEBHOOK_ALLOW_PRIVATE must be true or false, not '${env.AGENTPLANE_WEBHOOK_ALLOW_PRIVATE}'.`);
  }
  const webhooks: WebhookSettings = {
    allowPrivate: webhookAllowPrivate === 'true',
    retryInitialMs: wholeNumber(env, 'AGENTPLANE_WEBHOOK_RETRY_INITIAL_MS', 1, 86_400_000, DEFAULT_WEBHOOK_SETTINGS.retryInitialMs),
    maxAttempts: wholeNumber(env, 'AGENTPLANE_WEBHOOK_MAX_ATTEMPTS', 1, 50, DEFAULT_WEBHOOK_SETTINGS.maxAttempts),
    disableAfter: wholeNumber(env, 'AGENTPLANE_WEBHOOK_DISABLE_AFTER', 1, 1000, DEFAULT_WEBHOOK_SETTINGS.disableAfter),
  };
  const retention: RetentionSettings = {
    runEventsDays: wholeNumber(env, 'AGENTPLANE_RETENTION_RUN_EVENTS_DAYS', 1, 3650, DEFAULT_RETENTION.runEventsDays),
    webhookDeliveriesDays: wholeNumber(
      env,
      'AGENTPLANE_RETENTION_WEBHOOK_DELIVERIES_DAYS',
      1,
      3650,
      DEFAULT_RETENTION.webhookDeliveriesDays,
    ),
    stepPayloadsDays: wholeNumber(env, 'AGENTPLANE_RETENTION_STEP_PAYLOADS_DAYS', 1, 3650, DEFAULT_RETENTION.stepPayloadsDays),
    usageRecordsDays: wholeNumber(env, 'AGENTPLANE_RETENTION_USAGE_RECORDS_DAYS', 1, 3650, DEFAULT_RETENTION.usageRecordsDays),
    extractionLeftoversDays: wholeNumber(
      env,
      'AGENTPLANE_RETENTION_EXTRACTION_LEFTOVERS_DAYS',
      1,
      3650,
      DEFAULT_RETENTION.extractionLeftoversDays,
    ),
    // Unset: the audit log is kept.
    auditLogsDays: wholeNumber(env, 'AGENTPLANE_RETENTION_AUDIT_LOGS_DAYS', 1, 36500, DEFAULT_RETENTION.auditLogsDays ?? undefined) ?? null,
  };
  // Read where lookups are made (tools/outbound-lookups.ts); checked here so a bad value stops the start.
  const dnsProblem = dnsServersProblem(dnsServersFromEnv(env) ?? []);
  if (dnsProblem) {
    throw new ConfigError(
      `AGENTPLANE_DNS_SERVERS must be IP addresses with optional ports, separated by commas (10.0.0.10,[2001:db8::53]:5353), not '${env.AGENTPLANE_DNS_SERVERS}': ${dnsProblem}.`,
    );
  }
  // Read where requests are guarded (tools/network-guard.ts); checked here so a bad value stops the start.
  const networksProblem = outboundNetworksProblem(outboundNetworksFromEnv(env) ?? []);
  if (networksProblem) {
    throw new ConfigError(
      `AGENTPLANE_OUTBOUND_NETWORKS must be CIDR blocks separated by commas (10.20.0.0/16,2001:db8::/32), not '${env.AGENTPLANE_OUTBOUND_NETWORKS}': ${networksProblem}.`,
    );
  }
  const basePath = normaliseBasePath(env.AGENTPLANE_BASE_PATH ?? '');
  if (basePath === null) {
    throw new ConfigError(
      `AGENTPLANE_BASE_PATH must be a URL path such as /agentplane (letters, digits, . _ ~ - between slashes), not '${env.AGENTPLANE_BASE_PATH}'.`,
    );
  }
  const eventStreamLimits: EventStreamLimits = {
    perKey: wholeNumber(env, 'AGENTPLANE_EVENT_STREAMS_PER_KEY', 1, 100_000, DEFAULT_EVENT_STREAM_LIMITS.perKey),
    perProcess: wholeNumber(env, 'AGENTPLANE_EVENT_STREAMS_PER_PROCESS', 1, 1_000_000, DEFAULT_EVENT_STREAM_LIMITS.perProcess),
    stallSeconds: wholeNumber(env, 'AGENTPLANE_EVENT_STREAM_STALL_SECONDS', 1, 3600, DEFAULT_EVENT_STREAM_LIMITS.stallSeconds),
  };
  const admission: AdmissionLimits = {
    atOnce: wholeNumber(env, 'AGENTPLANE_API_REQUESTS_AT_ONCE', 1, 10_000, DEFAULT_ADMISSION_LIMITS.atOnce),
    queuedPerProject: wholeNumber(env, 'AGENTPLANE_API_REQUESTS_QUEUED_PER_PROJECT', 0, 100_000, DEFAULT_ADMISSION_LIMITS.queuedPerProject),
    queueWaitSeconds: wholeNumber(env, 'AGENTPLANE_API_QUEUE_WAIT_SECONDS', 1, 600, DEFAULT_ADMISSION_LIMITS.queueWaitSeconds),
    busyUtilization:
      wholeNumber(env, 'AGENTPLANE_API_FAIR_SHARE_BUSY_PERCENT', 0, 100, DEFAULT_ADMISSION_LIMITS.busyUtilization * 100) / 100,
    shareWaitMs: wholeNumber(env, 'AGENTPLANE_API_FAIR_SHARE_MAX_WAIT_MS', 0, 60_000, DEFAULT_ADMISSION_LIMITS.shareWaitMs),
  };
  return {
    port,
    rateLimits,
    eventStreamLimits,
    admission,
    basePath,
    idempotencyKeyHours: wholeNumber(env, 'AGENTPLANE_IDEMPOTENCY_KEY_HOURS', 1, 720, DEFAULT_IDEMPOTENCY_KEY_HOURS),
    fileStorageGiBPerProject: wholeNumber(
      env,
      'AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT',
      1,
      1_000_000,
      DEFAULT_FILE_STORAGE_GIB_PER_PROJECT,
    ),
    experimentsPerProject: wholeNumber(env, 'AGENTPLANE_EXPERIMENTS_PER_PROJECT', 1, 1_000, DEFAULT_EXPERIMENTS_PER_PROJECT),
    shutdownGraceSeconds: shutdownGraceSecondsOf(env),
    sessionTtlSeconds: wholeNumber(env, 'AGENTPLANE_SESSION_TTL_SECONDS', 60, 30 * 24 * 60 * 60, DEFAULT_SESSION_TTL_SECONDS),
    host: env.HOST || undefined,
    probePort: probePortText === undefined ? undefined : Number(probePortText),
    metricsPort: metricsPortText === undefined ? undefined : Number(metricsPortText),
    taskQueue,
    extractionConcurrency: concurrencyText === undefined ? undefined : Number(concurrencyText),
    fairShare,
    dataDir,
    adminKey: env.AGENTPLANE_ADMIN_KEY,
    controllerKey: env.AGENTPLANE_CONTROLLER_KEY || undefined,
    workerPools: workerPoolsOf(env.AGENTPLANE_WORKER_POOLS),
    databaseUrl: env.DATABASE_URL,
    temporalAddress: env.TEMPORAL_ADDRESS,
    temporalNamespace: env.TEMPORAL_NAMESPACE ?? 'default',
    s3,
    blobDir: env.AGENTPLANE_BLOB_DIR,
    logLevel: env.LOG_LEVEL ?? 'info',
    migrate: migrate === 'true',
    toolsAllowPrivate: allowPrivate === 'true',
    webhooks,
    retention,
    modelEnv: env,
  };
}

/** `queue=project_id`, comma-separated: the pools the operator runs, each polling its queue for one project. */
function workerPoolsOf(text: string | undefined): DeclaredWorkerPool[] {
  const pools = (text ?? '')
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean)
    .map((entry) => {
      const [queue = '', projectId = '', ...rest] = entry.split('=');
      if (!/^[a-z0-9]([a-z0-9.-]{0,98}[a-z0-9])?$/.test(queue) || !/^proj_[A-Za-z0-9]+$/.test(projectId) || rest.length > 0) {
        throw new ConfigError(`AGENTPLANE_WORKER_POOLS takes task-queue=project-id, comma-separated (e.g. gpu=proj_123), not '${entry}'.`);
      }
      if (queue.startsWith(CONTROLLER_POOL_PREFIX)) {
        throw new ConfigError(
          `AGENTPLANE_WORKER_POOLS: '${queue}' starts with ${CONTROLLER_POOL_PREFIX}, which the Kubernetes controller's pools use; name it otherwise.`,
        );
      }
      return { queue, projectId };
    });
  const twice = pools.find((pool, i) => pools.findIndex((p) => p.queue === pool.queue) !== i);
  if (twice) throw new ConfigError(`AGENTPLANE_WORKER_POOLS names '${twice.queue}' twice: a pool runs for one project.`);
  return pools;
}

/** `api` and `worker` run against real services only: each one missing is named. */
export function requireServices(config: Config): Required<Pick<Config, 'databaseUrl' | 'temporalAddress'>> {
  const missing: string[] = [];
  if (!config.databaseUrl) missing.push('DATABASE_URL');
  if (!config.temporalAddress) missing.push('TEMPORAL_ADDRESS');
  if (!config.s3 && !config.blobDir) missing.push('S3_ENDPOINT (with S3_BUCKET, S3_ACCESS_KEY, S3_SECRET_KEY) or AGENTPLANE_BLOB_DIR');
  if (missing.length > 0) throw new ConfigError(`Missing configuration: set ${missing.join('; ')}.`);
  return { databaseUrl: config.databaseUrl!, temporalAddress: config.temporalAddress! };
}

/** AGENTPLANE_SHUTDOWN_GRACE_SECONDS, read by every long-running command, the controller's included. */
export function shutdownGraceSecondsOf(env: NodeJS.ProcessEnv): number {
  return wholeNumber(env, 'AGENTPLANE_SHUTDOWN_GRACE_SECONDS', 1, 3600, DEFAULT_SHUTDOWN_GRACE_SECONDS);
}

/** A whole number from `min` to `max` in the variable `name`; `fallback` when unset or empty. */
function wholeNumber<Fallback extends number | undefined>(
  env: NodeJS.ProcessEnv,
  name: string,
  min: number,
  max: number,
  fallback: Fallback,
): number | Fallback {
  const text = env[name];
  if (!text) return fallback;
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max)
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max.toLocaleString('en-US')}, not '${text}'.`);
  return Number(text);
}
