import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { operation } from '../../validation.js';
import { pageRequestOf } from '../../pagination.js';
import { listAuditEntries } from '../../../records/audit-logs.js';
import { presentAuditEntry } from '../../../presenters/audit-log.js';
import { presentList } from '../../../presenters/list.js';

export function auditLogRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/audit-logs',
    requireScope('admin'),
    operation('listAuditLogs', async (ctx, { query }) => {
      const page = await listAuditEntries(deps.db, callerOf(ctx).projectId, pageRequestOf(query), {
        targetId: query.target_id,
        action: query.action,
        actorApiKeyId: query.actor_api_key_id,
        createdAfter: query.created_after,
        createdBefore: query.created_before,
      });
      ctx.body = presentList(page, presentAuditEntry);
    }),
  );
}
