/**
 * `Idempotency-Key` for every POST that creates. The creation, its audit entry and the stored response
 * commit in one transaction, so two concurrent requests with one key create one record. A request's
 * identity is its method, its concrete path (ids included: running agent A is not running agent B) and its
 * content with object keys in a canonical order: the same key sent to another endpoint, or with other
 * content, is a conflict, and reordered JSON is the same request.
 */
import { createHash } from 'node:crypto';
import type pg from 'pg';
import { stringify } from 'safe-stable-stringify';
import { findStoredResponse, storeResponse, type StoredResponse } from '../records/idempotency.js';
import { callerOf, type ApiContext, type ApiDeps } from './context.js';
import { commitMutation, type Answer } from './audit.js';
import { ConflictError } from './errors.js';

class KeyTaken extends Error {}

// A key can expire between the claim that found it taken and the read of what it holds; the claim is
// then simply tried again. More rounds than this means something else is wrong.
const CLAIM_ATTEMPTS = 3;

function fingerprintOf(ctx: ApiContext, request: unknown): string {
  return createHash('sha256')
    .update(stringify([ctx.method, ctx.path, request]) ?? '')
    .digest('hex');
}

/**
 * Runs `create` once per idempotency key (validated by `operation()` against the document). `request` is
 * what identifies the request: the parsed body, or for an upload its content hash and fields. `stored`
 * is what is kept for replays (for example, without a secret that must be shown only once).
 */
export async function createOnce<A extends Answer>(
  ctx: ApiContext,
  deps: Pick<ApiDeps, 'db' | 'idempotencyKeyHours'>,
  request: unknown,
  create: (tx: pg.PoolClient) => Promise<A>,
  options: { stored?: (created: A) => Answer; key?: string } = {},
): Promise<{ created: Answer; replayed: boolean }> {
  // A protocol that carries the key elsewhere than in the header (MCP's `_meta`) passes it in.
  const key = options.key ?? ctx.get('idempotency-key');
  const { projectId } = callerOf(ctx);
  if (!key) return { created: await commitMutation(ctx, deps.db, create), replayed: false };
  const fingerprint = fingerprintOf(ctx, request);

  const replay = (stored: StoredResponse) => {
    if (stored.fingerprint !== fingerprint) {
      throw ConflictError('idempotency_key_reused', 'This Idempotency-Key was used with a different request.', 'Idempotency-Key');
    }
    ctx.set('Idempotent-Replayed', 'true');
    return { created: { status: stored.status, body: stored.body as Answer['body'] }, replayed: true };
  };

  for (let attempt = 1; ; attempt++) {
    const earlier = await findStoredResponse(deps.db, projectId, key);
    if (earlier) return replay(earlier);
    try {
      const created = await commitMutation(ctx, deps.db, async (tx) => {
        const result = await create(tx);
        const kept = options.stored ? options.stored(result) : result;
        const stored = { fingerprint, status: kept.status, body: kept.body };
        if (!(await storeResponse(tx, projectId, key, stored, deps.idempotencyKeyHours))) throw new KeyTaken();
        return result;
      });
      return { created, replayed: false };
    } catch (err) {
      if (!(err instanceof KeyTaken) || attempt === CLAIM_ATTEMPTS) throw err;
    }
  }
}
