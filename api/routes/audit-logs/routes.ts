import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { validateQuery } from '../../validation.js';
import { pageRequestOf, presentList } from '../../pagination.js';
import { listAuditEntries, type AuditLogRecord } from '../../../records/audit-logs.js';
import { unixSeconds } from '../../../records/db.js';
import type { components } from '../../generated/openapi.js';

export function presentAuditEntry(entry: AuditLogRecord): components['schemas']['AuditLogEntry'] {
  return {
    id: entry.id,
    object: 'audit_log',
    actor: { api_key_id: entry.api_key_id },
    action: entry.action,
    target: { type: entry.target_type, id: entry.target_id },
    outcome: { status: entry.status, error_code: entry.error_code },
    request_id: entry.request_id,
    created_at: unixSeconds(entry.created_at),
  };
}

export function auditLogRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get('/v1/audit-logs', requireScope('admin'), validateQuery('listAuditLogs'), async (ctx) => {
    const query = ctx.state.query ?? {};
    const page = await listAuditEntries(deps.db, callerOf(ctx).projectId, pageRequestOf(ctx), {
      targetId: query.target_id as string | undefined,
      action: query.action as string | undefined,
    });
    ctx.body = presentList(page, presentAuditEntry);
  });
}
