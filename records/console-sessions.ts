/**
 * Console sessions: a cookie token that stands for the API key a browser signed in with. Only SHA-256 hashes
 * of the token and of its CSRF token are stored; a session counts while it is neither ended nor expired and
 * its key is live, so revoking the key ends its sessions at once.
 */
import type { Queryable } from './db.js';
import { hashSecret, type ApiKeyRecord } from './api-keys.js';
import { newId } from './ids.js';

export interface ConsoleSessionRecord {
  id: string;
  project_id: string;
  api_key_id: string;
  created_at: Date;
  expires_at: Date;
  ended_at: Date | null;
}

/** A live session with the key it stands for. */
export interface LiveSession {
  session: ConsoleSessionRecord;
  key: ApiKeyRecord;
  csrfHash: Buffer;
}

const SESSION_COLUMNS = 'id, project_id, api_key_id, created_at, expires_at, ended_at';
const KEY_COLUMNS =
  'k.id, k.project_id, k.name, k.prefix, k.scopes, k.bootstrap, k.controller, k.created_at, k.revoked_at, k.requests_per_minute, k.concurrent_runs';

/** 32 base62 characters, 190 random bits, like an API key's secret. */
export const newSessionToken = () => newId('t', 32).slice(2);

export async function insertConsoleSession(
  db: Queryable,
  session: { key: ApiKeyRecord; token: string; csrfToken: string; ttlSeconds: number },
): Promise<ConsoleSessionRecord> {
  const { rows } = await db.query<ConsoleSessionRecord>(
    `INSERT INTO console_sessions (id, project_id, api_key_id, token_hash, csrf_hash, expires_at)
     VALUES ($1, $2, $3, $4, $5, now() + make_interval(secs => $6)) RETURNING ${SESSION_COLUMNS}`,
    [newId('ses'), session.key.project_id, session.key.id, hashSecret(session.token), hashSecret(session.csrfToken), session.ttlSeconds],
  );
  return rows[0]!;
}

/**
 * Deletes the key's sessions that can no longer be used (ended or expired). Signing in does it, so a key's
 * rows never pile up however often it signs in, without a sweep of its own.
 */
export async function deleteFinishedConsoleSessions(db: Queryable, apiKeyId: string): Promise<void> {
  await db.query('DELETE FROM console_sessions WHERE api_key_id = $1 AND (ended_at IS NOT NULL OR expires_at <= now())', [apiKeyId]);
}

/**
 * Ends the key's live sessions beyond the newest `keep`, so one key cannot hold sessions without bound (each
 * is a row and a token that reads as the key). Takes the key's lock, so sign-ins at once keep the bound too.
 */
export async function endSessionsBeyond(tx: Queryable, apiKeyId: string, keep: number): Promise<void> {
  await tx.query(`SELECT pg_advisory_xact_lock(hashtext('key-sessions:' || $1))`, [apiKeyId]);
  await tx.query(
    `UPDATE console_sessions SET ended_at = now() WHERE id IN (
       SELECT id FROM console_sessions WHERE api_key_id = $1 AND ended_at IS NULL AND expires_at > now()
       ORDER BY created_at DESC, id DESC OFFSET $2
     )`,
    [apiKeyId, keep],
  );
}

/**
 * Deletes up to `limit` sessions of any key past their end (ended or expired): maintenance's sweep, for the
 * keys that never sign in again. Returns how many went.
 */
export async function sweepFinishedConsoleSessions(db: Queryable, limit = 10_000): Promise<number> {
  const { rowCount } = await db.query(
    `DELETE FROM console_sessions WHERE id IN (
       SELECT id FROM console_sessions WHERE ended_at IS NOT NULL OR expires_at <= now() LIMIT $1
     )`,
    [limit],
  );
  return rowCount ?? 0;
}

/** The live session whose cookie token this is, with its key, in one query. */
export async function findLiveSession(db: Queryable, token: string): Promise<LiveSession | null> {
  const { rows } = await db.query<ApiKeyRecord & { session_id: string; session_created_at: Date; expires_at: Date; csrf_hash: Buffer }>(
    `SELECT ${KEY_COLUMNS}, s.id AS session_id, s.created_at AS session_created_at, s.expires_at, s.csrf_hash
     FROM console_sessions s JOIN api_keys k ON k.id = s.api_key_id
     WHERE s.token_hash = $1 AND s.ended_at IS NULL AND s.expires_at > now() AND k.revoked_at IS NULL`,
    [hashSecret(token)],
  );
  const row = rows[0];
  if (!row) return null;
  const { session_id, session_created_at, expires_at, csrf_hash, ...key } = row;
  const session = {
    id: session_id,
    project_id: key.project_id,
    api_key_id: key.id,
    created_at: session_created_at,
    expires_at,
    ended_at: null,
  };
  return { session, key, csrfHash: csrf_hash };
}

/** Ends the session a browser held when it signs in again, whichever key that session was for. */
export async function endConsoleSessionOfToken(db: Queryable, token: string): Promise<void> {
  await db.query('UPDATE console_sessions SET ended_at = now() WHERE token_hash = $1 AND ended_at IS NULL', [hashSecret(token)]);
}

export async function endConsoleSession(db: Queryable, id: string): Promise<void> {
  await db.query('UPDATE console_sessions SET ended_at = now() WHERE id = $1 AND ended_at IS NULL', [id]);
}
