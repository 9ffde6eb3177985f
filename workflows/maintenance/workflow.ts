/**
 * One round of the cluster's maintenance duties. The maintenance Schedule (client.ts) starts it, so one
 * round at a time runs for the whole cluster however many workers there are.
 */
import { ActivityFailure, ApplicationFailure, patched, proxyActivities } from '@temporalio/workflow';
import type { MaintenanceActivities } from './activities.js';

const {
  restartMissedExtractions,
  restartMissedRuns,
  wakeWaitingRuns,
  removeDueBlobs,
  purgeExpiredIdempotencyKeys,
  removeFinishedConsoleSessions,
  expireRunEventLogs,
  expireWebhookDeliveries,
  makeComingPartitions,
  expireUsageRecords,
  expireExtractionLeftovers,
  expireAuditLogs,
  expireStepPayloads,
  reconcileSchedules,
  interruptRunsLeft,
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
  runEventsExpired: number;
  webhookDeliveriesExpired: number;
  partitionsMade: number;
  usageDaysExpired: number;
  extractionLeftoversExpired: number;
  auditLogsExpired: number;
  stepPayloadsExpired: number;
  schedulesReconciled: number;
  runsInterrupted: number;
}

export async function maintenanceWorkflow(): Promise<MaintenanceReport> {
  // Independent duties: one failing must not keep the others from running. In the order rounds before
  // retention scheduled them, so that their histories replay; retention's come after, in rounds since.
  const duties: [keyof MaintenanceReport, () => Promise<number>][] = [
    ['extractionsRestarted', restartMissedExtractions],
    ['blobsRemoved', removeDueBlobs],
    ['idempotencyKeysPurged', purgeExpiredIdempotencyKeys],
    ['runsRestarted', restartMissedRuns],
    ['runsWoken', wakeWaitingRuns],
    ['consoleSessionsRemoved', removeFinishedConsoleSessions],
  ];
  if (patched('retention')) duties.push(['runEventsExpired', expireRunEventLogs], ['webhookDeliveriesExpired', expireWebhookDeliveries]);
  if (patched('partitions'))
    duties.push(
      ['partitionsMade', makeComingPartitions],
      ['usageDaysExpired', expireUsageRecords],
      ['extractionLeftoversExpired', expireExtractionLeftovers],
      ['auditLogsExpired', expireAuditLogs],
      ['stepPayloadsExpired', expireStepPayloads],
    );
  if (patched('schedules')) duties.push(['schedulesReconciled', reconcileSchedules]);
  if (patched('interrupts')) duties.push(['runsInterrupted', interruptRunsLeft]);
  const outcomes = await Promise.allSettled(duties.map(([, duty]) => duty()));
  const failures = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [describeFailure(outcome.reason)] : []));
  if (failures.length === 0) {
    const report: MaintenanceReport = {
      extractionsRestarted: 0,
      blobsRemoved: 0,
      idempotencyKeysPurged: 0,
      runsRestarted: 0,
      runsWoken: 0,
      consoleSessionsRemoved: 0,
      runEventsExpired: 0,
      webhookDeliveriesExpired: 0,
      partitionsMade: 0,
      usageDaysExpired: 0,
      extractionLeftoversExpired: 0,
      auditLogsExpired: 0,
      stepPayloadsExpired: 0,
      schedulesReconciled: 0,
      runsInterrupted: 0,
    };
    duties.forEach(([name], i) => (report[name] = (outcomes[i] as PromiseFulfilledResult<number>).value));
    return report;
  }
  // The round shows as failed; the schedule starts the next one all the same.
  throw ApplicationFailure.nonRetryable(`Maintenance duties failed: ${failures.join('; ')}`, 'maintenance_duty_failed');
}

function describeFailure(err: unknown): string {
  if (err instanceof ActivityFailure) return `${err.activityType}: ${err.cause?.message ?? err.message}`;
  return (err as Error).message;
}
