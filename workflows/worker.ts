/** The worker process: runs the workflows and activities on the `agentplane` task queue, or a network's worker pool's. */
import { NativeConnection, Runtime, Worker, type LogLevel, type LogMetadata, type WorkflowBundle } from '@temporalio/worker';
import type { Logger } from 'pino';
import { availableParallelism } from 'node:os';
import { createActivities, type ActivityDependencies } from './activities.js';
import { EXTRACTION_TASK_QUEUE, TASK_QUEUE, WEBHOOK_TASK_QUEUE } from './names.js';
import { projectGuard } from './pool-guard.js';
import { DEFAULT_FAIR_SHARE, fairShares, ProjectShares, projectsOfRuns } from './project-shares.js';
import { WEBHOOK_ATTEMPTS_AT_ONCE } from './webhooks/activities.js';
import { HOST_CALL_SLOTS_PER_PROJECT, RUN_ACTIVITY_SLOTS, SlotShares, slotShares } from './slot-shares.js';
import { workflowBundle } from './bundle.js';
import { HEARTBEAT_MS } from './heartbeats.js';

export interface WorkerSettings extends ActivityDependencies {
  temporalAddress: string;
  namespace: string;
  /** Default: the shared queue. */
  taskQueue?: string;
  /** The project a pool the operator runs is for (AGENTPLANE_WORKER_POOLS): its workers run that project's runs only. */
  poolProjectId?: string;
  /** A workflow bundle already loaded; the kept one (bundle.ts) when absent. */
  workflowBundle?: WorkflowBundle;
  /** How many CPU-heavy extraction stages run at once; default: one per core. */
  extractionConcurrency?: number;
  /** AGENTPLANE_SHUTDOWN_GRACE_SECONDS: how long the process has to stop; activities are cancelled part of the way in. */
  shutdownGraceSeconds?: number;
}

/** The workers of one process, run and stopped together. */
export interface WorkerGroup {
  run(): Promise<void>;
  shutdown(): void;
  getState(): ReturnType<Worker['getState']>;
  /** Whether every worker has stopped taking tasks and has none in flight (what stopping is waiting for is Temporal's goodbye). */
  drained(): boolean;
}

/**
 * How long activities in flight may go on after a stop is asked for, before they are cancelled: 10 s, or half the
 * shutdown grace when that is shorter, so that a cancelled attempt has the other half to end and give its work back.
 */
function activityGraceMs(shutdownGraceSeconds: number | undefined): number {
  return Math.min(10_000, ((shutdownGraceSeconds ?? Infinity) * 1000) / 2);
}

/**
 * The worker for a task queue. The shared queue's worker comes with a second one that runs only the
 * CPU-heavy extraction stages, on their own queue and at most `extractionConcurrency` at a time, so a burst of
 * uploads cannot starve runs of their activity slots, and a third for webhook delivery attempts, so that
 * receivers slow to answer cannot either.
 */
