/** An endpoint's delivery log, and redelivery (a new delivery of the same event, which the worker sends). */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { audited, commitMutation, respond } from '../../audit.js';
import { operation } from '../../validation.js';
import { ConflictError, NotFoundError, RateLimitError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { findDelivery, findEndpoint, insertRedelivery, listDeliveries, recentRedeliveries } from '../../../records/webhooks.js';
import { presentDelivery } from '../../../presenters/webhook.js';
import { presentList } from '../../../presenters/list.js';

/** Redeliveries of one event to one endpoint an hour. */
export const REDELIVERIES_PER_HOUR = 5;

export function webhookDeliveryRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/webhooks/:id/deliveries',
    requireScope('webhooks:read'),
    operation('listWebhookDeliveries', async (ctx, { path: { id }, query }) => {
      const { projectId } = callerOf(ctx);
      if (!(await findEndpoint(deps.db, projectId, id))) throw NotFoundError('webhook endpoint', id);
      ctx.body = presentList(await listDeliveries(deps.db, projectId, id, pageRequestOf(query)), presentDelivery);
    }),
  );

  router.post(
    '/v1/webhooks/:id/deliveries/:delivery_id/redeliver',
    audited(deps.db, 'webhook_delivery.redeliver', 'webhook_delivery'),
    requireScope('webhooks:write'),
    operation('redeliverWebhook', async (ctx, { path: { id, delivery_id: deliveryId } }) => {
      const { projectId } = callerOf(ctx);
      const answer = await commitMutation(ctx, deps.db, async (tx) => {
        const endpoint = await findEndpoint(tx, projectId, id, { lock: true });
        if (!endpoint) throw NotFoundError('webhook endpoint', id);
        const original = await findDelivery(tx, projectId, id, deliveryId);
        if (!original) throw NotFoundError('webhook delivery', deliveryId, 'delivery_id');
        if (endpoint.status !== 'enabled')
          throw ConflictError('endpoint_disabled', `Webhook endpoint ${id} is disabled; enable it first.`, 'id');
        // Each redelivery is up to a dozen signed requests to a URL of the caller's choosing: bounded, so the
        // platform cannot be turned into a request reflector.
        const recent = await recentRedeliveries(tx, original);
        if (recent.count >= REDELIVERIES_PER_HOUR) {
          throw RateLimitError(
            'redeliveries_exceeded',
            `This event was redelivered to endpoint ${id} ${recent.count} times in the last hour, the most allowed; try again in ${recent.oldestLeavesInSeconds}s.`,
            Math.max(1, recent.oldestLeavesInSeconds),
          );
        }
        const created = await findDelivery(tx, projectId, id, await insertRedelivery(tx, original));
        return { status: 202, body: presentDelivery(created!) };
      });
      respond(ctx, answer);
    }),
  );
}
