/**
 * The API and a worker in this process, wired to the real services exactly as `agentplane dev` wires
 * them, plus tenants (a project with an admin key) so each suite works in isolation.
 */
import { findTool } from '../../cli/tools.js';
import type { Server } from 'node:http';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@temporalio/client';
import type { WorkflowBundle } from '@temporalio/worker';
import { pino } from 'pino';
import { serveApi } from '../../cli/api-process.js';
import type { Stoppable } from '../../cli/processes.js';
import { serveWorker } from '../../cli/worker-process.js';
import { prepareDatabase, type Services } from '../../cli/runtime.js';
import { newSecret, type Scope } from '../../records/api-keys.js';
import { ensureControllerKey } from '../../records/controller-key.js';
import { FilesystemBlobStore } from '../../records/blobs/filesystem.js';
import type { Db } from '../../records/db.js';
import { installRuntimeLogger } from '../../workflows/worker.js';
import { workflowBundle as keptWorkflowBundle } from '../../workflows/bundle.js';
import { ModelCatalogue } from '../../models/catalogue.js';
import { ModelGateway } from '../../models/gateway.js';
import { RunEventFeed } from '../../records/run-event-feed.js';
import { EventStreamSlots, type EventStreamLimits } from '../../api/event-stream-slots.js';
import type { AdmissionLimits } from '../../api/fair-admission.js';
import type { ApiDeps, RateLimitDefaults } from '../../api/context.js';
import { ApiClient } from './client.js';
import type { DeclaredWorkerPool } from '../../api/routes/networks/worker-pool.js';
import { DEFAULT_WEBHOOK_SETTINGS, type WebhookSettings } from '../../workflows/webhooks/client.js';
import { temporalConnection } from '../../workflows/temporal-connection.js';
import { postgres, scratch, temporal, testLog } from './services.js';
import type { FairShareSettings } from '../../workflows/project-shares.js';

export interface TestApi {
  url: string;
  server: Server;
  services: Services;
  blobDir: string;
  temporalAddress: string;
  /** A client holding the bootstrap admin key. */
  root: ApiClient;
  /** Where /metrics is served without a key, with a metrics port of its own. */
  metricsUrl?: string;
  stop(): Promise<void>;
}

/**
 * The SDK's log in a test process: errors only. Failing activities are what many suites are about, and a warning
 * for each would bury the report.
 */
export function quietTemporalRuntime(): void {
  installRuntimeLogger(pino({ level: process.env.TEST_LOG_LEVEL ?? 'error' }));
}

/**
 * Receivers listen on loopback, and a delivery's attempts come a fraction of a second apart rather than
 * over hours. Every test API dispatches with these, so whichever worker takes an event, it is sent alike.
 */
export const TEST_WEBHOOK_SETTINGS: WebhookSettings = {
  ...DEFAULT_WEBHOOK_SETTINGS,
  allowPrivate: true,
  retryInitialMs: 200,
  maxAttempts: 4,
  disableAfter: 3,
};

// One bootstrap key for the whole run: configuring another one revokes the previous, as in production.
const bootstrapKey = newSecret();

let bundle: Promise<WorkflowBundle> | undefined;
export const workflowBundle = () => (bundle ??= keptWorkflowBundle());

/** Starts an API (and, unless `worker: false`, a worker) against the shared services. */
export interface TestApiOptions {
  worker?: boolean;
  namespace?: string;
  /** The model providers' settings (OPENAI_BASE_URL, …); none by default. */
  modelEnv?: NodeJS.ProcessEnv;
  /** The deployment's default rate limits (AGENTPLANE_RATE_LIMIT_*); unlimited by default. */
  rateLimits?: RateLimitDefaults;
  /** AGENTPLANE_EVENT_STREAMS_*: the caps on run event streams; the defaults when absent. */
  eventStreamLimits?: EventStreamLimits;
  /** AGENTPLANE_API_REQUESTS_*, AGENTPLANE_API_QUEUE_WAIT_SECONDS, AGENTPLANE_API_FAIR_SHARE_*: fair admission's bounds; the defaults when absent. */
  admission?: AdmissionLimits;
  /** Webhook delivery settings; receivers on loopback are allowed by default. */
  webhooks?: Partial<WebhookSettings>;
  /** AGENTPLANE_BASE_PATH, normalised (`/agentplane`); the root by default. */
  basePath?: string;
  /** AGENTPLANE_SESSION_TTL_SECONDS; 8 hours by default. */
  sessionTtlSeconds?: number;
  /** The built console's folder; dist/console by default. */
  consoleDir?: string;
  /** AGENTPLANE_METRICS_PORT (0: any free port); unset by default, so /metrics is on the API's port. */
  metricsPort?: number;
  /** AGENTPLANE_WORKER_POOLS: the pools the operator runs, each for one project; none by default. */
  workerPools?: DeclaredWorkerPool[];
  /** A database of its own (`isolatedDatabase`) rather than the shared one. */
  db?: Db;
  /** AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT, in bytes: what a project's files may hold; 100 GiB by default. */
  fileStorageBytesPerProject?: number;
  /** AGENTPLANE_WORKER_FAIR_SHARE_*, AGENTPLANE_WORKER_HOST_CALLS_PER_PROJECT, AGENTPLANE_EXTRACTION_SLICE_SECONDS: the worker's shares; the defaults when absent. */
  fairShare?: FairShareSettings;
}

