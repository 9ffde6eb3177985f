import { newId } from './ids.js';
import type { Queryable } from './db.js';

export interface ProjectRecord {
  id: string;
  name: string;
  created_at: Date;
}

export async function insertProject(db: Queryable, name: string, id = newId('proj')): Promise<ProjectRecord> {
  const { rows } = await db.query<ProjectRecord>('INSERT INTO projects (id, name) VALUES ($1, $2) RETURNING id, name, created_at', [
    id,
    name,
  ]);
  return rows[0]!;
}

export async function findProject(db: Queryable, id: string): Promise<ProjectRecord | null> {
  const { rows } = await db.query<ProjectRecord>('SELECT id, name, created_at FROM projects WHERE id = $1', [id]);
  return rows[0] ?? null;
}
