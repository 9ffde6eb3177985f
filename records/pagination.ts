/**
 * Keyset pagination on (created_at, id) for every list: the cursor is an object id, so the cost of a
 * page does not grow with how far into the list it is.
 */
import type { Queryable } from './db.js';

export interface PageRequest {
  limit: number;
  after?: string;
  before?: string;
  order: 'asc' | 'desc';
}

export interface Page<T> {
  rows: T[];
  hasMore: boolean;
}

export class UnknownCursorError extends Error {
  constructor(readonly param: 'after' | 'before') {
    super(`No object matches the \`${param}\` cursor.`);
  }
}

interface PageQuery {
  /** A trusted table name (never user input). */
  table: string;
  /** The columns of the record type, listed: a page carries what the record promises and nothing more. */
  columns: string;
  projectId: string;
  /** Extra equality filters: column name (trusted) → value. Undefined values are ignored. */
  where?: Record<string, string | undefined>;
  page: PageRequest;
}

export async function selectPage<T>(db: Queryable, query: PageQuery): Promise<Page<T>> {
  const { table, columns, projectId, page } = query;
  const params: unknown[] = [projectId];
  const clauses = ['project_id = $1'];
  for (const [column, value] of Object.entries(query.where ?? {})) {
    if (value === undefined) continue;
    params.push(value);
    clauses.push(`${column} = $${params.length}`);
  }

  const cursor = page.after ?? page.before;
  const param = page.after !== undefined ? 'after' : 'before';
  // Walking forward from `after` follows the requested order; walking back from `before` runs the
  // opposite way and the page is reversed afterwards.
  const forward = page.before === undefined;
  const ascending = (page.order === 'asc') === forward;
  if (cursor !== undefined) {
    params.push(cursor);
    const found = await db.query(`SELECT 1 FROM ${table} WHERE id = $1 AND project_id = $2`, [cursor, projectId]);
    if (found.rowCount === 0) throw new UnknownCursorError(param);
    clauses.push(`(created_at, id) ${ascending ? '>' : '<'} (SELECT created_at, id FROM ${table} WHERE id = $${params.length})`);
  }
  params.push(page.limit + 1);
  const direction = ascending ? 'ASC' : 'DESC';
  const result = await db.query(
    `SELECT ${columns} FROM ${table} WHERE ${clauses.join(' AND ')} ORDER BY created_at ${direction}, id ${direction} LIMIT $${params.length}`,
    params,
  );
  const rows = result.rows.slice(0, page.limit) as T[];
  if (!forward) rows.reverse();
  return { rows, hasMore: result.rows.length > page.limit };
}