export async function startTestApi(options: TestApiOptions = {}): Promise<TestApi> {
  quietTemporalRuntime();
  const [pg, tp] = await Promise.all([postgres(), temporal()]);
  const blobDir = join(await scratch, 'blobs');
  await mkdir(blobDir, { recursive: true });
  const namespace = options.namespace ?? 'default';
  const connection = temporalConnection(tp.address);
  await connection.ensureConnected();
  const log = testLog;
  const modelEnv = options.modelEnv ?? {};
  const models = await ModelCatalogue.load(modelEnv, log);
  const services: Services = {
    db: options.db ?? pg.db,
    blobs: await new FilesystemBlobStore(blobDir).init(),
    temporal: new Client({ connection, namespace }),
    log,
    models,
    gateway: new ModelGateway(models, modelEnv),
    graphModel: modelEnv.AGENTPLANE_GRAPH_MODEL || undefined,
    judgeModel: modelEnv.AGENTPLANE_JUDGE_MODEL || undefined,
    memoryModel: modelEnv.AGENTPLANE_MEMORY_MODEL || undefined,
    embeddingModelDir: findTool('embedding-model'),
    // Test tool and model servers listen on loopback.
    toolsAllowPrivate: true,
    rateLimits: options.rateLimits,
    eventStreamLimits: options.eventStreamLimits,
    admission: options.admission,
    webhooks: { ...TEST_WEBHOOK_SETTINGS, ...options.webhooks },
    basePath: options.basePath,
    sessionTtlSeconds: options.sessionTtlSeconds,
    consoleDir: options.consoleDir,
    metricsPort: options.metricsPort,
    workerPools: options.workerPools,
    fairShare: options.fairShare,
    fileStorageBytesPerProject: options.fileStorageBytesPerProject,
    close: async () => connection.close(),
  };
  await prepareDatabase(services.db, bootstrapKey, log);
  const stoppables: Stoppable[] = [];
  if (options.worker !== false) {
    stoppables.push(await serveWorker(services, tp.address, namespace, await workflowBundle()));
  }
  const api = await serveApi(services, 0, '127.0.0.1');
  stoppables.push(api);
  return {
    url: api.url,
    server: api.server,
    services,
    blobDir,
    temporalAddress: tp.address,
    root: new ApiClient(api.url, bootstrapKey),
    metricsUrl: api.metricsUrl,
    async stop() {
      for (const s of [...stoppables].reverse()) await s.stop();
      await services.close();
    },
  };
}

let shared: Promise<TestApi> | undefined;
/** One API with a worker for the suites that need nothing special; stopped by the root hook. */
export function sharedApi(): Promise<TestApi> {
  return (shared ??= startTestApi());
}

export async function stopSharedApi(): Promise<void> {
  if (shared) await (await shared).stop();
}

/**
 * A client holding a Kubernetes controller's key, registered as the API registers AGENTPLANE_CONTROLLER_KEY at
 * start (the agents scopes, in the bootstrap project).
 */
export async function controllerClient(api: TestApi): Promise<ApiClient> {
  const secret = newSecret();
  await ensureControllerKey(api.services.db, secret);
  return new ApiClient(api.url, secret);
}

export interface Tenant {
  projectId: string;
  /** A client holding the project's admin key. */
  admin: ApiClient;
  /** A new key in this project with exactly these scopes. */
  keyWith(...scopes: Scope[]): Promise<ApiClient>;
}

export async function newTenant(api: Pick<TestApi, 'url' | 'root'>, name = 'test'): Promise<Tenant> {
  const project = await api.root.typed.POST('/v1/projects', { body: { name } });
  if (!project.data) throw new Error(`project creation answered ${project.response.status}`);
  const projectId = project.data.id;
  const keyWith = async (...scopes: Scope[]) => {
    const key = await api.root.typed.POST('/v1/api-keys', { body: { name: `${name} ${scopes.join(' ')}`, scopes, project_id: projectId } });
    if (!key.data?.key) throw new Error(`key creation answered ${key.response.status}: ${JSON.stringify(key.error)}`);
    return new ApiClient(api.url, key.data.key);
  };
  return { projectId, admin: await keyWith('admin'), keyWith };
}

/** What the API needs beyond the services a suite builds itself: no model provider, a feed not listening (streams poll). */
export async function apiDepsOf(services: Pick<ApiDeps, 'db' | 'blobs' | 'temporal' | 'log'>): Promise<ApiDeps> {
  return {
    ...services,
    models: await ModelCatalogue.load({}, services.log),
    runEvents: new RunEventFeed(services.db.connectionString, services.log),
    streamSlots: new EventStreamSlots(),
    toolsAllowPrivate: true,
  };
}

/** The activities' dependencies of a worker built from a test API's services. */
export function workerDependenciesOf(services: Services) {
  return {
    db: services.db,
    blobs: services.blobs,
    models: { catalogue: services.models, gateway: services.gateway, graphModel: services.graphModel, judgeModel: services.judgeModel },
    embeddingModelDir: services.embeddingModelDir,
    toolsAllowPrivate: services.toolsAllowPrivate,
    webhooks: services.webhooks,
  };
}
