/**
 * Rate limits per API key, counted in PostgreSQL so that every API replica agrees: requests in a one-minute
 * window (one row per key, one upsert per request), and runs still going.
 */
import type { Queryable } from './db.js';

export interface RequestWindow {
  /** Requests counted in the window, this one included; never more than the limit plus one. */
  requests: number;
  /** Milliseconds until the window closes and the count starts again. */
  resetMs: number;
}

/**
 * Counts one request of the key against `limit` per minute. A window opens with the first request after the
 * previous one closed and lasts a minute. The count stops at limit + 1 (refused requests count, up to there),
 * so `requests > limit` says this request is over. Time is the database's, the same for every replica.
 */
export async function countRequest(db: Queryable, apiKeyId: string, limit: number): Promise<RequestWindow> {
  const { rows } = await db.query<{ requests: number; reset_ms: number }>(
    `INSERT INTO api_key_request_windows AS w (api_key_id, started_at, requests) VALUES ($1, now(), 1)
     ON CONFLICT (api_key_id) DO UPDATE SET
       requests = CASE WHEN w.started_at > now() - interval '1 minute' THEN least(w.requests + 1, $2 + 1) ELSE 1 END,
       started_at = CASE WHEN w.started_at > now() - interval '1 minute' THEN w.started_at ELSE now() END
     RETURNING requests, greatest(0, ceil(extract(epoch FROM started_at + interval '1 minute' - clock_timestamp()) * 1000))::int AS reset_ms`,
    [apiKeyId, limit],
  );
  const row = rows[0]!;
  return { requests: row.requests, resetMs: row.reset_ms };
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
