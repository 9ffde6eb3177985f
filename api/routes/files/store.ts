/**
 * What makes a received file a file of the project, wherever it came from (an upload, an A2A message's file
 * part): its record, committed with its blob kept, and then its extraction.
 */
import type { ApiContext, ApiDeps } from '../../context.js';
import type { Queryable } from '../../../records/db.js';
import { insertFile, recordExtractionStarted, type FileRecord } from '../../../records/files.js';
import { keepBlob } from '../../../records/blob-leases.js';
import { startExtraction } from '../../../workflows/extraction/client.js';
import type { ReceivedUpload } from './upload.js';

/** In the transaction that commits the file: the record, and the blob's lease dropped (the blob is kept). */
export async function recordFile(
  tx: Queryable,
  file: ReceivedUpload & { id: string; projectId: string; blobKey: string },
): Promise<FileRecord> {
  const record = await insertFile(tx, file);
  await keepBlob(tx, file.blobKey);
  return record;
}

/**
 * Once the file is committed. With Temporal unreachable, it waits no longer than the connection's deadline for a
 * call (workflows/call-deadline.ts): the maintenance schedule starts a missed extraction, and an extraction whose
 * file is gone ends without effect.
 */
export async function startFileExtraction(ctx: ApiContext, deps: ApiDeps, fileId: string, projectId: string): Promise<void> {
  await startExtraction(deps.temporal, fileId, projectId)
    .then(() => recordExtractionStarted(deps.db, fileId))
    .catch((err) =>
      ctx.state.log.warn({ err, file_id: fileId }, 'extraction start failed or was not recorded; the maintenance schedule will start it'),
    );
}
