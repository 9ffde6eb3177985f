import type { components } from '../api/generated/openapi.js';
import type { EventRecord } from '../records/events.js';
import { unixSeconds } from './time.js';

export type EventObject = components['schemas']['Event'];

/**
 * The thin event: its subject named by `{id, object}`, never the subject's content, so a receiver reads
 * the current state from the API (and a delivery retried hours later carries nothing stale).
 */
export function presentEvent(event: EventRecord): EventObject {
  return {
    id: event.id,
    object: 'event',
    type: event.type as EventObject['type'],
    created_at: unixSeconds(event.created_at),
    data: { id: event.data.id, object: event.data.object },
  };
}
