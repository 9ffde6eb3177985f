/**
 * The Kubernetes controller's key. The operator configures it on the API (AGENTPLANE_CONTROLLER_KEY, the chart
 * from a Secret it makes) and gives the controller the same secret: the API registers its hash at start, with
 * the agents and schedules scopes only, in the bootstrap project. It is the one key that may put a network on a worker pool
 * the controller runs. Kept live like a bootstrap key: while an API process configured with it reports it
 * held, and for the grace period after, so that a rolling update that changes it locks nobody out.
 */
import type { Scope } from './api-keys.js';
import { BOOTSTRAP_KEY_GRACE_MINUTES, hashSecret, insertApiKey, type ApiKeyRecord } from './api-keys.js';
import { transaction, type Db, type Queryable } from './db.js';
import { insertProject } from './projects.js';

// The schedules an Agent or AgentNetwork declares are written with the schedule scopes; it runs nothing itself.
export const CONTROLLER_SCOPES: Scope[] = ['agents:read', 'agents:write', 'schedules:read', 'schedules:write'];

/** The configured secret is already another key's: the controller's must be a secret of its own. */
export class ControllerKeyTaken extends Error {
  constructor(readonly keyId: string) {
    super(`AGENTPLANE_CONTROLLER_KEY is already the secret of the API key ${keyId}; give the controller a new secret of its own.`);
  }
}

/** Makes sure the configured controller key exists and is live, with the agents scopes only, and reports it held. */
export async function ensureControllerKey(db: Db, secret: string): Promise<ApiKeyRecord> {
  return transaction(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['controller-key']);
    // Configuring a key makes it live again, even after it was revoked: the configuration is the authority.
    const { rows } = await tx.query<{ id: string }>(
      'UPDATE api_keys SET revoked_at = NULL, controller_held_at = now(), scopes = $2 WHERE secret_hash = $1 AND controller RETURNING id',
      [hashSecret(secret), CONTROLLER_SCOPES],
    );
    await retireUnheldControllerKeys(tx);
    if (rows[0]) return (await tx.query<ApiKeyRecord>('SELECT * FROM api_keys WHERE id = $1', [rows[0].id])).rows[0]!;
    const taken = await tx.query<{ id: string }>('SELECT id FROM api_keys WHERE secret_hash = $1', [hashSecret(secret)]);
    if (taken.rows[0]) throw new ControllerKeyTaken(taken.rows[0].id);
    const bootstrap = await tx.query<{ project_id: string }>('SELECT project_id FROM api_keys WHERE bootstrap ORDER BY created_at LIMIT 1');
    const projectId = bootstrap.rows[0]?.project_id ?? (await insertProject(tx, 'default')).id;
    const { record } = await insertApiKey(tx, {
      projectId,
      name: 'kubernetes controller',
      scopes: CONTROLLER_SCOPES,
      secret,
      controller: true,
    });
    await tx.query('UPDATE api_keys SET controller_held_at = now() WHERE id = $1', [record.id]);
    return record;
  });
}

/** What an API process configured with `secret` runs periodically, as for the bootstrap key. */
export async function holdControllerKey(db: Queryable, secret: string): Promise<void> {
  await db.query('UPDATE api_keys SET controller_held_at = now() WHERE secret_hash = $1 AND controller AND revoked_at IS NULL', [
    hashSecret(secret),
  ]);
  await retireUnheldControllerKeys(db);
}

async function retireUnheldControllerKeys(db: Queryable): Promise<void> {
  await db.query(
    `UPDATE api_keys SET revoked_at = now()
     WHERE controller AND revoked_at IS NULL AND controller_held_at < now() - make_interval(mins => $1)`,
    [BOOTSTRAP_KEY_GRACE_MINUTES],
  );
}
