/**
 * One audit entry per mutating request, whatever its outcome. A mutation that commits writes its entry in
 * its own transaction (commitMutation), so a committed change always has its entry; a request that
 * changed nothing (refused, failed, or an idempotent replay) gets its entry when it has been answered.
 * Requests that fail authentication have no project, and requests refused while the database is down
 * have nowhere to write: both are logged, not audited.
 */
import type { Middleware } from 'koa';
import type pg from 'pg';
import type { Db, Queryable } from '../records/db.js';
import { DatabaseUnavailableError, transaction } from '../records/db.js';
import { appendAuditEntry } from '../records/audit-logs.js';
import { toApiError } from './errors.js';
import type { ApiContext, ApiState } from './context.js';

/** What a mutation answers: the status and the object it acted on. */
export interface Answer<Body extends { id: string } = { id: string }> {
  status: number;
  body: Body;
}

export function audited(db: Db, action: string, targetType: string): Middleware<ApiState> {
  return async (ctx, next) => {
    ctx.state.audit = { action, targetType, committed: false };
    let status = 500;
    let errorCode: string | null = null;
    try {
      await next();
      status = ctx.status;
    } catch (err) {
      const apiError = toApiError(err);
      status = apiError?.status ?? 500;
      errorCode = apiError?.code ?? 'internal_error';
      throw err;
    } finally {
      if (ctx.state.caller && !ctx.state.audit.committed) {
        // Nothing was committed, so nothing is lost with the entry should the database be down too.
        await writeEntry(db, ctx, status, errorCode).catch((err) =>
          err instanceof DatabaseUnavailableError
            ? ctx.state.log.warn({ action, status, error_code: errorCode }, 'not audited: the database is unavailable')
            : ctx.state.log.error({ err, action }, 'audit entry could not be written'),
        );
      }
    }
  };
}

/** Runs a mutation in one transaction with its audit entry: the change and its entry commit together. */
export async function commitMutation<A extends Answer>(ctx: ApiContext, db: Db, work: (tx: pg.PoolClient) => Promise<A>): Promise<A> {
  const answer = await transaction(db, async (tx) => {
    const result = await work(tx);
    await writeEntry(tx, ctx, result.status, null, result.body.id);
    return result;
  });
  if (ctx.state.audit) ctx.state.audit.committed = true;
  return answer;
}

/** Sends a mutation's answer. */
export function respond(ctx: ApiContext, answer: Answer): void {
  ctx.state.auditTargetId = answer.body.id;
  ctx.status = answer.status;
  ctx.body = answer.body;
}

/**
 * An entry for a record a request makes beside its own (the files an A2A message carries, beside its run), in the
 * transaction that makes it.
 */
export async function auditAlso(
  tx: Queryable,
  ctx: ApiContext,
  what: { action: string; targetType: string; targetId: string },
): Promise<void> {
  await writeEntry(tx, ctx, 200, null, what.targetId, what);
}

async function writeEntry(
  db: Queryable,
  ctx: ApiContext,
  status: number,
  errorCode: string | null,
  targetId?: string,
  act?: { action: string; targetType: string },
): Promise<void> {
  const { caller, audit } = ctx.state;
  if (!caller || !audit) throw new Error('route is missing authenticate() or audited()');
  const entry = {
    apiKeyId: caller.apiKeyId,
    action: act?.action ?? audit.action,
    targetType: act?.targetType ?? audit.targetType,
    targetId: targetId ?? ctx.state.auditTargetId ?? (ctx.params as Record<string, string> | undefined)?.id ?? null,
    status,
    errorCode,
    requestId: ctx.state.requestId,
  };
  const targetProject = ctx.state.auditProjectId ?? caller.projectId;
  await appendAuditEntry(db, { ...entry, projectId: targetProject });
  // An act in another project (the bootstrap key's reach) is also kept where the actor lives: the operator's
  // one trail of what the platform did across projects.
  if (targetProject !== caller.projectId) await appendAuditEntry(db, { ...entry, projectId: caller.projectId });
}