export async function createWorker(settings: WorkerSettings): Promise<{ worker: WorkerGroup; connection: NativeConnection }> {
  const connection = await NativeConnection.connect({ address: settings.temporalAddress });
  try {
    const taskQueue = settings.taskQueue ?? TASK_QUEUE;
    const projectOf = projectsOfRuns(settings.db);
    const activities = createActivities({ ...settings, runRead: projectOf.remember });
    const shares = new ProjectShares(settings.fairShare ?? DEFAULT_FAIR_SHARE);
    // Slots are shared out before turns are taken: a call refused a slot never waits for a turn first. A pool
    // the operator runs for one project has nobody else to keep slots for.
    const runInterceptors = [
      settings.poolProjectId
        ? projectGuard(settings.db, taskQueue, settings.poolProjectId)
        : slotShares(projectOf, new SlotShares(settings.fairShare?.hostCallsPerProject ?? HOST_CALL_SLOTS_PER_PROJECT, reportSlotsTaken)),
      ...(shares.enabled ? [fairShares(projectOf, shares)] : []),
    ];
    const shutdownGraceTime = activityGraceMs(settings.shutdownGraceSeconds);
    const workers = [
      await Worker.create({
        connection,
        namespace: settings.namespace,
        taskQueue,
        workflowBundle: settings.workflowBundle ?? (await workflowBundle()),
        activities,
        interceptors: { activity: runInterceptors },
        maxConcurrentActivityTaskExecutions: RUN_ACTIVITY_SLOTS,
        shutdownGraceTime,
        // Heartbeats carry cancellation to a running activity: a cancel reaches a call on another worker than its
        // run's workflow within HEARTBEAT_MS (on the same worker, at once).
        maxHeartbeatThrottleInterval: HEARTBEAT_MS,
      }),
    ];
    if (taskQueue === TASK_QUEUE) {
      workers.push(
        await Worker.create({
          connection,
          namespace: settings.namespace,
          taskQueue: EXTRACTION_TASK_QUEUE,
          activities,
          maxConcurrentActivityTaskExecutions: settings.extractionConcurrency ?? availableParallelism(),
          shutdownGraceTime,
          maxHeartbeatThrottleInterval: HEARTBEAT_MS,
        }),
        await Worker.create({
          connection,
          namespace: settings.namespace,
          taskQueue: WEBHOOK_TASK_QUEUE,
          activities,
          maxConcurrentActivityTaskExecutions: WEBHOOK_ATTEMPTS_AT_ONCE,
          shutdownGraceTime,
          // An attempt's heartbeats reach Temporal every HEARTBEAT_MS, well within its heartbeat timeout.
          maxHeartbeatThrottleInterval: HEARTBEAT_MS,
        }),
      );
    }
    return { worker: groupOf(workers), connection };
  } catch (err) {
    await connection.close();
    throw err;
  }
}

/** Into the process's log: the operator learns which project hit its share, and may give it a pool of its own. */
function reportSlotsTaken(projectId: string, perProject: number): void {
  Runtime.instance().logger.warn(
    `A project's calls to the hosts its agents name hold their share of this worker's activity slots (${perProject}); its calls past that are refused and retried.`,
    { projectId, perProject },
  );
}

function groupOf(workers: Worker[]): WorkerGroup {
  return {
    run: async () => {
      // One worker failing stops the others, so the process does not go on half-working.
      const runs = workers.map((w) => w.run());
      try {
        await Promise.all(runs);
      } catch (err) {
        for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
        await Promise.allSettled(runs);
        throw err;
      }
    },
    shutdown: () => {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    },
    getState: () => workers.find((w) => w.getState() !== 'RUNNING')?.getState() ?? 'RUNNING',
    drained: () => workers.every((w) => ['DRAINED', 'STOPPED', 'FAILED'].includes(w.getState())),
  };
}

let runtimeLoggerInstalled = false;

/**
 * Sends the Temporal SDK's own log lines (worker state, and the native core's, such as its gRPC retries
 * while the server is down) into the process's structured log; unforwarded, the core would print them
 * to stderr as coloured text. The SDK allows this once per process, before the first worker or native
 * connection.
 */
export function installRuntimeLogger(log: Logger): void {
  if (runtimeLoggerInstalled) return;
  runtimeLoggerInstalled = true;
  const sdk = log.child({ component: 'temporal' });
  const write = (level: LogLevel, message: string, meta?: LogMetadata) => {
    // The extraction worker runs activities only, by design; the SDK warns about that at every start.
    if (message.startsWith('No workflows registered')) level = 'DEBUG';
    const method = ({ TRACE: 'trace', DEBUG: 'debug', INFO: 'info', WARN: 'warn', ERROR: 'error' } as const)[level];
    sdk[method](meta ?? {}, message);
  };
  Runtime.install({
    logger: {
      log: write,
      trace: (message, meta) => write('TRACE', message, meta),
      debug: (message, meta) => write('DEBUG', message, meta),
      info: (message, meta) => write('INFO', message, meta),
      warn: (message, meta) => write('WARN', message, meta),
      error: (message, meta) => write('ERROR', message, meta),
    },
    // The process stops its workers itself, on SIGINT, SIGTERM and SIGHUP (cli/shutdown.ts), within its grace and in
    // order; the SDK's own handlers would also stop them on SIGQUIT and SIGUSR2 and leave the process running idle.
    shutdownSignals: [],
    telemetryOptions: {
      logging: {
        forward: {},
        // The core's warnings and errors; its debug output only when the process logs at that level.
        filter: { core: log.isLevelEnabled('trace') ? 'TRACE' : log.isLevelEnabled('debug') ? 'DEBUG' : 'WARN', other: 'ERROR' },
      },
    },
  });
}
