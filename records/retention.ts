/**
 * Data that ages: how long what grows with every run and every event is kept, and its expiry. The two tables
 * that grow fastest, the run-event log and the usage ledger, are partitioned by UTC day (migration 021): a day
 * past its retention is dropped whole, in the time a catalogue change takes, whatever it holds. The rest is
 * deleted a batch at a time within a time budget, so that a round of maintenance never holds a table for long.
 * The runs, their steps and the ledger's hourly rollups stay; the audit log stays unless the operator sets
 * its retention, and then a day goes only once it is exported to the blob store.
 */
import { Readable } from 'node:stream';
import type { BlobStore } from './blobs/store.js';
import { transaction, type Db, type Queryable } from './db.js';

export interface RetentionSettings {
  /** AGENTPLANE_RETENTION_RUN_EVENTS_DAYS: the run-event log (runs' streams), by the day each event was written. */
  runEventsDays: number;
  /** AGENTPLANE_RETENTION_WEBHOOK_DELIVERIES_DAYS: a webhook delivery and its attempts, this long after it ended. */
  webhookDeliveriesDays: number;
  /** AGENTPLANE_RETENTION_STEP_PAYLOADS_DAYS: a run's steps' messages and tool calls, this long after the run ended. */
  stepPayloadsDays: number;
  /** AGENTPLANE_RETENTION_USAGE_RECORDS_DAYS: the ledger's one row a model call; its hourly rollups stay. */
  usageRecordsDays: number;
  /** AGENTPLANE_RETENTION_EXTRACTION_LEFTOVERS_DAYS: the graph model's answers kept for an extraction's retries. */
  extractionLeftoversDays: number;
  /** AGENTPLANE_RETENTION_AUDIT_LOGS_DAYS: unset (null), the audit log is kept. */
  auditLogsDays: number | null;
}

export const DEFAULT_RETENTION: RetentionSettings = {
  runEventsDays: 30,
  webhookDeliveriesDays: 30,
  stepPayloadsDays: 90,
  usageRecordsDays: 90,
  extractionLeftoversDays: 7,
  auditLogsDays: null,
};

/** The tables partitioned by day. */
export type DayPartitioned = 'run_events' | 'usage_records';
const PARTITIONED: DayPartitioned[] = ['run_events', 'usage_records'];

/** The days ahead whose partitions exist: a week of maintenance rounds can be missed before the default takes rows. */
const DAYS_AHEAD = 7;
/** A drop waits this long for its lock, then waits for the next round instead of queueing the table's readers. */
const LOCK_TIMEOUT = '2s';

const BATCH = 1_000;
const AUDIT_EXPORT_PAGE = 5_000;
const BUDGET_MS = 20_000;
const DAY_MS = 86_400_000;

/** The UTC day of `at`, as YYYY-MM-DD. */
const dayOf = (at: Date) => at.toISOString().slice(0, 10);

/** Runs `expireBatch` until it expires fewer than `size` or the budget is spent; how many it expired. */
async function inBatches(expireBatch: () => Promise<number>, size = BATCH): Promise<number> {
  const deadline = Date.now() + BUDGET_MS;
  let expired = 0;
  for (;;) {
    const batch = await expireBatch();
    expired += batch;
    if (batch < size || Date.now() > deadline) return expired;
  }
}

/**
 * Makes the day partitions from `from` to `to` (UTC days) that do not exist yet, moving into each what the
 * default partition took for its day; how many it made. One maker at a time per table.
 */
export function makeDayPartitions(db: Db, table: DayPartitioned, from: Date, to: Date): Promise<number> {
  return transaction(db, async (tx) => {
    await tx.query(`SELECT pg_advisory_xact_lock(hashtext('agentplane partitions ' || $1))`, [table]);
    await tx.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
    const { rows } = await tx.query<{ made: number }>('SELECT agentplane_make_day_partitions($1, $2::date, $3::date) AS made', [
      table,
      dayOf(from),
      dayOf(to),
    ]);
    return rows[0]!.made;
  });
}

