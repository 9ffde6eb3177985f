/** Webhook endpoints: register (the secret shown once), list, read, change, delete, rotate the secret. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { ConflictError, NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { createOnce } from '../../idempotency.js';
import {
  countEndpoints,
  MAX_ENDPOINTS_PER_PROJECT,
  deleteEndpoint,
  findEndpoint,
  insertEndpoint,
  listEndpoints,
  rotateSecret,
  updateEndpoint,
} from '../../../records/webhooks.js';
import { recordEvent } from '../../../records/events.js';
import { presentDeletedEndpoint, presentEndpoint, presentEndpointWithSecret } from '../../../presenters/webhook.js';
import { presentList } from '../../../presenters/list.js';
import { SECRET_GRACE_SECONDS } from '../../../workflows/webhooks/client.js';
import { checkEndpointUrl } from './endpoint-url.js';

export function webhookRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  const allowPrivate = deps.webhooks?.allowPrivate ?? false;

  router.post(
    '/v1/webhooks',
    audited(deps.db, 'webhook_endpoint.create', 'webhook_endpoint'),
    requireScope('webhooks:write'),
    operation('createWebhookEndpoint', async (ctx, { body }) => {
      checkEndpointUrl(body.url, allowPrivate);
      const { projectId } = callerOf(ctx);
      const { created } = await createOnce(
        ctx,
        deps,
        body,
        async (tx) => {
          // Serialised per project, so that two registrations at once cannot both take the last place.
          await tx.query(`SELECT pg_advisory_xact_lock(hashtext('webhook_endpoints:' || $1))`, [projectId]);
          if ((await countEndpoints(tx, projectId)) >= MAX_ENDPOINTS_PER_PROJECT) {
            throw ConflictError(
              'too_many_webhook_endpoints',
              `A project has at most ${MAX_ENDPOINTS_PER_PROJECT} webhook endpoints; delete one first.`,
            );
          }
          const { record, secret } = await insertEndpoint(tx, {
            projectId,
            url: body.url,
            eventTypes: body.event_types,
            description: body.description ?? null,
            metadata: body.metadata ?? {},
          });
          return { status: 201, body: presentEndpointWithSecret(record, secret) };
        },
        // The secret is shown once: a replay returns the endpoint without it.
        { stored: ({ status, body: { secret: _secret, ...withoutSecret } }) => ({ status, body: withoutSecret }) },
      );
      respond(ctx, created);
    }),
  );

  router.get(
    '/v1/webhooks',
    requireScope('webhooks:read'),
    operation('listWebhookEndpoints', async (ctx, { query }) => {
      ctx.body = presentList(await listEndpoints(deps.db, callerOf(ctx).projectId, pageRequestOf(query)), presentEndpoint);
    }),
  );

  router.get(
    '/v1/webhooks/:id',
    requireScope('webhooks:read'),
    operation('getWebhookEndpoint', async (ctx, { path: { id } }) => {
      const endpoint = await findEndpoint(deps.db, callerOf(ctx).projectId, id);
      if (!endpoint) throw NotFoundError('webhook endpoint', id);
      ctx.body = presentEndpoint(endpoint);
    }),
  );

  router.patch(
    '/v1/webhooks/:id',
    audited(deps.db, 'webhook_endpoint.update', 'webhook_endpoint'),
    requireScope('webhooks:write'),
    operation('updateWebhookEndpoint', async (ctx, { path: { id }, body }) => {
      if (body.url !== undefined) checkEndpointUrl(body.url, allowPrivate);
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const current = await findEndpoint(tx, projectId, id, { lock: true });
        if (!current) throw NotFoundError('webhook endpoint', id);
        const endpoint = await updateEndpoint(tx, projectId, id, {
          url: body.url,
          eventTypes: body.event_types,
          description: body.description,
          metadata: body.metadata,
          status: body.status,
        });
        if (!endpoint) throw NotFoundError('webhook endpoint', id);
        if (current.status === 'enabled' && endpoint.status === 'disabled') {
          await recordEvent(tx, projectId, 'webhook_endpoint.disabled', { object: 'webhook_endpoint', id });
        }
        return { status: 200, body: presentEndpoint(endpoint) };
      });
      respond(ctx, answer);
    }),
  );

  router.delete(
    '/v1/webhooks/:id',
    audited(deps.db, 'webhook_endpoint.delete', 'webhook_endpoint'),
    requireScope('webhooks:write'),
    operation('deleteWebhookEndpoint', async (ctx, { path: { id } }) => {
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        if (!(await deleteEndpoint(tx, callerOf(ctx).projectId, id))) throw NotFoundError('webhook endpoint', id);
        return { status: 200, body: presentDeletedEndpoint(id) };
      });
      respond(ctx, answer);
    }),
  );

  router.post(
    '/v1/webhooks/:id/rotate_secret',
    audited(deps.db, 'webhook_endpoint.rotate_secret', 'webhook_endpoint'),
    requireScope('webhooks:write'),
    operation('rotateWebhookSecret', async (ctx, { path: { id } }) => {
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const rotated = await rotateSecret(tx, callerOf(ctx).projectId, id, SECRET_GRACE_SECONDS);
        if (!rotated) throw NotFoundError('webhook endpoint', id);
        return { status: 200, body: presentEndpointWithSecret(rotated.record, rotated.secret) };
      });
      respond(ctx, answer);
    }),
  );
}
