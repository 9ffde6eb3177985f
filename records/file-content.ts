/**
 * What extraction derived from a file: its pages (or transcript segments) and its tables. Written while a file
 * is `processing`, in batches that a resumed extraction may write again (each row once), and read back by the
 * content and tables endpoints.
 */
import { byBytes, PAGE_BYTES, pageByBytes, type Sized } from './byte-pages.js';
import type { Queryable } from './db.js';
import { storableText } from '../models/storable-text.js';
import { discardGraphDrafts } from './graph-drafts.js';
import { newId } from './ids.js';
import type { PageText, Table, TranscriptSegment } from './content-types.js';

export type ContentSource = PageText['source'] | 'transcript';

export interface ContentPartRecord {
  page_number: number;
  start_ms: number | null;
  end_ms: number | null;
  source: ContentSource;
  confidence: number | null;
  text: string;
}

export interface TableRecord {
  id: string;
  file_id: string;
  page: number;
  position: number;
  box: Table['box'];
  row_count: number;
  column_count: number;
  detection: Table['detection'];
  truncated: boolean;
  cells: Table['cells'];
}

export async function storePages(db: Queryable, fileId: string, pages: PageText[]): Promise<void> {
  if (pages.length === 0) return;
  await db.query(
    `INSERT INTO file_pages (file_id, page_number, text, source, confidence)
     SELECT $1, n, t, s, c FROM unnest($2::int[], $3::text[], $4::text[], $5::real[]) AS p(n, t, s, c)
     ON CONFLICT (file_id, page_number) DO NOTHING`,
    [
      fileId,
      pages.map((p) => p.page),
      pages.map((p) => storableText(p.text)),
      pages.map((p) => p.source),
      pages.map((p) => p.confidence ?? null),
    ],
  );
}

/** Segments are numbered from 1 in order; `first` is the number of the first one given. */
export async function storeSegments(db: Queryable, fileId: string, segments: TranscriptSegment[], first = 1): Promise<void> {
  if (segments.length === 0) return;
  await db.query(
    `INSERT INTO file_pages (file_id, page_number, text, source, start_ms, end_ms)
     SELECT $1, $2 + ord - 1, t, 'transcript', s, e FROM unnest($3::text[], $4::int[], $5::int[]) WITH ORDINALITY AS p(t, s, e, ord)
     ON CONFLICT (file_id, page_number) DO NOTHING`,
    [
      fileId,
      first,
      segments.map((s) => storableText(s.text.trim())),
      segments.map((s) => Math.round(s.start_ms)),
      segments.map((s) => Math.round(s.end_ms)),
    ],
  );
}

/** A page's tables, in the order found; a page's tables are written together, so `position` identifies each. */
export async function storeTables(db: Queryable, fileId: string, tables: Table[]): Promise<void> {
  const positions = new Map<number, number>();
  const rows = tables.map((table) => {
    const page = table.page ?? 1;
    const position = positions.get(page) ?? 0;
    positions.set(page, position + 1);
    return { page, position, table };
  });
  if (rows.length === 0) return;
  await db.query(
    `INSERT INTO file_tables (id, file_id, page, position, box, row_count, column_count, detection, cells, truncated)
     SELECT i, $1, p, o, b, r, c, d, x, u FROM unnest($2::text[], $3::int[], $4::int[], $5::jsonb[], $6::int[], $7::int[], $8::text[], $9::jsonb[], $10::boolean[])
       AS t(i, p, o, b, r, c, d, x, u)
     ON CONFLICT (file_id, page, position) DO NOTHING`,
    [
      fileId,
      rows.map(() => newId('table')),
      rows.map((r) => r.page),
      rows.map((r) => r.position),
      rows.map((r) => JSON.stringify(r.table.box)),
      rows.map((r) => r.table.rows),
      rows.map((r) => r.table.columns),
      rows.map((r) => r.table.detection),
      rows.map((r) => JSON.stringify(r.table.cells.map((cell) => ({ ...cell, text: storableText(cell.text) })))),
      rows.map((r) => r.table.truncated ?? false),
    ],
  );
}

/** Where a resumed extraction picks up: the number of the last page or segment stored, 0 for none. */
export async function lastStoredPart(db: Queryable, fileId: string): Promise<number> {
  const { rows } = await db.query<{ last: number | null }>('SELECT max(page_number) AS last FROM file_pages WHERE file_id = $1', [fileId]);
  return rows[0]?.last ?? 0;
}

/** The last part (page or segment number) with an embedding; 0 for none. */
export async function lastEmbeddedPart(db: Queryable, fileId: string): Promise<number> {
  const { rows } = await db.query<{ last: number | null }>('SELECT max(page_number) AS last FROM file_page_embeddings WHERE file_id = $1', [
    fileId,
  ]);
  return rows[0]?.last ?? 0;
}

/**
 * Whether a context file's extraction has begun to embed its parts, and to draft its graph items: each step begins only
 * once the one before it is done, so what these stored tells a slice which steps are done.
 */
