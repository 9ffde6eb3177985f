/**
 * Writes one audit entry for a mutating request, whatever its outcome. Requests that fail
 * authentication are not audited (they have no project), only logged.
 */
import type { Middleware } from 'koa';
import type { Db } from '../../records/db.js';
import { appendAuditEntry } from '../../records/audit-logs.js';
import { toApiError } from '../errors.js';
import type { ApiState } from '../context.js';

export function audited(db: Db, action: string, targetType: string): Middleware<ApiState> {
  return async (ctx, next) => {
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
      const caller = ctx.state.caller;
      if (caller) {
        await appendAuditEntry(db, {
          projectId: ctx.state.auditProjectId ?? caller.projectId,
          apiKeyId: caller.apiKeyId,
          action,
          targetType,
          targetId: ctx.state.auditTargetId ?? (ctx.params as Record<string, string> | undefined)?.id ?? null,
          status,
          errorCode,
          requestId: ctx.state.requestId,
        }).catch((err) => ctx.state.log.error({ err, action }, 'audit entry could not be written'));
      }
    }
  };
}
