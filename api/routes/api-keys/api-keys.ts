import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope, type KeyCache } from '../../middleware/auth.js';
import { keyLimitsWithinCeilings } from '../../middleware/rate-limit.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { deprecatedUpdateByPost } from '../../middleware/deprecated-update.js';
import { InvalidRequestError, NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { createOnce } from '../../idempotency.js';
import { findApiKey, insertApiKey, listApiKeys, revokeApiKey, updateApiKey } from '../../../records/api-keys.js';
import { findProject } from '../../../records/projects.js';
import { presentApiKey, presentApiKeyWithSecret, presentRevokedApiKey } from '../../../presenters/api-key.js';
import { presentList } from '../../../presenters/list.js';

export function apiKeyRoutes(router: Router<ApiState>, deps: ApiDeps, keys: KeyCache): void {
  router.post(
    '/v1/api-keys',
    audited(deps.db, 'api_key.create', 'api_key'),
    requireScope('admin'),
    operation('createApiKey', async (ctx, { body }) => {
      const caller = callerOf(ctx);
      const projectId = body.project_id ?? caller.projectId;
      // Only the bootstrap key reaches across projects; for anyone else another project does not exist.
      if (projectId !== caller.projectId && (!caller.bootstrap || !(await findProject(deps.db, projectId)))) {
        throw NotFoundError('project', projectId, 'project_id');
      }
      // The entry belongs with the key, so that project's admins see who created it.
      if (projectId !== caller.projectId) ctx.state.auditProjectId = projectId;
      const { created } = await createOnce(
        ctx,
        deps,
        body,
        async (tx) => {
          const { record, secret } = await insertApiKey(tx, {
            projectId,
            name: body.name,
            scopes: body.scopes,
            rateLimits: keyLimitsWithinCeilings(body.rate_limits, deps.rateLimits),
          });
          return { status: 201, body: presentApiKeyWithSecret(record, secret) };
        },
        // The secret is shown once: a replay returns the key without it.
        { stored: ({ status, body: { key: _secret, ...withoutSecret } }) => ({ status, body: withoutSecret }) },
      );
      respond(ctx, created);
    }),
  );

  router.get(
    '/v1/api-keys',
    requireScope('admin'),
    operation('listApiKeys', async (ctx, { query }) => {
      ctx.body = presentList(await listApiKeys(deps.db, callerOf(ctx).projectId, pageRequestOf(query)), presentApiKey);
    }),
  );

  // PATCH is the update verb; POST answers the same for clients written before it, marked deprecated.
  const update = [
    audited(deps.db, 'api_key.update', 'api_key'),
    requireScope('admin'),
    operation('updateApiKey', async (ctx, { path: { id }, body }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        if (body.rate_limits !== undefined && (await findApiKey(tx, projectId, id))?.bootstrap) {
          // Like its deletion: otherwise a request could throttle the operator's own key.
          throw InvalidRequestError(
            'bootstrap_key',
            "The bootstrap key's rate limits are the deployment's (AGENTPLANE_RATE_LIMIT_*); set them there.",
            'rate_limits',
          );
        }
        const rateLimits = keyLimitsWithinCeilings(body.rate_limits, deps.rateLimits);
        const key = await updateApiKey(tx, projectId, id, { name: body.name, rateLimits });
        if (!key) throw NotFoundError('API key', id);
        return { status: 200, body: presentApiKey(key) };
      });
      // Other replicas read the change within KEY_CACHE_TTL_MS.
      keys.refreshKey(id);
      respond(ctx, answer);
    }),
  ] as const;
  router.patch('/v1/api-keys/:id', ...update);
  router.post('/v1/api-keys/:id', deprecatedUpdateByPost(), ...update);

  router.delete(
    '/v1/api-keys/:id',
    audited(deps.db, 'api_key.revoke', 'api_key'),
    requireScope('admin'),
    operation('revokeApiKey', async (ctx, { path: { id } }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const existing = await findApiKey(tx, projectId, id);
        if (!existing || existing.revoked_at) throw NotFoundError('API key', id);
        if (existing.bootstrap) {
          throw InvalidRequestError('bootstrap_key', 'The bootstrap key is managed by AGENTPLANE_ADMIN_KEY; rotate it there.', 'id');
        }
        await revokeApiKey(tx, projectId, id);
        return { status: 200, body: presentRevokedApiKey(id) };
      });
      keys.forgetKey(id);
      respond(ctx, answer);
    }),
  );
}