export async function laterStepsBegun(db: Queryable, fileId: string): Promise<{ embedded: boolean; drafted: boolean }> {
  const { rows } = await db.query<{ embedded: boolean; drafted: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM file_page_embeddings WHERE file_id = $1) AS embedded,
            EXISTS (SELECT 1 FROM file_graph_drafts WHERE file_id = $1) AS drafted`,
    [fileId],
  );
  return rows[0]!;
}

/** How much of a recording is stored: its segments, and where the last of them ends (0 for none). */
export async function transcribedSoFar(db: Queryable, fileId: string): Promise<{ segments: number; endMs: number }> {
  const { rows } = await db.query<{ segments: number | null; end_ms: number | null }>(
    'SELECT max(page_number) AS segments, max(end_ms) AS end_ms FROM file_pages WHERE file_id = $1',
    [fileId],
  );
  return { segments: rows[0]?.segments ?? 0, endMs: rows[0]?.end_ms ?? 0 };
}

/** Throws away what an earlier attempt stored, for an extraction that must start over. */
export async function discardContent(db: Queryable, fileId: string): Promise<void> {
  await db.query('DELETE FROM file_pages WHERE file_id = $1', [fileId]);
  await db.query('DELETE FROM file_tables WHERE file_id = $1', [fileId]);
  await db.query('DELETE FROM file_page_embeddings WHERE file_id = $1', [fileId]);
  await db.query('DELETE FROM file_vision_images WHERE file_id = $1', [fileId]);
  await db.query('DELETE FROM graph_model_answers WHERE file_id = $1', [fileId]);
  await discardGraphDrafts(db, fileId);
}

/** Parts after `after` (a page or segment number), in order: `limit` of them, or fewer where PAGE_BYTES was reached. */
export async function contentParts(
  db: Queryable,
  fileId: string,
  after: number,
  limit: number,
): Promise<{ rows: ContentPartRecord[]; hasMore: boolean }> {
  const { rows } = await db.query<Sized<ContentPartRecord>>(
    byBytes(
      `SELECT page_number, start_ms, end_ms, source, confidence, text, octet_length(text) AS size FROM file_pages
       WHERE file_id = $1 AND page_number > $2 ORDER BY page_number LIMIT $3`,
      'page_number',
      '$4',
    ),
    [fileId, after, limit + 1, PAGE_BYTES],
  );
  return pageByBytes<ContentPartRecord>(rows, limit);
}

export async function tablesOf(
  db: Queryable,
  fileId: string,
  after: string | undefined,
  limit: number,
): Promise<{ rows: TableRecord[]; hasMore: boolean }> {
  const { rows } = await db.query<Sized<TableRecord>>(
    byBytes(
      `SELECT id, file_id, page, position, box, row_count, column_count, detection, truncated, cells,
              octet_length(cells::text) AS size FROM file_tables t
       WHERE file_id = $1 AND ($2::text IS NULL OR (page, position) > (SELECT page, position FROM file_tables WHERE id = $2 AND file_id = $1))
       ORDER BY page, position LIMIT $3`,
      'page, position',
      '$4',
    ),
    [fileId, after ?? null, limit + 1, PAGE_BYTES],
  );
  return pageByBytes<TableRecord>(rows, limit);
}

export async function tableExists(db: Queryable, fileId: string, id: string): Promise<boolean> {
  const { rowCount } = await db.query('SELECT 1 FROM file_tables WHERE id = $1 AND file_id = $2', [id, fileId]);
  return (rowCount ?? 0) > 0;
}

/** The counts a file's `extracted` shows: exactly what the content and tables endpoints return. */
export async function contentCounts(db: Queryable, fileId: string): Promise<{ pages: number; tables: number }> {
  const { rows } = await db.query<{ pages: number; tables: number }>(
    `SELECT (SELECT count(*) FROM file_pages WHERE file_id = $1 AND start_ms IS NULL)::int AS pages,
            (SELECT count(*) FROM file_tables WHERE file_id = $1)::int AS tables`,
    [fileId],
  );
  return rows[0]!;
}

/** Sets the embeddings of a file's pages or segments, by number. */
export async function storeEmbeddings(
  db: Queryable,
  fileId: string,
  embeddings: { part: number; embedding: Float32Array }[],
): Promise<void> {
  if (embeddings.length === 0) return;
  await db.query(
    `INSERT INTO file_page_embeddings (file_id, page_number, embedding)
     SELECT $1, n, embedding::real[] FROM unnest($2::int[], $3::text[]) AS x(n, embedding)
     ON CONFLICT (file_id, page_number) DO UPDATE SET embedding = EXCLUDED.embedding`,
    [fileId, embeddings.map((e) => e.part), embeddings.map((e) => `{${Array.from(e.embedding, (v) => v.toFixed(6)).join(',')}}`)],
  );
}
