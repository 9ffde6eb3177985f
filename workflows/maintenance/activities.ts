/**
 * Maintenance's I/O: start extraction for any file whose start was missed (the API died between commit
 * and start, or Temporal was briefly down) and likewise any run's, cancel the runs an `interrupt` run replaced
 * whose cancellation was missed the same way, wake queued runs whose turn has come,
 * remove blobs whose deletion is due, forget expired idempotency keys, and expire what is past its retention.
 * Each is safe to repeat.
 */
import { Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import type { BlobStore } from '../../records/blobs/store.js';
import { filesStillProcessing, recordExtractionStarted } from '../../records/files.js';
import { sweepDueBlobs } from '../../records/blob-leases.js';
import { purgeExpiredResponses } from '../../records/idempotency.js';
import { sweepFinishedConsoleSessions } from '../../records/console-sessions.js';
import { startExtraction } from '../extraction/client.js';
import { WorkflowNotFoundError } from '@temporalio/client';
import { interruptsLeft, recordRunWorkflowStarted, staleQueuedRuns, waitingQueueHeads } from '../../records/runs.js';
import { interruptRun, runWorkflowId, startRunOf } from '../runs/client.js';
import { schedulesBehind } from '../../records/schedules.js';
import { syncSchedule } from '../schedules/client.js';
import { networkRunWorkflowId } from '../networks/client.js';
import { ADMIT_SIGNAL } from '../runs/ids.js';
import { staleQueuedExperiments } from '../../records/experiments.js';
import { startExperimentWorkflow } from '../experiments/client.js';
import {
  DEFAULT_RETENTION,
  clearStepPayloadsOlderThan,
  deleteExtractionLeftoversOlderThan,
  deleteWebhookDeliveriesOlderThan,
  dropDayPartitionsOlderThan,
  exportAndExpireAuditLogs,
  makeComingDayPartitions,
  type RetentionSettings,
} from '../../records/retention.js';

/** Files older than this that are still `processing` get their (idempotent) start again. */
const MISSED_START_AFTER_MS = 60_000;
/** Runs queued longer than this get their (idempotent) start again; a waiting `enqueue` run keeps its workflow. */
const MISSED_RUN_START_AFTER_S = 15;
/** Queued runs whose turn came this long ago and still wait get their wake again (the first one was lost). */
const LOST_WAKE_AFTER_S = 15;
const MISSED_START_FAILED = 'a missed start failed again; the next round retries it';
/** Interruptions asked for this long ago and still owed (Temporal was unreachable then) are sent again. */
const INTERRUPT_OWED_AFTER_S = 10;
/** Schedules changed longer ago than this whose Temporal Schedule is still behind get it written again. */
const SCHEDULE_BEHIND_AFTER_S = 5;

/** Starts one round retries at most, of runs and of files each: the rest wait for the next round, 30 s later. */
export const MISSED_STARTS_PER_ROUND = 100;

/**
 * Does `act` for each item; one that fails (say, Temporal refusing it) is logged with `failed` and left for the
 * next round, so it cannot keep the items after it from their turn. The count is of those done.
 */
async function forEachItem<T extends { id: string }>(items: T[], failed: string, act: (item: T) => Promise<void>): Promise<number> {
  let done = 0;
  let firstFailure: unknown;
  for (const item of items) {
    try {
      await act(item);
      done++;
    } catch (err) {
      firstFailure ??= err;
      Context.current().log.warn(failed, { id: item.id, error: String(err) });
    }
  }
  // Nothing done at all: the dependency is down, and the round should say so.
  if (items.length > 0 && done === 0) throw firstFailure;
  return done;
}

export interface MaintenanceDependencies {
  db: Db;
  blobs: BlobStore;
  /** AGENTPLANE_RETENTION_*: the defaults when absent. */
  retention?: RetentionSettings;
}

export const createMaintenanceActivities = ({ db, blobs, retention = DEFAULT_RETENTION }: MaintenanceDependencies) => ({
  async restartMissedExtractions(): Promise<number> {
    // The worker's own client: the same Temporal connection and namespace as the worker running this.
    const { client } = Context.current();
    const files = await filesStillProcessing(db, new Date(Date.now() - MISSED_START_AFTER_MS), MISSED_STARTS_PER_ROUND);
    return forEachItem(files, MISSED_START_FAILED, async (file) => {
      await startExtraction(client, file.id, file.projectId);
      await recordExtractionStarted(db, file.id);
    });
  },

  /** Runs whose start was missed, and experiments' (whose workflow, once started, marks them running at once). */
  async restartMissedRuns(): Promise<number> {
    const { client } = Context.current();
    const runs = await staleQueuedRuns(db, MISSED_RUN_START_AFTER_S, MISSED_STARTS_PER_ROUND);
    const started = await forEachItem(runs, MISSED_START_FAILED, async (run) => {
      await startRunOf(client, run);
      await recordRunWorkflowStarted(db, run.id);
    });
    const experiments = await staleQueuedExperiments(db, MISSED_RUN_START_AFTER_S, MISSED_STARTS_PER_ROUND);
    return (
      started +
      (await forEachItem(experiments, MISSED_START_FAILED, (experiment) =>
        startExperimentWorkflow(client, experiment.id, experiment.projectId),
      ))
    );
  },

  /** Cancels the runs an `interrupt` run replaced whose cancellation never reached Temporal (it was down at the time). */
  async interruptRunsLeft(): Promise<number> {
    const { client } = Context.current();
    const runs = await interruptsLeft(db, INTERRUPT_OWED_AFTER_S, MISSED_STARTS_PER_ROUND);
    return forEachItem(runs, 'interrupting a replaced run failed again; the next round retries it', (run) => interruptRun(client, db, run));
  },

  /** Writes the Temporal Schedules that missed their schedule's latest change (Temporal was down at the time). */
  async reconcileSchedules(): Promise<number> {
    const { client } = Context.current();
    const behind = await schedulesBehind(db, SCHEDULE_BEHIND_AFTER_S, MISSED_STARTS_PER_ROUND);
    return forEachItem(
      behind.map((id) => ({ id })),
      'writing a Temporal Schedule failed again; the next round retries it',
      ({ id }) => syncSchedule(db, client, id),
    );
  },

  /** Wakes each queued run whose turn has come but whose wake was lost; a workflow gone meanwhile is passed over. */
  async wakeWaitingRuns(): Promise<number> {
    const { client } = Context.current();
    const runs = await waitingQueueHeads(db, LOST_WAKE_AFTER_S, MISSED_STARTS_PER_ROUND);
    return forEachItem(runs, 'waking a queued run failed; the next round tries again', async (run) => {
      await client.workflow
        .getHandle(run.network ? networkRunWorkflowId(run.id) : runWorkflowId(run.id))
        .signal(ADMIT_SIGNAL)
        .catch((err: unknown) => {
          if (!(err instanceof WorkflowNotFoundError)) throw err;
        });
    });
  },

  /** Sweeps until nothing is due or its time budget is spent; see `sweepDueBlobs`. */
  removeDueBlobs(): Promise<number> {
    return sweepDueBlobs(db, blobs);
  },

  purgeExpiredIdempotencyKeys(): Promise<number> {
    return purgeExpiredResponses(db);
  },

  /** Sessions past their end, of keys that never signed in again (signing in removes a key's own). */
  removeFinishedConsoleSessions(): Promise<number> {
    return sweepFinishedConsoleSessions(db);
  },

  /** The days of the run-event log older than its retention, dropped whole; the runs and their steps stay. How many days. */
  expireRunEventLogs(): Promise<number> {
    return dropDayPartitionsOlderThan(db, 'run_events', retention.runEventsDays);
  },

  expireWebhookDeliveries(): Promise<number> {
    return deleteWebhookDeliveriesOlderThan(db, retention.webhookDeliveriesDays);
  },

  /** The partitions of the days to come, so that no write waits for one; how many were missing. */
  makeComingPartitions(): Promise<number> {
    return makeComingDayPartitions(db);
  },

  /** The days of the usage ledger older than its retention, dropped whole; their hourly rollups stay. How many days. */
  expireUsageRecords(): Promise<number> {
    return dropDayPartitionsOlderThan(db, 'usage_records', retention.usageRecordsDays);
  },

  /** Runs whose steps' messages and tool calls were cleared, past their retention; the runs and their steps stay. */
  expireStepPayloads(): Promise<number> {
    return clearStepPayloadsOlderThan(db, retention.stepPayloadsDays);
  },

  expireExtractionLeftovers(): Promise<number> {
    return deleteExtractionLeftoversOlderThan(db, retention.extractionLeftoversDays);
  },

  /** With a retention set, the audit log's days older than it, each exported to the blob store before it goes. */
  async expireAuditLogs(): Promise<number> {
    return retention.auditLogsDays === null ? 0 : exportAndExpireAuditLogs(db, blobs, retention.auditLogsDays);
  },
});

export type MaintenanceActivities = ReturnType<typeof createMaintenanceActivities>;
