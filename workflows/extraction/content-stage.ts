/**
 * The content stage: the file's engine turns its bytes into pages (or transcript segments) and tables, which
 * are stored as they come so that a stage that dies part-way resumes where it stopped. A long PDF or recording is
 * read in slices of time, each a task of its own, so that it holds an extraction slot (and a recording the speech
 * sidecar) no longer than about a slice at a time.
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
import { storePages, storeSegments, storeTables, transcribedSoFar } from '../../records/file-content.js';
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
  /**
   * When the slice's time is up (milliseconds since the epoch): a PDF stops after the page it is on, a recording
   * after the window it is hearing, and answers `more`, the rest left for the next slice. None when absent.
   */
  until?: number;
}

/** Stores the file's content: all of it (`done`), or, once the slice's time is up, part of it (`more`). */
export async function extractInto(file: FileRecord, deps: StageDeps): Promise<'done' | 'more'> {
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
      return 'done';
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
      return 'done';
    }
    case 'audio/wav':
    case 'audio/mp4':
      return withLocalCopy(file, deps, (path) => transcribeInto(file, path, deps));
    case 'application/pdf':
      return withLocalCopy(file, deps, (path) => extractPdfInto(file, path, deps));
    default:
      throw new ExtractionError('unsupported_file', `No extractor handles ${file.mime_type as string}.`);
  }
}

/**
 * A recording, heard a window at a time from the end of the last segment stored, each window's segments stored as
 * it is heard, until the audio ends or the slice's time is up. A window is what two cores transcribe in a few
 * slices' time at most: ten times the slice, from 30 seconds to 5 minutes of audio.
 */
async function transcribeInto(file: FileRecord, path: string, { db, context, until = Infinity }: StageDeps): Promise<'done' | 'more'> {
  const seconds = Number.isFinite(until) ? Math.min(300, Math.max(30, Math.round((until - Date.now()) / 100))) : undefined;
  let { segments: stored, endMs: fromMs } = await transcribedSoFar(db, file.id);
  if (stored > 0) context.log.info('resuming the recording after the segments already stored', { fileId: file.id, segmentsStored: stored });
  for (;;) {
    const { segments, next_ms: next } = await transcribeAudio(path, seconds ? { fromMs, seconds } : undefined);
    await storeSegments(db, file.id, segments, stored + 1);
    stored += segments.length;
    if (next === null || next === undefined) return 'done';
    fromMs = next;
    context.heartbeat({ transcribedMs: fromMs });
    // A slice ends after a window with segments: the next one resumes after the last stored.
    if (segments.length > 0 && Date.now() >= until) return 'more';
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
