/**
 * Rate limits per API key, and per project across its keys, counted in PostgreSQL so that every API replica
 * agrees: requests in a one-minute window (one row per key or project, leased to replicas a few at a time), and
 * runs still going.
 */
import type { Queryable } from './db.js';

export interface RequestLease {
  /** Requests granted to the caller in the key's window, out of those asked for; 0 when the window is spent. */
  granted: number;
  /** Requests granted in the window so far, to every replica, these included. */
  grantedInWindow: number;
  /** Milliseconds until the window closes and the count starts again. */
  resetMs: number;
}

/** Whose limit is counted: one API key's, or one project's, whichever of its keys makes the requests and runs. */
export type LimitOf = 'api_key' | 'project';

const WINDOW_TABLES: Record<LimitOf, { table: string; id: string }> = {
  api_key: { table: 'api_key_request_windows', id: 'api_key_id' },
  project: { table: 'project_request_windows', id: 'project_id' },
};

/**
 * Grants up to `wanted` of the key's (or project's) `limit` requests per minute to one API replica, which serves
 * them from memory. A window opens with the first lease after the previous one closed and lasts a minute. Time
 * is the database's, the same for every replica; every replica leases from the same row, so together they never
 * serve more than the limit.
 */
export async function leaseRequests(db: Queryable, of: LimitOf, id: string, limit: number, wanted: number): Promise<RequestLease> {
  const { table, id: idColumn } = WINDOW_TABLES[of];
  // Each SET expression reads the row as it stood under the lock, so concurrent leases never over-grant.
  const { rows } = await db.query<{ granted: number; requests: number; reset_ms: number }>(
    `INSERT INTO ${table} AS w (${idColumn}, started_at, requests, last_granted)
       VALUES ($1, now(), least($3::int, $2::int), least($3::int, $2::int))
     ON CONFLICT (${idColumn}) DO UPDATE SET
       last_granted = least($3::int, greatest(0, $2::int - CASE WHEN w.started_at > now() - interval '1 minute' THEN w.requests ELSE 0 END)),
       requests = CASE WHEN w.started_at > now() - interval '1 minute' THEN w.requests ELSE 0 END
         + least($3::int, greatest(0, $2::int - CASE WHEN w.started_at > now() - interval '1 minute' THEN w.requests ELSE 0 END)),
       started_at = CASE WHEN w.started_at > now() - interval '1 minute' THEN w.started_at ELSE now() END
     RETURNING last_granted AS granted, requests,
       greatest(0, ceil(extract(epoch FROM started_at + interval '1 minute' - clock_timestamp()) * 1000))::int AS reset_ms`,
    [id, limit, wanted],
  );
  const row = rows[0]!;
  return { granted: row.granted, grantedInWindow: row.requests, resetMs: row.reset_ms };
}

const RUN_COUNTS: Record<LimitOf, { column: string; lock: string }> = {
  api_key: { column: 'api_key_id', lock: 'key-runs:' },
  project: { column: 'project_id', lock: 'project-runs:' },
};

/**
 * Takes the key's (or project's) lock for the rest of the transaction and counts its runs still queued or in
 * progress: two replicas creating runs for the same key at once are thus serialised, and cannot both find room
 * for one. A key's lock is taken before its project's, never after.
 */
export async function lockActiveRuns(tx: Queryable, of: LimitOf, id: string): Promise<number> {
  const { column, lock } = RUN_COUNTS[of];
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext($2 || $1))`, [id, lock]);
  const { rows } = await tx.query<{ active: number }>(
    `SELECT count(*)::int AS active FROM runs WHERE ${column} = $1 AND parent_run_id IS NULL AND status IN ('queued', 'in_progress')`,
    [id],
  );
  return rows[0]!.active;
}
