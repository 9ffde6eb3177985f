/** Extraction's I/O: read a file's blob, run its engine, commit the outcome. */
import { addAbortSignal } from 'node:stream';
import { Context, ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../../records/db.js';
import type { BlobStore } from '../../records/blobs/store.js';
import { BlobNotFoundError } from '../../records/blobs/store.js';
import { completeExtraction, failExtraction, findFileById } from '../../records/files.js';
import { extractContent } from './engines/extractors.js';
import { ExtractionError } from './engines/errors.js';

export type ExtractionOutcome = 'processed' | 'failed' | 'skipped';

export const createExtractionActivities = ({ db, blobs }: { db: Db; blobs: BlobStore }) => ({
  /**
   * Reads the file's blob, extracts it and commits the result. Safe to run again: only a file still
   * `processing` moves, so a retry after a crash records `file.processed` once.
   */
  async extractFile({ fileId }: { fileId: string }): Promise<ExtractionOutcome> {
    const file = await findFileById(db, fileId);
    if (!file || file.status !== 'processing') return 'skipped';

    const context = Context.current();
    const beat = setInterval(() => context.heartbeat(), 1000);
    try {
      // Cancellation (the file was deleted) ends the read with an AbortError, which the worker reports as
      // cancelled, not as a failure to retry; one that came while the blob was being opened ends it at once.
      const body = addAbortSignal(context.cancellationSignal, await blobs.get(file.blob_key));
      const result = await extractContent(file.mime_type, body, (bytesRead) => context.heartbeat({ bytesRead }));
      return (await completeExtraction(db, fileId, result)) ? 'processed' : 'skipped';
    } catch (err) {
      if (err instanceof ExtractionError) {
        await failExtraction(db, fileId, { code: err.code, message: err.message });
        return 'failed';
      }
      // Deleted while we worked: nothing left to do.
      if (err instanceof BlobNotFoundError && !(await findFileById(db, fileId))) return 'skipped';
      if (err instanceof BlobNotFoundError) {
        throw ApplicationFailure.nonRetryable(`The file's bytes are missing: ${err.message}`, 'BlobMissing');
      }
      throw err;
    } finally {
      clearInterval(beat);
    }
  },

  /** The last word when extraction could not finish: the file must never stay `processing`. */
  async markFileFailed({ fileId, message }: { fileId: string; message: string }): Promise<void> {
    await failExtraction(db, fileId, { code: 'extraction_failed', message });
  },
});

export type ExtractionActivities = ReturnType<typeof createExtractionActivities>;