/** Today's partitions and the next DAYS_AHEAD days', for every partitioned table; how many were missing. */
export async function makeComingDayPartitions(db: Db): Promise<number> {
  const now = new Date();
  let made = 0;
  for (const table of PARTITIONED) made += await makeDayPartitions(db, table, now, new Date(now.getTime() + DAYS_AHEAD * DAY_MS));
  return made;
}

/** The day partitions of `table`, oldest first, each with its UTC day. */
async function dayPartitions(db: Queryable, table: DayPartitioned): Promise<{ name: string; day: string }[]> {
  const { rows } = await db.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
     WHERE i.inhparent = $1::regclass AND c.relname ~ ('^' || $1 || '_p[0-9]{8}$') ORDER BY c.relname`,
    [table],
  );
  return rows.map(({ name }) => {
    const digits = name.slice(-8);
    return { name, day: `${digits.slice(0, 4)}-${digits.slice(4, 6)}-${digits.slice(6)}` };
  });
}

/**
 * Drops the day partitions of `table` whose whole day is more than `days` days old, each in a transaction of
 * its own, and deletes what the default partition holds from before them; how many days went. What a day of
 * the usage ledger held stays counted in its rollups.
 */
export async function dropDayPartitionsOlderThan(db: Db, table: DayPartitioned, days: number): Promise<number> {
  const horizon = dayOf(new Date(Date.now() - days * DAY_MS));
  let dropped = 0;
  for (const partition of await dayPartitions(db, table)) {
    if (partition.day >= horizon) break;
    await transaction(db, async (tx) => {
      await tx.query(`SET LOCAL lock_timeout = '${LOCK_TIMEOUT}'`);
      // The name is one the catalogue gave, matched above to <table>_pYYYYMMDD.
      await tx.query(`DROP TABLE ${partition.name}`);
    });
    dropped++;
  }
  await transaction(db, async (tx) => {
    await tx.query(`SELECT set_config('agentplane.moving_rows', 'on', true)`);
    const { rowCount } = await tx.query(`DELETE FROM ${table}_default WHERE created_at < $1::date::timestamp AT TIME ZONE 'UTC'`, [
      horizon,
    ]);
    if (dropped > 0 || (rowCount ?? 0) > 0)
      await tx.query(
        `INSERT INTO retention_horizons (table_name, expired_before) VALUES ($1, $2::date::timestamp AT TIME ZONE 'UTC')
         ON CONFLICT (table_name) DO UPDATE SET expired_before = GREATEST(retention_horizons.expired_before, EXCLUDED.expired_before)`,
        [table, horizon],
      );
  });
  return dropped;
}

/** When the rows of `table` that expiry has removed end, Unix seconds; null while it has removed none. */
export async function expiredBefore(db: Queryable, table: DayPartitioned): Promise<number | null> {
  const { rows } = await db.query<{ at: string }>(
    'SELECT extract(epoch FROM expired_before)::bigint AS at FROM retention_horizons WHERE table_name = $1',
    [table],
  );
  return rows[0] ? Number(rows[0].at) : null;
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

/** Runs whose steps' payloads one statement clears: a run may have hundreds of steps. */
const RUNS_BATCH = 100;

/**
 * Clears the messages and tool calls of the steps of runs that ended more than `days` ago, marking each step and
 * run so; the runs, their input and output, and the steps' kind, timing, usage, cost and error stay. How many runs.
 */
export function clearStepPayloadsOlderThan(db: Queryable, days: number): Promise<number> {
  return inBatches(async () => {
    const { rows } = await db.query<{ runs: number }>(
      `WITH due AS (
         SELECT id FROM runs WHERE payloads_expired_at IS NULL AND completed_at < now() - make_interval(days => $1)
         ORDER BY completed_at LIMIT $2 FOR UPDATE SKIP LOCKED),
       cleared AS (
         UPDATE run_steps s SET message = NULL, tool_call = NULL, payload_expired = true
         FROM due WHERE s.run_id = due.id AND NOT s.payload_expired),
       marked AS (UPDATE runs r SET payloads_expired_at = now() FROM due WHERE r.id = due.id RETURNING 1)
       SELECT count(*)::int AS runs FROM marked`,
      [days, RUNS_BATCH],
    );
    return rows[0]!.runs;
  }, RUNS_BATCH);
}

/**
 * Deletes the graph model's answers kept for the extraction of files that ended (processed or failed) more than
 * `days` ago: an extraction's retries read them; a file that ended has none coming. How many went.
 */
export function deleteExtractionLeftoversOlderThan(db: Queryable, days: number): Promise<number> {
  return inBatches(async () => {
    const { rowCount } = await db.query(
      `DELETE FROM graph_model_answers WHERE (file_id, passage_hash, model) IN (
         SELECT a.file_id, a.passage_hash, a.model FROM graph_model_answers a JOIN files f ON f.id = a.file_id
         WHERE f.status <> 'processing' AND a.created_at < now() - make_interval(days => $1)
         LIMIT $2)`,
      [days, BATCH],
    );
    return rowCount ?? 0;
  });
}

/** Where the audit log's entries of a UTC day are exported. */
const auditExportKey = (day: string) => `audit-logs/${day}.jsonl`;

/**
 * Exports each UTC day of the audit log older than `days` days, as JSON lines (one entry a line, oldest first)
 * to the blob store, records the export, then deletes the day's entries. A day exported and not yet deleted is
 * exported again, whole, on the next round: the object is replaced, never appended to. How many entries went.
 */
export async function exportAndExpireAuditLogs(db: Db, blobs: BlobStore, days: number): Promise<number> {
  const horizon = dayOf(new Date(Date.now() - days * DAY_MS));
  const deadline = Date.now() + BUDGET_MS;
  let expired = 0;
  for (;;) {
    const { rows } = await db.query<{ day: string }>(
      `SELECT to_char(min(created_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day FROM audit_logs
       WHERE created_at < $1::date::timestamp AT TIME ZONE 'UTC'`,
      [horizon],
    );
    const day = rows[0]?.day;
    if (!day || Date.now() > deadline) return expired;
    const key = auditExportKey(day);
    let exported = 0;
    await blobs.put(
      key,
      Readable.from(
        (async function* () {
          // A page at a time, in the order of the log: memory holds one page however large the day.
          let after: [string, string] = ['-infinity', ''];
          for (;;) {
            const { rows: page } = await db.query<{ at: string; id: string; line: string }>(
              `SELECT created_at::text AS at, id, row_to_json(a)::text AS line FROM audit_logs a
               WHERE created_at >= $1::date::timestamp AT TIME ZONE 'UTC' AND created_at < ($1::date + 1)::timestamp AT TIME ZONE 'UTC'
                 AND (created_at, id) > ($2::timestamptz, $3)
               ORDER BY created_at, id LIMIT $4`,
              [day, after[0], after[1], AUDIT_EXPORT_PAGE],
            );
            if (page.length === 0) return;
            exported += page.length;
            yield Buffer.from(page.map((entry) => entry.line + '\n').join(''));
            const last = page[page.length - 1]!;
            after = [last.at, last.id];
          }
        })(),
      ),
    );
    expired += await transaction(db, async (tx) => {
      await tx.query(
        `INSERT INTO audit_log_exports (day, blob_key, entries) VALUES ($1::date, $2, $3)
         ON CONFLICT (day) DO UPDATE SET blob_key = EXCLUDED.blob_key, entries = EXCLUDED.entries, exported_at = now()`,
        [day, key, exported],
      );
      await tx.query(`SELECT set_config('agentplane.expiring_audit_logs', 'on', true)`);
      const { rowCount } = await tx.query(
        `DELETE FROM audit_logs
         WHERE created_at >= $1::date::timestamp AT TIME ZONE 'UTC' AND created_at < ($1::date + 1)::timestamp AT TIME ZONE 'UTC'`,
        [day],
      );
      return rowCount ?? 0;
    });
  }
}
