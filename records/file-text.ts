/** The text extracted from files, read in bounded slices; offsets and lengths count characters. */
import type { Queryable } from './db.js';
import type { FileErrorCode, FileStatus } from './files.js';

export interface TextSource {
  id: string;
  filename: string;
  status: FileStatus;
  pages: number;
  last_error: { code: FileErrorCode; message: string } | null;
}

export interface TextSlice {
  text: string;
  /** Characters in the whole page, or in the whole text when no page was asked for. */
  total_chars: number;
}

/** Of `ids`, the files that belong to the project, in the order given. */
export async function textSourcesIn(db: Queryable, projectId: string, ids: string[]): Promise<TextSource[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<TextSource & { ord: number }>(
    `SELECT f.id, f.filename, f.status, f.pages, f.last_error, w.ord FROM files f
     JOIN unnest($2::text[]) WITH ORDINALITY AS w(id, ord) ON w.id = f.id
     WHERE f.project_id = $1 ORDER BY w.ord`,
    [projectId, ids],
  );
  return rows.map(({ ord: _, ...source }) => source);
}

/**
 * `length` characters from `offset` (0-based) of one page, or of the whole text when `page` is null:
 * there each page starts with a `[page N]` line and pages are separated by a blank line, so a reader
 * knows where it is. Null when the file has no such page.
 */
export async function textSlice(
  db: Queryable,
  fileId: string,
  page: number | null,
  offset: number,
  length: number,
): Promise<TextSlice | null> {
  if (page !== null) {
    const { rows } = await db.query<TextSlice>(
      'SELECT substr(text, $3 + 1, $4) AS text, char_length(text) AS total_chars FROM file_pages WHERE file_id = $1 AND page_number = $2',
      [fileId, page, offset, length],
    );
    return rows[0] ?? null;
  }
  const { rows } = await db.query<{ text: string | null; total_chars: number | null }>(
    `WITH marked AS (SELECT page_number, format(E'[page %s]\\n%s', page_number, text) AS text FROM file_pages WHERE file_id = $1)
     SELECT substr(string_agg(text, E'\\n\\n' ORDER BY page_number), $2 + 1, $3) AS text,
            (sum(char_length(text)) + 2 * (count(*) - 1))::integer AS total_chars FROM marked`,
    [fileId, offset, length],
  );
  return { text: rows[0]?.text ?? '', total_chars: rows[0]?.total_chars ?? 0 };
}
