/**
 * The content stage: the file's engine turns its bytes into pages (or transcript segments) and tables, which
 * are stored as they come so that a stage that dies part-way resumes where it stopped.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addAbortSignal, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Context } from '@temporalio/activity';
import { transaction, type Db } from '../../records/db.js';
import type { BlobStore } from '../../records/blobs/store.js';
import type { FileRecord } from '../../records/files.js';
import { storePages, storeSegments, storeTables } from '../../records/file-content.js';
import { storeVisionImage } from '../../records/vision-images.js';
import { ExtractionError } from './engines/errors.js';
import { extractText } from './engines/text.js';
import { imagePageText, readImage } from './engines/image.js';
import { visionImageInThread } from './engines/analysis-thread.js';
import { transcribeAudio } from './engines/speech/transcriber.js';
import { extractPdfInto } from './pdf-stage.js';

export interface StageDeps {
  db: Db;
  blobs: BlobStore;
  context: Context;
}

export async function extractInto(file: FileRecord, deps: StageDeps): Promise<void> {
  const { db, context } = deps;
  const progress = (bytesRead: number) => context.heartbeat({ bytesRead });
  switch (file.mime_type) {
    case 'text/plain': {
      const { pages, tables } = await extractText(await read(file, deps), progress);
      const parts = pages.map((text, i) => ({ page: i + 1, text, source: 'plain_text' as const }));
      await transaction(db, async (tx) => {
        await storeTables(tx, file.id, tables);
        await storePages(tx, file.id, parts);
      });
      return;
    }
    case 'image/png':
    case 'image/jpeg': {
      const image = await readImage(await read(file, deps), progress);
      const page = await imagePageText(image);
      // What vision models are sent instead of the upload: runs read only this copy.
      const seen = await visionImageInThread(image);
      await transaction(db, async (tx) => {
        await storeVisionImage(tx, file.id, seen);
        await storePages(tx, file.id, [page]);
      });
      return;
    }
    case 'audio/wav':
    case 'audio/mp4':
      await withLocalCopy(file, deps, async (path) => {
        const { segments } = await transcribeAudio(path);
        await storeSegments(db, file.id, segments);
      });
      return;
    case 'application/pdf':
      await withLocalCopy(file, deps, (path) => extractPdfInto(file, path, deps));
      return;
    default:
      throw new ExtractionError('unsupported_file', `No extractor handles ${file.mime_type as string}.`);
  }
}

/**
 * The blob as a stream. Cancellation (the file was deleted) ends the read with an AbortError, which the worker
 * reports as cancelled, not as a failure to retry; one that came while the blob was being opened ends it at once.
 */
async function read(file: FileRecord, { blobs, context }: StageDeps): Promise<Readable> {
  return addAbortSignal(context.cancellationSignal, await blobs.get(file.blob_key));
}

/** Engines that seek (PDF) or hand the file to another process (speech) read a local copy, removed after. */
async function withLocalCopy<T>(file: FileRecord, deps: StageDeps, work: (path: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'agentplane-extract-'));
  try {
    const path = join(dir, 'blob');
    await pipeline(await read(file, deps), createWriteStream(path));
    return await work(path);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
