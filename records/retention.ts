/**
 * Data that ages: how long what grows with every run and every event is kept, and its expiry, a batch at a time
 * within a time budget, so that a round of maintenance never holds a table for long. The runs, their steps and
 * the usage ledger's hourly rollups stay; the audit log is kept.
 */
import type { Queryable } from './db.js';

export interface RetentionSettings {
  /** AGENTPLANE_RETENTION_RUN_EVENTS_DAYS: a run's event log (its stream) is kept this long after the run ends. */
  runEventsDays: number;
  /** AGENTPLANE_RETENTION_WEBHOOK_DELIVERIES_DAYS: a webhook delivery and its attempts, this long after it ended. */
  webhookDeliveriesDays: number;
}

export const DEFAULT_RETENTION: RetentionSettings = { runEventsDays: 30, webhookDeliveriesDays: 30 };

const BATCH = 1_000;
const BUDGET_MS = 20_000;

/** Runs `expireBatch` until it expires fewer than a batch or the budget is spent; how many it expired. */
async function inBatches(expireBatch: () => Promise<number>): Promise<number> {
  const deadline = Date.now() + BUDGET_MS;
  let expired = 0;
  for (;;) {
    const batch = await expireBatch();
    expired += batch;
    if (batch < BATCH || Date.now() > deadline) return expired;
  }
}

/** Deletes the event logs of runs that ended more than `days` ago; how many events went. */
export function deleteRunEventsOlderThan(db: Queryable, days: number): Promise<number> {
  return inBatches(async () => {
    const { rowCount } = await db.query(
      `DELETE FROM run_events WHERE (run_id, seq) IN (
         SELECT e.run_id, e.seq FROM runs r JOIN run_events e ON e.run_id = r.id
         WHERE r.completed_at < now() - make_interval(days => $1)
         LIMIT $2)`,
      [days, BATCH],
    );
    return rowCount ?? 0;
  });
}

/** Deletes the webhook deliveries (their attempts with them) that ended more than `days` ago; how many went. */
export function deleteWebhookDeliveriesOlderThan(db: Queryable, days: number): Promise<number> {
  return inBatches(async () => {
    const { rowCount } = await db.query(
      `DELETE FROM webhook_deliveries WHERE id IN (
         SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND completed_at < now() - make_interval(days => $1)
         LIMIT $2)`,
      [days, BATCH],
    );
    return rowCount ?? 0;
  });
}
