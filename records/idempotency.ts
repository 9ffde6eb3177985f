/**
 * Stored responses for `Idempotency-Key`: the same key and the same request fingerprint replay the
 * response; another fingerprint conflicts. An entry counts for the hours the API that stored it was set to
 * keep it (AGENTPLANE_IDEMPOTENCY_KEY_HOURS, 24 by default), until its `expires_at`.
 */
import type { Queryable } from './db.js';

export const DEFAULT_IDEMPOTENCY_KEY_HOURS = 24;

export interface StoredResponse {
  fingerprint: string;
  status: number;
  body: unknown;
}

export async function findStoredResponse(db: Queryable, projectId: string, key: string): Promise<StoredResponse | null> {
  const { rows } = await db.query<{ fingerprint: string; response_status: number; response_body: unknown }>(
    `SELECT fingerprint, response_status, response_body FROM idempotency_keys
     WHERE project_id = $1 AND key = $2 AND expires_at > now()`,
    [projectId, key],
  );
  const row = rows[0];
  return row ? { fingerprint: row.fingerprint, status: row.response_status, body: row.response_body } : null;
}

/**
 * Claims the key for this response, for `hours`. False when another request already holds it: the caller's
 * transaction must then roll back and answer with the stored response instead.
 */
export async function storeResponse(
  db: Queryable,
  projectId: string,
  key: string,
  response: StoredResponse,
  hours = DEFAULT_IDEMPOTENCY_KEY_HOURS,
): Promise<boolean> {
  const result = await db.query(
    `INSERT INTO idempotency_keys (project_id, key, fingerprint, response_status, response_body, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(hours => $6))
     ON CONFLICT (project_id, key) DO UPDATE
       SET fingerprint = EXCLUDED.fingerprint, response_status = EXCLUDED.response_status,
           response_body = EXCLUDED.response_body, created_at = now(), expires_at = EXCLUDED.expires_at
       WHERE idempotency_keys.expires_at <= now()`,
    [projectId, key, response.fingerprint, response.status, JSON.stringify(response.body), hours],
  );
  return (result.rowCount ?? 0) > 0;
}

export async function purgeExpiredResponses(db: Queryable): Promise<number> {
  const result = await db.query('DELETE FROM idempotency_keys WHERE expires_at <= now()');
  return result.rowCount ?? 0;
}
