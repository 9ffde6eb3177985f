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

/** Whose requests a window counts: one API key's, or one project's, whichever of its keys makes them. */
export type RequestWindowOf = 'api_key' | 'project';

const WINDOW_TABLES: Record<RequestWindowOf, { table: string; id: string }> = {
  api_key: { table: 'api_key_request_windows', id: 'api_key_id' },
  project: { table: 'project_request_windows', id: 'project_id' },
};

/**
 * Grants up to `wanted` of the key's (or project's) `limit` requests per minute to one API replica, which serves
 * them from memory. A window opens with the first lease after the previous one closed and lasts a minute. Time
 * is the database's, the same for every replica; every replica leases from the same row, so together they never
 * serve more than the limit.
 */
export async function leaseRequests(db: Queryable, of: RequestWindowOf, id: string, limit: number, wanted: number): Promise<RequestLease> {
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

/**
 * Takes the key's lock for the rest of the transaction and counts its runs still queued or in progress: two
 * replicas creating runs for the same key at once are thus serialised, and cannot both find room for one.
 */
export async function lockActiveRunsOfKey(tx: Queryable, apiKeyId: string): Promise<number> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('key-runs:' || $1))`, [apiKeyId]);
  const { rows } = await tx.query<{ active: number }>(
    `SELECT count(*)::int AS active FROM runs WHERE api_key_id = $1 AND parent_run_id IS NULL AND status IN ('queued', 'in_progress')`,
    [apiKeyId],
  );
  return rows[0]!.active;
}

/**
 * As `lockActiveRunsOfKey`, for the project's runs whichever key made them (taken after the key's lock, never
 * before it).
 */
export async function lockActiveRunsOfProject(tx: Queryable, projectId: string): Promise<number> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('project-runs:' || $1))`, [projectId]);
  const { rows } = await tx.query<{ active: number }>(
    `SELECT count(*)::int AS active FROM runs WHERE project_id = $1 AND parent_run_id IS NULL AND status IN ('queued', 'in_progress')`,
    [projectId],
  );
  return rows[0]!.active;
}
