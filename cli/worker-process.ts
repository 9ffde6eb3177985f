/** The Temporal worker as `dev` and `worker` run it, and the probes of a worker of its own. */
import { setTimeout as delay } from 'node:timers/promises';
import type { WorkflowBundle } from '@temporalio/worker';
import { createHttpServer } from '../api/idle-connections.js';
import { scheduledRunAdmission } from '../api/routes/schedules/admission.js';
import { createWorker, installRuntimeLogger, type WorkerGroup } from '../workflows/worker.js';
import { scheduleMaintenance } from '../workflows/maintenance/client.js';
import { TASK_QUEUE } from '../workflows/names.js';
import { useSpeechPython } from '../workflows/extraction/engines/speech/transcriber.js';
import { WebhookDispatcher } from '../workflows/webhooks/dispatcher.js';
import { DEFAULT_WEBHOOK_SETTINGS } from '../workflows/webhooks/client.js';
import { ConfigError } from './config.js';
import type { Stoppable } from './processes.js';
import type { Services } from './runtime.js';
import { DEFAULT_SHUTDOWN_GRACE_SECONDS } from './shutdown.js';
import { findTool } from './tools.js';

// While Temporal does not answer, a worker coming up asks again this often (each ask bounded by the same).
const TEMPORAL_WAIT_STEP_MS = 2_000;

/**
 * Waits until Temporal answers for the worker's namespace, however long that takes: a worker started before Temporal (or during its
 * restart) comes up once it can, instead of exiting. Says so in the log once, and once it is over.
 */
async function untilTemporalAnswers(services: Services): Promise<void> {
  let waiting = false;
  for (;;) {
    try {
      await services.temporal.connection.withDeadline(Date.now() + TEMPORAL_WAIT_STEP_MS, () =>
        services.temporal.workflowService.describeNamespace({ namespace: services.temporal.options.namespace }),
      );
      if (waiting) services.log.info('Temporal answers; the worker starts');
      return;
    } catch (err) {
      if (!waiting) services.log.warn({ err }, 'waiting for Temporal to answer before the worker starts');
      waiting = true;
      await new Promise((resolve) => setTimeout(resolve, TEMPORAL_WAIT_STEP_MS));
    }
  }
}

// How long the worker's calls that set up the maintenance Schedule may take: a Temporal just started again on its data
// can take seconds over its first answers.
const SCHEDULE_SETUP_DEADLINE_MS = 15_000;

/** Whether Temporal did not answer in time or could not be reached (gRPC DEADLINE_EXCEEDED, UNAVAILABLE): asking again can help. */
function temporalDidNotAnswer(err: unknown): boolean {
  // The Temporal client wraps the gRPC error in one of its own, as its cause.
  for (let e: unknown = err, depth = 0; typeof e === 'object' && e !== null && depth < 4; e = (e as { cause?: unknown }).cause, depth++) {
    const { code } = e as { code?: unknown };
    if (code === 4 || code === 14) return true;
  }
  return false;
}

/** Creates or updates the maintenance Schedule, asking again for as long as Temporal is slow to answer or unreachable. */
async function scheduleMaintenanceOnceTemporalAnswers(services: Services): Promise<void> {
  let waiting = false;
  for (;;) {
    try {
      await services.temporal.connection.withDeadline(Date.now() + SCHEDULE_SETUP_DEADLINE_MS, () =>
        scheduleMaintenance(services.temporal),
      );
      if (waiting) services.log.info('the maintenance schedule is set up');
      return;
    } catch (err) {
      if (!temporalDidNotAnswer(err)) throw err;
      if (!waiting) services.log.warn({ err }, 'Temporal did not answer while the maintenance schedule was set up; asking again');
      waiting = true;
      await new Promise((resolve) => setTimeout(resolve, TEMPORAL_WAIT_STEP_MS));
    }
  }
}

