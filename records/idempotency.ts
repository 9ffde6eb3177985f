/**
 * Stored responses for `Idempotency-Key`: the same key and the same request fingerprint replay the
 * response; another fingerprint conflicts. Entries count for 24 hours.
 */
import type { Queryable } from './db.js';

export const IDEMPOTENCY_TTL_HOURS = 24;

export interface StoredResponse {
  fingerprint: string;
  status: number;
  body: unknown;
}

export async function findStoredResponse(db: Queryable, projectId: string, key: string): Promise<StoredResponse | null> {
  const { rows } = await db.query<{ fingerprint: string; response_status: number; response_body: unknown }>(
    `SELECT fingerprint, response_status, response_body FROM idempotency_keys
     WHERE project_id = $1 AND key = $2 AND created_at > now() - make_interval(hours => $3)`,
    [projectId, key, IDEMPOTENCY_TTL_HOURS],
  );
  const row = rows[0];
  return row ? { fingerprint: row.fingerprint, status: row.response_status, body: row.response_body } : null;
}

/**
 * Claims the key for this response. False when another request already holds it: the caller's
 * transaction must then roll back and answer with the stored response instead.
 */
export async function storeResponse(db: Queryable, projectId: string, key: string, response: StoredResponse): Promise<boolean> {
  const result = await db.query(
    `INSERT INTO idempotency_keys (project_id, key, fingerprint, response_status, response_body)
     VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (project_id, key) DO UPDATE
       SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status,
           response_body = EXCLUDED.response_body, created_at = now()
       WHERE idempotency_keys.created_at <= now() - make_interval(hours => $6)`,
    [projectId, key, response.fingerprint, response.status, JSON.stringify(response.body), IDEMPOTENCY_TTL_HOURS],
  );
  return (result.rowCount ?? 0) > 0;
}

export async function purgeExpiredResponses(db: Queryable): Promise<number> {
  const result = await db.query('DELETE FROM idempotency_keys WHERE created_at <= now() - make_interval(hours => $1)', [
    IDEMPOTENCY_TTL_HOURS,
  ]);
  return result.rowCount ?? 0;
}
