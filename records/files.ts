/** File records, their derived pages, and the transitions of extraction. */
import type { components } from '../api/generated/openapi.js';
import { newId } from './ids.js';
import { statement, transaction, type Db, type Queryable } from './db.js';
import { selectPage, type Page, type PageRequest } from './pagination.js';
import { releaseBlob } from './blob-leases.js';
import { recordEvent } from './events.js';
import { currentTraceContext, type StoredTraceContext } from '../tracing/context.js';
import { contentCounts, discardContent } from './file-content.js';
import { removeGraphItemsOf, writeGraphItems, type NewGraphItem } from './graph.js';
import { discardGraphDrafts } from './graph-drafts.js';

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
  /** The upload's trace context; null when tracing was off. */
  trace_context: StoredTraceContext | null;
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
  'id, project_id, filename, bytes, purpose, status, mime_type, blob_key, metadata, pages, tables, graph_items, last_error, created_at, processed_at, trace_context';

export function newFileId(): string {
  return newId('file');
}

/** Whether the project (an SQL expression) has context files to search: `search_context` is offered to its runs when it does. */
export const HAS_CONTEXT_FILES = (projectId: string) =>
  `EXISTS (SELECT 1 FROM files f WHERE f.project_id = ${projectId} AND f.purpose = 'context' AND f.status = 'processed')`;

export const GIB = 2 ** 30;

/** What a project's files may hold in all, unless the operator says otherwise (AGENTPLANE_FILE_STORAGE_GIB_PER_PROJECT). */
export const DEFAULT_FILE_STORAGE_GIB_PER_PROJECT = 100;

/**
 * The bytes the project's files hold. With `lock`, counted under the project's storage lock, so that two files
 * committed at once count each other.
 */
export async function fileBytesHeld(tx: Queryable, projectId: string, options: { lock?: boolean } = {}): Promise<number> {
  if (options.lock) await tx.query(`SELECT pg_advisory_xact_lock(hashtext('file-bytes:' || $1))`, [projectId]);
  const { rows } = await tx.query<{ held: string }>('SELECT coalesce(sum(bytes), 0)::text AS held FROM files WHERE project_id = $1', [
    projectId,
  ]);
  return Number(rows[0]!.held);
}

export async function insertFile(db: Queryable, file: NewFile): Promise<FileRecord> {
  const { rows } = await db.query<FileRecord>(
    `INSERT INTO files (id, project_id, filename, bytes, purpose, status, mime_type, blob_key, metadata, trace_context)
     VALUES ($1, $2, $3, $4, $5, 'processing', $6, $7, $8, $9) RETURNING ${COLUMNS}`,
    // The upload's trace: the extraction's stages are spans of it.
    [file.id, file.projectId, file.filename, file.bytes, file.purpose, file.mimeType, file.blobKey, file.metadata, currentTraceContext()],
  );
  return rows[0]!;
}

const FIND_FILE = statement('find_file', `SELECT ${COLUMNS} FROM files WHERE id = $1 AND project_id = $2`);

export async function findFile(db: Queryable, projectId: string, id: string): Promise<FileRecord | null> {
  const { rows } = await db.query<FileRecord>(FIND_FILE, [id, projectId]);
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
 * Removes the file, its pages, tables and graph items, and the nodes no other item supports, and releases its
 * blob, and records `file.deleted`; run it in a transaction. Null when there is no such file in the project.
 */
export async function deleteFile(
  tx: Queryable,
  projectId: string,
  id: string,
): Promise<{ graphItemsRemoved: number; blobKey: string } | null> {
  const { rows } = await tx.query<{ blob_key: string }>('SELECT blob_key FROM files WHERE id = $1 AND project_id = $2 FOR UPDATE', [
    id,
    projectId,
  ]);
  const file = rows[0];
  if (!file) return null;
  const graphItemsRemoved = await removeGraphItemsOf(tx, id);
  await tx.query('DELETE FROM files WHERE id = $1', [id]);
  await releaseBlob(tx, file.blob_key);
  await recordEvent(tx, projectId, 'file.deleted', { object: 'file', id });
  return { graphItemsRemoved, blobKey: file.blob_key };
}

/**
 * Counts what extraction stored, writes the graph items, flips the status to `processed` and records
 * `file.processed`, in one transaction. Only a file still `processing` moves, so a retried or duplicated
 * completion changes nothing: false then.
 */
export async function completeExtraction(db: Db, fileId: string, graphItems: NewGraphItem[]): Promise<boolean> {
  return transaction(db, async (tx) => {
    const { rows } = await tx.query<{ project_id: string; purpose: FilePurpose }>(
      `SELECT project_id, purpose FROM files WHERE id = $1 AND status = 'processing' FOR UPDATE`,
      [fileId],
    );
    const file = rows[0];
    if (!file) return false;
    const { pages, tables } = await contentCounts(tx, fileId);
    // An attachment is extracted for runs only and adds nothing to the graph.
    const written = file.purpose === 'context' ? await writeGraphItems(tx, file.project_id, fileId, graphItems) : 0;
    await tx.query(`UPDATE files SET status = 'processed', pages = $2, tables = $3, graph_items = $4, processed_at = now() WHERE id = $1`, [
      fileId,
      pages,
      tables,
      written,
    ]);
    await discardGraphDrafts(tx, fileId);
    await recordEvent(tx, file.project_id, 'file.processed', { object: 'file', id: fileId });
    return true;
  });
}

/**
 * Moves a file still `processing` to `failed` with the reason, drops what extraction had stored and records
 * `file.failed`. False when it had already moved.
 */
export async function failExtraction(db: Db, fileId: string, error: { code: FileErrorCode; message: string }): Promise<boolean> {
  return transaction(db, async (tx) => {
    const { rows } = await tx.query<{ project_id: string }>(
      `UPDATE files SET status = 'failed', last_error = $2, processed_at = now() WHERE id = $1 AND status = 'processing' RETURNING project_id`,
      [fileId, error],
    );
    const file = rows[0];
    if (!file) return false;
    await discardContent(tx, fileId);
    await recordEvent(tx, file.project_id, 'file.failed', { object: 'file', id: fileId });
    return true;
  });
}

/**
 * Files still `processing`, created before `olderThan`, whose extraction was never known to start: candidates
 * for a missed workflow start. Files in a long extraction are not. Taken in turns across projects, as runs are
 * (`staleQueuedRuns`).
 */
export async function filesStillProcessing(db: Queryable, olderThan: Date, limit = 100): Promise<{ id: string; projectId: string }[]> {
  const { rows } = await db.query<{ id: string; projectId: string }>(
    `SELECT id, project_id AS "projectId" FROM (
       SELECT id, project_id, created_at, row_number() OVER (PARTITION BY project_id ORDER BY created_at, id) AS turn
       FROM files WHERE status = 'processing' AND workflow_started_at IS NULL AND created_at < $1
     ) candidates ORDER BY turn, created_at LIMIT $2`,
    [olderThan, limit],
  );
  return rows;
}

/** Every file still processing, oldest first. */
export async function filesInFlight(db: Queryable): Promise<{ id: string; projectId: string }[]> {
  const { rows } = await db.query<{ id: string; projectId: string }>(
    `SELECT id, project_id AS "projectId" FROM files WHERE status = 'processing' ORDER BY created_at, id`,
  );
  return rows;
}

/** The file's extraction workflow is known to exist: maintenance need not start it again. */
export async function recordExtractionStarted(db: Queryable, fileId: string): Promise<void> {
  await db.query('UPDATE files SET workflow_started_at = now() WHERE id = $1 AND workflow_started_at IS NULL', [fileId]);
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
