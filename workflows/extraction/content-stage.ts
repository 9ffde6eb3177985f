/**
 * The content stage: the file's engine turns its bytes into pages (or transcript segments) and tables, which
 * are stored as they come so that a stage that dies part-way resumes where it stopped.
 */
import { addAbortSignal, type Readable } from 'node:stream';
import type { Context } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import type { BlobStore } from '../../records/blobs/store.js';
import type { FileRecord } from '../../records/files.js';
import { storePages } from '../../records/file-content.js';
import { extractContent } from './engines/extractors.js';

export interface StageDeps {
  db: Db;
  blobs: BlobStore;
  context: Context;
}

export async function extractInto(file: FileRecord, { db, blobs, context }: StageDeps): Promise<void> {
  // Cancellation (the file was deleted) ends the read with an AbortError, which the worker reports as
  // cancelled, not as a failure to retry; one that came while the blob was being opened ends it at once.
  const body: Readable = addAbortSignal(context.cancellationSignal, await blobs.get(file.blob_key));
  const result = await extractContent(file.mime_type, body, (bytesRead) => context.heartbeat({ bytesRead }));
  const source = file.mime_type === 'text/plain' ? 'plain_text' : file.mime_type.startsWith('image/') ? 'ocr' : 'text_layer';
  const pages = result.pages.map((text, i) => ({ page: i + 1, text, source }) as const);
  await storePages(db, file.id, pages);
}
