/** GET /v1/events and /v1/events/{id}: the outbox, as the project's event log. */
import Router from '@koa/router';
import type { ApiDeps, ApiState } from '../../context.js';
import { callerOf } from '../../context.js';
import { requireScope } from '../../middleware/auth.js';
import { operation } from '../../validation.js';
import { InvalidRequestError, NotFoundError } from '../../errors.js';
import { pageRequestOf } from '../../pagination.js';
import { findEvent, isEventType, listEvents } from '../../../records/events.js';
import { presentEvent } from '../../../presenters/event.js';
import { presentList } from '../../../presenters/list.js';

/** `type` repeated, or comma-separated, or both: the set of types asked for, each a known one. */
function typesOf(query: string | string[] | undefined): string[] | undefined {
  if (query === undefined) return undefined;
  const types = [query].flat().flatMap((t) => t.split(',')).map((t) => t.trim()).filter((t) => t !== '');
  const unknown = types.find((t) => !isEventType(t));
  if (unknown !== undefined) throw InvalidRequestError('invalid_event_type', `\`${unknown.slice(0, 64)}\` is not an event type.`, 'type');
  return types;
}

export function eventRoutes(router: Router<ApiState>, deps: ApiDeps): void {
  router.get(
    '/v1/events',
    requireScope('events:read'),
    operation('listEvents', async (ctx, { query }) => {
      const page = await listEvents(deps.db, callerOf(ctx).projectId, pageRequestOf(query), {
        types: typesOf(query.type),
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
