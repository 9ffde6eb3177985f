/** API keys: `ap_` + 32 random base62 characters. Only the SHA-256 of the secret is stored. */
import { hash } from 'node:crypto';
import type { components } from '../api/generated/openapi.js';
import { newId } from './ids.js';
import { transaction, type Db, type Queryable } from './db.js';
import { insertProject } from './projects.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';

export type Scope = components['schemas']['Scope'];

export interface ApiKeyRecord {
  id: string;
  project_id: string;
  name: string;
  prefix: string;
  scopes: Scope[];
  bootstrap: boolean;
  /** The Kubernetes controller's key (AGENTPLANE_CONTROLLER_KEY). */
  controller: boolean;
  created_at: Date;
  revoked_at: Date | null;
  /** Null: the deployment's default. */
  requests_per_minute: number | null;
  concurrent_runs: number | null;
}

/** A key's own rate limits; null takes the deployment's default. */
export interface KeyRateLimits {
  requests_per_minute: number | null;
  concurrent_runs: number | null;
}

const COLUMNS = 'id, project_id, name, prefix, scopes, bootstrap, controller, created_at, revoked_at, requests_per_minute, concurrent_runs';

// A SHA-256 suffices: the secrets are 190-bit random strings, so there is nothing to brute-force.
export function hashSecret(secret: string): Buffer {
  return hash('sha256', secret, 'buffer');
}

export function newSecret(): string {
  return newId('ap', 32);
}

export async function insertApiKey(
  db: Queryable,
  key: {
    projectId: string;
    name: string;
    scopes: Scope[];
    secret?: string;
    bootstrap?: boolean;
    controller?: boolean;
    rateLimits?: Partial<KeyRateLimits>;
  },
): Promise<{ record: ApiKeyRecord; secret: string }> {
  const secret = key.secret ?? newSecret();
  const { rows } = await db.query<ApiKeyRecord>(
    `INSERT INTO api_keys (id, project_id, name, secret_hash, prefix, scopes, bootstrap, controller, requests_per_minute, concurrent_runs)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLUMNS}`,
    [
      newId('key'),
      key.projectId,
      key.name,
      hashSecret(secret),
      secret.slice(0, 7),
      key.scopes,
      key.bootstrap ?? false,
      key.controller ?? false,
      key.rateLimits?.requests_per_minute ?? null,
      key.rateLimits?.concurrent_runs ?? null,
    ],
  );
  return { record: rows[0]!, secret };
}

/** The live (not revoked) key whose secret this is. */
export async function findApiKeyBySecret(db: Queryable, secret: string): Promise<ApiKeyRecord | null> {
  const { rows } = await db.query<ApiKeyRecord>(`SELECT ${COLUMNS} FROM api_keys WHERE secret_hash = $1 AND revoked_at IS NULL`, [
    hashSecret(secret),
  ]);
  return rows[0] ?? null;
}

export async function findApiKey(db: Queryable, projectId: string, id: string): Promise<ApiKeyRecord | null> {
  const { rows } = await db.query<ApiKeyRecord>(`SELECT ${COLUMNS} FROM api_keys WHERE id = $1 AND project_id = $2`, [id, projectId]);
  return rows[0] ?? null;
}

export async function listApiKeys(db: Queryable, projectId: string, page: PageRequest): Promise<Page<ApiKeyRecord>> {
  return selectPage<ApiKeyRecord>(db, { table: 'api_keys', columns: COLUMNS, projectId, page });
}

