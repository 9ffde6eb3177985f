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
  /** A trusted table name (never user input): the table the cursor ids belong to. */
  table: string;
  /** What to select from, when more than `table` (a join); `alias` names `table` in it. */
  from?: string;
  alias?: string;
  /** The columns of the record type, listed: a page carries what the record promises and nothing more. */
  columns: string;
  projectId: string;
  /** Extra equality filters: column name (trusted) → value. Undefined values are ignored. */
  where?: Record<string, string | undefined>;
  /** Further conditions: trusted SQL with `?` for each value that follows it. */
  conditions?: [sql: string, ...values: unknown[]][];
  page: PageRequest;
}

export async function selectPage<T>(db: Queryable, query: PageQuery): Promise<Page<T>> {
  const { table, columns, projectId, page } = query;
  const from = query.from ?? table;
  const col = (name: string) => (query.alias ? `${query.alias}.${name}` : name);
  const params: unknown[] = [projectId];
  const clauses = [`${col('project_id')} = $1`];
  for (const [column, value] of Object.entries(query.where ?? {})) {
    if (value === undefined) continue;
    params.push(value);
    clauses.push(`${col(column)} = $${params.length}`);
  }
  for (const [sql, ...values] of query.conditions ?? []) {
    let next = 0;
    clauses.push(
      sql.replace(/\?/g, () => {
        params.push(values[next++]);
        return `$${params.length}`;
      }),
    );
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
    clauses.push(
      `(${col('created_at')}, ${col('id')}) ${ascending ? '>' : '<'} (SELECT created_at, id FROM ${table} WHERE id = $${params.length})`,
    );
  }
  params.push(page.limit + 1);
  const direction = ascending ? 'ASC' : 'DESC';
  const result = await db.query(
    `SELECT ${columns} FROM ${from} WHERE ${clauses.join(' AND ')} ORDER BY ${col('created_at')} ${direction}, ${col('id')} ${direction} LIMIT $${params.length}`,
    params,
  );
  const rows = result.rows.slice(0, page.limit) as T[];
  if (!forward) rows.reverse();
  return { rows, hasMore: result.rows.length > page.limit };
}