export async function serveWorker(
  services: Services,
  temporalAddress: string,
  namespace: string,
  workflowBundle?: WorkflowBundle,
  taskQueue = TASK_QUEUE,
  extractionConcurrency?: number,
  poolProjectId?: string,
  shutdownGraceSeconds = DEFAULT_SHUTDOWN_GRACE_SECONDS,
): Promise<Stoppable & { running(): boolean }> {
  installRuntimeLogger(services.log);
  try {
    useSpeechPython(findTool('speech-python'));
  } catch (err) {
    services.log.warn({ err }, 'speech-to-text is not installed: audio files will fail extraction until it is');
  }
  await untilTemporalAnswers(services);
  // Once per cluster, not per worker: the schedule runs each round on whichever shared worker takes it. A
  // network's dedicated workers run that network's runs only.
  if (taskQueue === TASK_QUEUE) await scheduleMaintenanceOnceTemporalAnswers(services);
  const { worker, connection } = await createWorker({
    db: services.db,
    blobs: services.blobs,
    models: {
      catalogue: services.models,
      gateway: services.gateway,
      graphModel: services.graphModel,
      judgeModel: services.judgeModel,
      memoryModel: services.memoryModel,
    },
    embeddingModelDir: services.embeddingModelDir,
    toolsAllowPrivate: services.toolsAllowPrivate,
    webhooks: services.webhooks,
    retention: services.retention,
    admitScheduledRun: scheduledRunAdmission({ db: services.db, rateLimits: services.rateLimits }),
    projectConcurrentRuns: services.rateLimits?.projectConcurrentRuns,
    temporalAddress,
    namespace,
    taskQueue,
    workflowBundle,
    extractionConcurrency,
    poolProjectId,
    fairShare: services.fairShare,
    shutdownGraceSeconds,
  });
  const running = worker.run();
  // Each shared worker turns recorded events into webhook deliveries; dispatchers share the work.
  const dispatcher =
    taskQueue === TASK_QUEUE
      ? new WebhookDispatcher(services.db, services.temporal, services.webhooks ?? DEFAULT_WEBHOOK_SETTINGS, services.log).start()
      : null;
  return {
    running: () => worker.getState() === 'RUNNING',
    async stop() {
      await dispatcher?.stop();
      if (worker.getState() === 'RUNNING') worker.shutdown();
      const confirmed = await Promise.race([running.then(() => true), drainedFor(worker, TEMPORAL_GOODBYE_MS).then(() => false)]);
      if (confirmed) await connection.close();
      else services.log.warn('the worker has drained; Temporal did not answer its goodbye, which is not waited for');
    },
  };
}

// Once a worker has drained, the SDK says goodbye to Temporal (so its sticky queue goes at once) before it stops; an
// unreachable Temporal holds that call for 30 s, which is not worth a stop that has nothing left in flight.
const TEMPORAL_GOODBYE_MS = 2_000;

/**
 * Resolves `ms` after every worker of the group has drained: nothing in flight, no task to be taken. Its timers keep
 * no process alive once the worker has stopped.
 */
async function drainedFor(worker: WorkerGroup, ms: number): Promise<void> {
  while (!worker.drained()) await delay(100, undefined, { ref: false });
  await delay(ms, undefined, { ref: false });
}

/**
 * The worker's probes, for a pod: `/healthz` answers while the process lives (also while it waits for
 * Temporal), `/readyz` once the worker polls its task queue.
 */
export async function serveWorkerProbes(port: number, host: string | undefined, ready: () => boolean): Promise<Stoppable> {
  const server = createHttpServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const ok = path === '/healthz' ? true : path === '/readyz' ? ready() : undefined;
    if (ok === undefined) res.writeHead(404).end();
    else res.writeHead(ok ? 200 : 503, { 'content-type': 'application/json' }).end(JSON.stringify({ status: ok ? 'ok' : 'unavailable' }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new ConfigError(`${host ?? '0.0.0.0'}:${port} is already in use; set AGENTPLANE_PROBE_PORT to a free port.`)
          : err,
      ),
    );
    server.listen(port, host, () => resolve());
  });
  return { stop: () => new Promise((resolve) => server.close(() => resolve())) };
}
