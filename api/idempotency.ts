/**
 * `Idempotency-Key` for every POST that creates. The creation and the stored response commit in one
 * transaction, so two concurrent requests with one key create one record.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { transaction } from '../records/db.js';
import { findStoredResponse, storeResponse, type StoredResponse } from '../records/idempotency.js';
import type { ApiContext, ApiDeps } from './context.js';
import { ConflictError, InvalidRequestError } from './errors.js';

export interface Created {
  status: number;
  body: unknown;
}

export function fingerprintOf(...parts: unknown[]): string {
  return createHash('sha256').update(JSON.stringify(parts)).digest('hex');
}

class KeyTaken extends Error {}

/**
 * Runs `create` once per idempotency key. `stored` is what is kept for replays (for example, without a
 * secret that must be shown only once). `onReplay` lets the caller undo work it did before calling.
 */
export async function createOnce(
  ctx: ApiContext,
  deps: ApiDeps,
  fingerprint: string,
  create: (tx: pg.PoolClient) => Promise<Created>,
  options: { stored?: (created: Created) => Created } = {},
): Promise<{ created: Created; replayed: boolean }> {
  const key = ctx.get('idempotency-key');
  const projectId = ctx.state.caller!.projectId;
  // An empty header is a key given wrongly, not a request without one.
  if (ctx.headers['idempotency-key'] === undefined) return { created: await transaction(deps.db, create), replayed: false };
  if (key.length === 0 || key.length > 255) {
    throw InvalidRequestError('invalid_parameter', 'The Idempotency-Key header is 1 to 255 characters.', 'Idempotency-Key');
  }

  const replay = (stored: StoredResponse) => {
    if (stored.fingerprint !== fingerprint) {
      throw ConflictError('idempotency_key_reused', 'This Idempotency-Key was used with a different request.', 'Idempotency-Key');
    }
    ctx.set('Idempotent-Replayed', 'true');
    return { created: { status: stored.status, body: stored.body }, replayed: true };
  };

  const earlier = await findStoredResponse(deps.db, projectId, key);
  if (earlier) return replay(earlier);
  try {
    const created = await transaction(deps.db, async (tx) => {
      const result = await create(tx);
      const kept = options.stored ? options.stored(result) : result;
      if (!(await storeResponse(tx, projectId, key, { fingerprint, status: kept.status, body: kept.body }))) throw new KeyTaken();
      return result;
    });
    return { created, replayed: false };
  } catch (err) {
    if (!(err instanceof KeyTaken)) throw err;
    return replay((await findStoredResponse(deps.db, projectId, key))!);
  }
}