/** Renames a live key or changes its rate limits; what is absent stays as it was. */
export async function updateApiKey(
  db: Queryable,
  projectId: string,
  id: string,
  change: { name?: string; rateLimits?: Partial<KeyRateLimits> },
): Promise<ApiKeyRecord | null> {
  const limits = change.rateLimits ?? {};
  const { rows } = await db.query<ApiKeyRecord>(
    `UPDATE api_keys SET
       name = coalesce($3, name),
       requests_per_minute = CASE WHEN $4 THEN $5::integer ELSE requests_per_minute END,
       concurrent_runs = CASE WHEN $6 THEN $7::integer ELSE concurrent_runs END
     WHERE id = $1 AND project_id = $2 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
    [
      id,
      projectId,
      change.name ?? null,
      limits.requests_per_minute !== undefined,
      limits.requests_per_minute ?? null,
      limits.concurrent_runs !== undefined,
      limits.concurrent_runs ?? null,
    ],
  );
  return rows[0] ?? null;
}

export async function revokeApiKey(db: Queryable, projectId: string, id: string): Promise<ApiKeyRecord | null> {
  const { rows } = await db.query<ApiKeyRecord>(
    `UPDATE api_keys SET revoked_at = now() WHERE id = $1 AND project_id = $2 AND revoked_at IS NULL RETURNING ${COLUMNS}`,
    [id, projectId],
  );
  return rows[0] ?? null;
}

/**
 * A bootstrap key stays live while some process configured with it (`AGENTPLANE_ADMIN_KEY`) reports in,
 * and for this long after the last report: during a rolling update, replicas with the previous key and
 * replicas with the next one run side by side, and neither may lock the other out.
 */
export const BOOTSTRAP_KEY_GRACE_MINUTES = 10;

/**
 * Makes sure the configured bootstrap admin key exists and is live, in the bootstrap project, with every
 * scope, and reports it held. Idempotent: start-up runs it each time with the configured secret. Other
 * bootstrap keys stay live until no process has held them for the grace period.
 */
export async function ensureBootstrapKey(db: Db, secret: string): Promise<ApiKeyRecord> {
  return transaction(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['bootstrap-key']);
    // Configuring a key makes it live again, even after it was retired: the configuration is the authority,
    // for its rate limits too (the deployment's; limits stored by an earlier version are dropped).
    const { rows } = await tx.query<ApiKeyRecord>(
      `UPDATE api_keys SET revoked_at = NULL, bootstrap_held_at = now(), requests_per_minute = NULL, concurrent_runs = NULL
       WHERE secret_hash = $1 AND bootstrap RETURNING ${COLUMNS}`,
      [hashSecret(secret)],
    );
    await retireUnheldBootstrapKeys(tx);
    if (rows[0]) return rows[0];
    const existing = await tx.query<{ project_id: string }>('SELECT project_id FROM api_keys WHERE bootstrap ORDER BY created_at LIMIT 1');
    const projectId = existing.rows[0]?.project_id ?? (await insertProject(tx, 'default')).id;
    const { record } = await insertApiKey(tx, { projectId, name: 'bootstrap admin', scopes: ['admin'], secret, bootstrap: true });
    await tx.query('UPDATE api_keys SET bootstrap_held_at = now() WHERE id = $1', [record.id]);
    return record;
  });
}

/**
 * What a process configured with `secret` runs periodically: reports its key held (a retired key stays
 * retired), and retires the bootstrap keys no process has held for the grace period.
 */
export async function holdBootstrapKey(db: Queryable, secret: string): Promise<void> {
  await db.query('UPDATE api_keys SET bootstrap_held_at = now() WHERE secret_hash = $1 AND bootstrap AND revoked_at IS NULL', [
    hashSecret(secret),
  ]);
  await retireUnheldBootstrapKeys(db);
}

/**
 * Revokes every bootstrap key but the configured one at once, for a previous key that must stop working
 * now. Null, and nothing revoked, when the configured key is not live: that would leave no bootstrap key.
 */
export async function retireOtherBootstrapKeys(db: Queryable, secret: string): Promise<number | null> {
  const { rows } = await db.query<{ kept: boolean; retired: number }>(
    `WITH kept AS (SELECT 1 FROM api_keys WHERE secret_hash = $1 AND bootstrap AND revoked_at IS NULL),
     retired AS (
       UPDATE api_keys SET revoked_at = now()
       WHERE bootstrap AND secret_hash <> $1 AND revoked_at IS NULL AND EXISTS (SELECT 1 FROM kept)
       RETURNING 1
     )
     SELECT EXISTS (SELECT 1 FROM kept) AS kept, (SELECT count(*) FROM retired)::int AS retired`,
    [hashSecret(secret)],
  );
  return rows[0]!.kept ? rows[0]!.retired : null;
}

async function retireUnheldBootstrapKeys(db: Queryable): Promise<void> {
  await db.query(
    `UPDATE api_keys SET revoked_at = now()
     WHERE bootstrap AND revoked_at IS NULL AND bootstrap_held_at < now() - make_interval(mins => $1)`,
    [BOOTSTRAP_KEY_GRACE_MINUTES],
  );
}
