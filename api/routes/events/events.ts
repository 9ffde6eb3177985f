/** GET /v1/events and /v1/events/{id}: the outbox, as the project's event log. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { operation } from '../../validation.js';
import { NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { findEvent, listEvents } from '../../../records/events.js';
import { presentEvent } from '../../../presenters/event.js';
import { presentList } from '../../../presenters/list.js';

export function eventRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/events',
    requireScope('events:read'),
    operation('listEvents', async (ctx, { query }) => {
      const page = await listEvents(deps.db, callerOf(ctx).projectId, pageRequestOf(query), {
        types: query.type && query.type.length > 0 ? query.type : undefined,
        createdAfter: query.created_after,
        createdBefore: query.created_before,
        objectId: query.object_id,
      });
      ctx.body = presentList(page, presentEvent);
    }),
  );

  router.get(
    '/v1/events/:id',
    requireScope('events:read'),
    operation('getEvent', async (ctx, { path: { id } }) => {
      const event = await findEvent(deps.db, callerOf(ctx).projectId, id);
      if (!event) throw NotFoundError('event', id);
      ctx.body = presentEvent(event);
    }),
  );
}
