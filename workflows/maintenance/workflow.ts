/**
 * One round of the cluster's maintenance duties. The maintenance Schedule (client.ts) starts it, so one
 * round at a time runs for the whole cluster however many workers there are.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities } from './activities.js';

const {
  restartMissedExtractions,
  restartMissedRuns,
  wakeWaitingRuns,
  removeDueBlobs,
  purgeExpiredIdempotencyKeys,
  removeFinishedConsoleSessions,
} = proxyActivities<MaintenanceActivities>({
  // The blob sweep stops itself after 20 s; the others are single queries. A duty still failing after its
  // retries waits for the next round rather than holding this one (and so the schedule) open.
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumAttempts: 3 },
});

export interface MaintenanceReport {
  extractionsRestarted: number;
  blobsRemoved: number;
  idempotencyKeysPurged: number;
  runsRestarted: number;
  runsWoken: number;
  consoleSessionsRemoved: number;
}

export async function maintenanceWorkflow(): Promise<MaintenanceReport> {
  // Independent duties: one failing must not keep the others from running.
  const [restarted, removed, purged, runs, woken, sessions] = await Promise.allSettled([
    restartMissedExtractions(),
    removeDueBlobs(),
    purgeExpiredIdempotencyKeys(),
    restartMissedRuns(),
    wakeWaitingRuns(),
    removeFinishedConsoleSessions(),
  ]);
  if (
    restarted.status === 'fulfilled' &&
    removed.status === 'fulfilled' &&
    purged.status === 'fulfilled' &&
    runs.status === 'fulfilled' &&
    woken.status === 'fulfilled' &&
    sessions.status === 'fulfilled'
  ) {
    return {
      extractionsRestarted: restarted.value,
      blobsRemoved: removed.value,
      idempotencyKeysPurged: purged.value,
      runsRestarted: runs.value,
      runsWoken: woken.value,
      consoleSessionsRemoved: sessions.value,
    };
  }
  const failures = [restarted, removed, purged, runs, woken, sessions].flatMap((outcome) =>
    outcome.status === 'rejected' ? [describeFailure(outcome.reason)] : [],
  );
  // The round shows as failed; the schedule starts the next one all the same.
  throw ApplicationFailure.nonRetryable(`Maintenance duties failed: ${failures.join('; ')}`, 'maintenance_duty_failed');
}

function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure) return `${err.activityType}: ${err.cause?.message ?? err.message}`;
  return (err as Error).message;
}
