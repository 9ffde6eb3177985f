/** File records, their derived pages, and the transitions of extraction. */
import type { components } from '../api/generated/openapi.js';
import { newId } from './ids.js';
import { transaction, type Db, type Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import { releaseBlob } from './blob-leases.js';
import { recordEvent } from './events.js';

type FileObject = components['schemas']['File'];
export type FilePurpose = FileObject['purpose'];
/** A type the platform accepts, decided from a file's content. */
export type FileMimeType = FileObject['mime_type'];
export type FileStatus = FileObject['status'];
export type FileErrorCode = components['schemas']['FileError']['code'];

export interface FileRecord {
  id: string;
  project_id: string;
  filename: string;
  bytes: number;
  purpose: FilePurpose;
  status: FileStatus;
  mime_type: FileMimeType;
  blob_key: string;
  metadata: Record<string, string>;
  pages: number;
  tables: number;
  graph_items: number;
  last_error: { code: FileErrorCode; message: string } | null;
  created_at: Date;
  processed_at: Date | null;
}

export interface NewFile {
  id: string;
  projectId: string;
  filename: string;
  bytes: number;
  purpose: FilePurpose;
  mimeType: FileMimeType;
  blobKey: string;
  metadata: Record<string, string>;
}

const COLUMNS =
  'id, project_id, filename, bytes, purpose, status, mime_type, blob_key, metadata, pages, tables, graph_items, last_error, created_at, processed_at';

export function newFileId(): string {
  return newId('file');
}

export async function insertFile(db: Queryable, file: NewFile): Promise<FileRecord> {
  const { rows } = await db.query<FileRecord>(
    `INSERT INTO files (id, project_id, filename, bytes, purpose, status, mime_type, blob_key, metadata)
     VALUES ($1, $2, $3, $4, $5, 'processing', $6, $7, $8) RETURNING ${COLUMNS}`,
    [file.id, file.projectId, file.filename, file.bytes, file.purpose, file.mimeType, file.blobKey, file.metadata],
  );
  return rows[0]!;
}

export async function findFile(db: Queryable, projectId: string, id: string): Promise<FileRecord | null> {
  const { rows } = await db.query<FileRecord>(`SELECT ${COLUMNS} FROM files WHERE id = $1 AND project_id = $2`, [id, projectId]);
  return rows[0] ?? null;
}

/** For the worker, which acts on behalf of whichever project owns the file. */
export async function findFileById(db: Queryable, id: string): Promise<FileRecord | null> {
  const { rows } = await db.query<FileRecord>(`SELECT ${COLUMNS} FROM files WHERE id = $1`, [id]);
  return rows[0] ?? null;
}

export async function listFiles(db: Queryable, projectId: string, page: PageRequest, purpose?: FilePurpose): Promise<Page<FileRecord>> {
  return selectPage<FileRecord>(db, { table: 'files', columns: COLUMNS, projectId, page, where: { purpose } });
}

/**
 * Removes the file, its pages and graph items, and the nodes no other item supports, and releases its
 * blob; run it in a transaction. Null when there is no such file in the project.
 */
export async function deleteFile(tx: Queryable, projectId: string, id: string): Promise<{ graphItemsRemoved: number; blobKey: string } | null> {
  const { rows } = await tx.query<{ blob_key: string }>('SELECT blob_key FROM files WHERE id = $1 AND project_id = $2 FOR UPDATE', [id, projectId]);
  const file = rows[0];
  if (!file) return null;
  const items = await tx.query<{ node_id: string | null; source_node: string | null; target_node: string | null }>(
    'DELETE FROM graph_items WHERE file_id = $1 RETURNING node_id, source_node, target_node',
    [id],
  );
  const touched = [...new Set(items.rows.flatMap((r) => [r.node_id, r.source_node, r.target_node]).filter((n): n is string => n !== null))];
  if (touched.length > 0) {
    await tx.query(
      `DELETE FROM graph_nodes n WHERE n.id = ANY($1) AND NOT EXISTS (
         SELECT 1 FROM graph_items i WHERE i.node_id = n.id OR i.source_node = n.id OR i.target_node = n.id)`,
      [touched],
    );
  }
  await tx.query('DELETE FROM files WHERE id = $1', [id]);
  await releaseBlob(tx, file.blob_key);
  return { graphItemsRemoved: items.rowCount ?? 0, blobKey: file.blob_key };
}

export interface ExtractionResult {
  pages: string[];
  tables: number;
}

/**
 * Writes the results, flips the status to `processed` and records `file.processed`, in one transaction.
 * Only a file still `processing` moves, so a retried or duplicated completion changes nothing: false then.
 */
export async function completeExtraction(db: Db, fileId: string, result: ExtractionResult): Promise<boolean> {
  return transaction(db, async (tx) => {
    const { rows } = await tx.query<FileRecord>(
      `UPDATE files SET status = 'processed', pages = $2, tables = $3, processed_at = now()
       WHERE id = $1 AND status = 'processing' RETURNING ${COLUMNS}`,
      [fileId, result.pages.length, result.tables],
    );
    const file = rows[0];
    if (!file) return false;
    if (result.pages.length > 0) {
      await tx.query(
        'INSERT INTO file_pages (file_id, page_number, text) SELECT $1, n, t FROM unnest($2::text[]) WITH ORDINALITY AS p(t, n)',
        [fileId, result.pages],
      );
    }
    await recordEvent(tx, file.project_id, 'file.processed', { object: 'file', id: file.id });
    return true;
  });
}

/** Moves a file still `processing` to `failed` with the reason. False when it had already moved. */
export async function failExtraction(db: Queryable, fileId: string, error: { code: FileErrorCode; message: string }): Promise<boolean> {
  const result = await db.query(
    `UPDATE files SET status = 'failed', last_error = $2, processed_at = now() WHERE id = $1 AND status = 'processing'`,
    [fileId, error],
  );
  return (result.rowCount ?? 0) > 0;
}

/** Files still `processing` that were created before `olderThan`: candidates for a missed workflow start. */
export async function filesStillProcessing(db: Queryable, olderThan: Date, limit = 100): Promise<{ id: string }[]> {
  const { rows } = await db.query<{ id: string }>(
    `SELECT id FROM files WHERE status = 'processing' AND created_at < $1 ORDER BY created_at LIMIT $2`,
    [olderThan, limit],
  );
  return rows;
}

export async function pagesOf(db: Queryable, fileId: string): Promise<string[]> {
  const { rows } = await db.query<{ text: string }>('SELECT text FROM file_pages WHERE file_id = $1 ORDER BY page_number', [fileId]);
  return rows.map((r) => r.text);
}

/** The start of a file's text, at most `maxChars` characters, read page by page until the budget is spent. */
export async function textPreviewOf(db: Queryable, fileId: string, maxChars: number): Promise<{ text: string; truncated: boolean }> {
  const { rows } = await db.query<{ text: string }>(
    'SELECT left(text, $2) AS text FROM file_pages WHERE file_id = $1 ORDER BY page_number LIMIT 200',
    [fileId, maxChars + 1],
  );
  let text = '';
  for (const row of rows) {
    text += (text ? '\n\n' : '') + row.text;
    if (text.length > maxChars) return { text: text.slice(0, maxChars), truncated: true };
  }
  return { text, truncated: rows.length === 200 };
}

/** The run's attachments as the run may see them: only files of its project. */
export async function attachmentsOf(db: Queryable, projectId: string, fileIds: string[]): Promise<FileRecord[]> {
  if (fileIds.length === 0) return [];
  const { rows } = await db.query<FileRecord>(`SELECT ${COLUMNS} FROM files WHERE project_id = $1 AND id = ANY($2)`, [projectId, fileIds]);
  return fileIds.map((id) => rows.find((r) => r.id === id)).filter((r): r is FileRecord => r !== undefined);
}
