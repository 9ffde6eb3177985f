/**
 * The outbox: an event is written in the transaction of the change it announces. It names its subject
 * (`{object, id}`); the payload is presented when the event is sent, so it always has the current shape.
 */
import { newId } from './ids.js';
import type { Queryable } from './db.js';

export interface EventSubject {
  object: string;
  id: string;
}

export interface EventRecord {
  id: string;
  project_id: string;
  type: string;
  data: EventSubject;
  created_at: Date;
  delivered_at: Date | null;
}

export async function recordEvent(tx: Queryable, projectId: string, type: string, subject: EventSubject): Promise<void> {
  await tx.query('INSERT INTO events (id, project_id, type, data) VALUES ($1, $2, $3, $4)', [newId('evt'), projectId, type, subject]);
}

export async function eventsFor(db: Queryable, projectId: string, type: string, objectId: string): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    `SELECT id, project_id, type, data, created_at, delivered_at FROM events
     WHERE project_id = $1 AND type = $2 AND data->>'id' = $3 ORDER BY created_at, id`,
    [projectId, type, objectId],
  );
  return rows;
}
