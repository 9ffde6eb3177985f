/**
 * Pages of a list that end by size as well as by count. A row can be large (a text file's page of a million
 * characters, a table of 50,000 cells, a step with a 1 MiB tool result), and a page of a hundred of them would
 * be hundreds of megabytes held whole by a server every project shares: a page ends with the row that reaches
 * PAGE_BYTES, so it always holds one, however large.
 */

export const PAGE_BYTES = 4 * 1024 * 1024;

/**
 * `rows`, a query giving one more row than the page's limit, each with its `size` in bytes, in `order`, cut after
 * the row that reaches the budget given as parameter `budget` (`$4`…). Each row comes with the bookkeeping
 * `pageByBytes` takes off again.
 */
export function byBytes(rows: string, order: string, budget: string): string {
  return `SELECT * FROM (
     SELECT *, sum(size) OVER (ORDER BY ${order}) - size AS before, count(*) OVER () AS fetched FROM (${rows}) next
   ) page WHERE before < ${budget} ORDER BY ${order}`;
}

/** A row of a `byBytes` query: the row, and the bookkeeping `pageByBytes` takes off again. */
export type Sized<Row> = Row & Bookkeeping;

interface Bookkeeping {
  size: unknown;
  before: unknown;
  /** How many rows the query fetched before the budget cut them: a count, as text. */
  fetched: string | number;
}

/** The rows of a `byBytes` query as a page of at most `limit`, and whether more follow it. */
export function pageByBytes<Row>(rows: Sized<Row>[], limit: number): { rows: Row[]; hasMore: boolean } {
  const kept = rows.slice(0, limit).map(({ size: _size, before: _before, fetched: _fetched, ...row }) => row as Row);
  return { rows: kept, hasMore: Number(rows[0]?.fetched ?? 0) > kept.length };
}
