import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope, type KeyCache } from '../../middleware/auth.js';
import { audited } from '../../middleware/audit.js';
import { validateBody, validateQuery } from '../../validation.js';
import { InvalidRequestError, NotFoundError } from '../../errors.js';
import { pageRequestOf, presentList } from '../../pagination.js';
import { createOnce, fingerprintOf } from '../../idempotency.js';
import { findApiKey, insertApiKey, listApiKeys, revokeApiKey, type ApiKeyRecord } from '../../../records/api-keys.js';
import { findProject } from '../../../records/projects.js';
import { unixSeconds } from '../../../records/db.js';
import type { components } from '../../generated/openapi.js';

type CreateApiKeyRequest = components['schemas']['CreateApiKeyRequest'];
type ApiKeyObject = components['schemas']['ApiKey'];

export function presentApiKey(key: ApiKeyRecord): ApiKeyObject {
  return {
    id: key.id,
    object: 'api_key',
    name: key.name,
    project_id: key.project_id,
    scopes: key.scopes as ApiKeyObject['scopes'],
    prefix: key.prefix,
    created_at: unixSeconds(key.created_at),
    revoked_at: unixSeconds(key.revoked_at),
  };
}

export function apiKeyRoutes(router: Router<ApiState>, deps: ApiDeps, keys: KeyCache): void {
  router.post('/v1/api-keys', audited(deps.db, 'api_key.create', 'api_key'), requireScope('admin'), validateBody('CreateApiKeyRequest'), async (ctx) => {
    const caller = callerOf(ctx);
    const request = ctx.request.body as CreateApiKeyRequest;
    const projectId = request.project_id ?? caller.projectId;
    // Only the bootstrap key reaches across projects; for anyone else another project does not exist.
    if (projectId !== caller.projectId && (!caller.bootstrap || !(await findProject(deps.db, projectId)))) {
      throw NotFoundError('project', projectId);
    }
    // The entry belongs with the key, so that project's admins see who created it.
    if (projectId !== caller.projectId) ctx.state.auditProjectId = projectId;
    const { created } = await createOnce(
      ctx,
      deps,
      fingerprintOf(request),
      async (tx) => {
        const { record, secret } = await insertApiKey(tx, { projectId, name: request.name, scopes: request.scopes });
        return { status: 201, body: { ...presentApiKey(record), key: secret } };
      },
      // The secret is shown once: a replay returns the key without it.
      { stored: ({ status, body }) => ({ status, body: { ...(body as object), key: undefined } }) },
    );
    ctx.state.auditTargetId = (created.body as { id: string }).id;
    ctx.status = created.status;
    ctx.body = created.body;
  });

  router.get('/v1/api-keys', requireScope('admin'), validateQuery('listApiKeys'), async (ctx) => {
    ctx.body = presentList(await listApiKeys(deps.db, callerOf(ctx).projectId, pageRequestOf(ctx)), presentApiKey);
  });

  router.delete('/v1/api-keys/:id', audited(deps.db, 'api_key.revoke', 'api_key'), requireScope('admin'), async (ctx) => {
    const { projectId } = callerOf(ctx);
    const id = ctx.params.id!;
    const existing = await findApiKey(deps.db, projectId, id);
    if (!existing || existing.revoked_at) throw NotFoundError('API key', id);
    if (existing.bootstrap) {
      throw InvalidRequestError('bootstrap_key', 'The bootstrap key is managed by AGENTPLANE_ADMIN_KEY; rotate it there.', 'id');
    }
    await revokeApiKey(deps.db, projectId, id);
    keys.forgetKey(id);
    ctx.body = { id, object: 'api_key', deleted: true };
  });
}
