import type { Client } from '@temporalio/client';
import type { ParameterizedContext } from 'koa';
import type { Logger } from 'pino';
import type { Db } from '../records/db.js';
import type { BlobStore } from '../records/blobs/store.js';
import type { RunEventFeed } from '../records/run-event-feed.js';
import type { EventStreamSlots } from './event-stream-slots.js';
import type { AdmissionLimits, Place } from './fair-admission.js';
import type { ModelCatalogue } from '../models/catalogue.js';
import type { ApiKeyRecord, KeyRateLimits } from '../records/api-keys.js';
import type { ConsoleSessionRecord } from '../records/console-sessions.js';

/** The deployment's rate limits (AGENTPLANE_RATE_LIMIT_*), for keys without their own; unset is unlimited. */
export interface RateLimitDefaults {
  requestsPerMinute?: number;
  concurrentRuns?: number;
  /** AGENTPLANE_RATE_LIMIT_PROJECT_*: what a project's keys may have together, however many it makes; unset, unlimited. */
  projectRequestsPerMinute?: number;
  projectConcurrentRuns?: number;
}
import type { WebhookSettings } from '../workflows/webhooks/client.js';
import type { DeclaredWorkerPool } from './routes/networks/worker-pool.js';

/** What the API needs from the outside world; tests and the CLI build it the same way. */
export interface ApiDeps {
  db: Db;
  blobs: BlobStore;
  temporal: Client;
  log: Logger;
  models: ModelCatalogue;
  /** Wakes SSE streams and waiting requests when a run's log grows. */
  runEvents: RunEventFeed;
  /** The event streams this process holds open, capped per key and in all (AGENTPLANE_EVENT_STREAMS_*). */
  streamSlots: EventStreamSlots;
  /** AGENTPLANE_TOOLS_ALLOW_PRIVATE: agent tools may name private and loopback addresses. */
  toolsAllowPrivate: boolean;
  /** AGENTPLANE_WEBHOOK_*: whether endpoints may be private, for registration; the defaults when absent. */
  webhooks?: WebhookSettings;
  /** The embedding model's folder, if installed: search ranks passages by meaning as well as words. */
  embeddingModelDir?: string;
  rateLimits?: RateLimitDefaults;
  /** AGENTPLANE_API_REQUESTS_*, AGENTPLANE_API_QUEUE_WAIT_SECONDS, AGENTPLANE_API_FAIR_SHARE_*: fair admission's bounds; the defaults when absent. */
  admission?: AdmissionLimits;
  /** AGENTPLANE_JUDGE_MODEL: whether runs can be judged (a backfill may then ask for `judge`). */
  judgeModel?: string;
  /** AGENTPLANE_BASE_PATH: the path browsers reach the API under (`/agentplane`); empty at the root. */
  basePath?: string;
  /** AGENTPLANE_IDEMPOTENCY_KEY_HOURS: how long an `Idempotency-Key` replays its answer; 24 when absent. */
  idempotencyKeyHours?: number;
  /** AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT, in bytes: the most a project's files may hold in all; 100 GiB when absent. */
  fileStorageBytesPerProject?: number;
  /** AGENTPLANE_EXPERIMENTS_PER_PROJECT: the most experiments a project may have queued or running at once; 10 when absent. */
  experimentsPerProject?: number;
  /** AGENTPLANE_SESSION_TTL_SECONDS: how long a console session lasts from sign-in. */
  sessionTtlSeconds?: number;
  /**
   * AGENTPLANE_METRICS_PORT: /metrics is served there, without a key, and not on the API's own port. Unset,
   * the API's port serves it to the bootstrap key alone: it shows every project's traffic.
   */
  metricsPort?: number;
  /** Failed console sign-ins a client address may make a minute (api/middleware/failed-sign-ins.ts). */
  failedSignInsPerMinute?: number;
  /** The built console (index.html, assets/); dist/console beside the compiled API by default. */
  consoleDir?: string;
  /** AGENTPLANE_WORKER_POOLS: the worker pools the operator runs, each for one project; none by default. */
  workerPools?: readonly DeclaredWorkerPool[];
}

export interface Caller {
  apiKeyId: string;
  projectId: string;
  scopes: readonly string[];
  /** The key from AGENTPLANE_ADMIN_KEY: the only one that manages projects. */
  bootstrap: boolean;
  /** The key from AGENTPLANE_CONTROLLER_KEY: the only one that names the Kubernetes controller's worker pools. */
  controller: boolean;
  rateLimits: KeyRateLimits;
}

export interface ApiState {
  requestId: string;
  log: Logger;
  caller?: Caller;
  /** The request's place in its project's turns on this process (fair-admission.ts), once admitted. */
  place?: Place;
  /** A request authenticated by the console's session cookie: the session, its key and its token. */
  session?: { record: ConsoleSessionRecord; key: ApiKeyRecord; token: string };
  /** The audit entry of a mutating request (audited()); `committed` once written with the mutation. */
  audit?: { action: string; targetType: string; committed: boolean };
  /** Set by a handler that acted on a record, for the audit entry. */
  auditTargetId?: string | null;
  /** Set when the record changed belongs to another project than the caller's (the bootstrap key's reach). */
  auditProjectId?: string;
  errorCode?: string;
}

export type ApiContext = ParameterizedContext<ApiState>;

export function callerOf(ctx: ApiContext): Caller {
  if (!ctx.state.caller) throw new Error('route is missing authenticate()');
  return ctx.state.caller;
}
