import type { Queryable } from './db.js';

export interface EventRecord {
  id: string;
  project_id: string;
  type: string;
  data: Record<string, unknown>;
  created_at: Date;
  delivered_at: Date | null;
}

export async function eventsFor(db: Queryable, projectId: string, type: string, objectId: string): Promise<EventRecord[]> {
  const { rows } = await db.query<EventRecord>(
    `SELECT * FROM events WHERE project_id = $1 AND type = $2 AND data->>'id' = $3 ORDER BY created_at, id`,
    [projectId, type, objectId],
  );
  return rows;
}
