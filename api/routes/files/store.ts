/**
 * What makes a received file a file of the project, wherever it came from (an upload, an A2A message's file
 * part): its record, committed with its blob kept, and then its extraction.
 */
import type { ApiContext, ApiDeps } from '../../context.js';
import type { Queryable } from '../../../records/db.js';
import {
  DEFAULT_FILE_STORAGE_GIB_PER_PROJECT,
  fileBytesHeld,
  GIB,
  insertFile,
  recordExtractionStarted,
  type FileRecord,
} from '../../../records/files.js';
import { ConflictError, type ApiError } from '../../errors.js';
import { keepBlob } from '../../../records/blob-leases.js';
import { startExtraction } from '../../../workflows/extraction/client.js';
import type { ReceivedUpload } from './upload.js';

/** What a project's files may hold in all, in bytes, as the deployment sets it. */
export const fileStorageOf = (deps: Pick<ApiDeps, 'fileStorageBytesPerProject'>): number =>
  deps.fileStorageBytesPerProject ?? DEFAULT_FILE_STORAGE_GIB_PER_PROJECT * GIB;

/** A file that would take its project's files past what they may hold (of a size not yet read: null): refused, naming both. */
export function storageFullError(heldBytes: number, fileBytes: number | null, limitBytes: number): ApiError {
  const held = `The project's files hold ${sizeOf(heldBytes)} of the ${sizeOf(limitBytes)} they may hold`;
  const file = fileBytes === null ? '' : `, and this file (${sizeOf(fileBytes)}) does not fit`;
  return ConflictError('file_storage_full', `${held}${file}: delete files first.`, 'file');
}

const sizeOf = (bytes: number) =>
  bytes >= GIB ? `${(Math.floor((bytes / GIB) * 100) / 100).toLocaleString('en-US')} GiB` : `${bytes.toLocaleString('en-US')} bytes`;

/**
 * In the transaction that commits the file: the record, and the blob's lease dropped (the blob is kept). A file
 * the project has no room for answers 409 `file_storage_full`, and the caller removes its blob.
 */
export async function recordFile(
  tx: Queryable,
  file: ReceivedUpload & { id: string; projectId: string; blobKey: string },
  limitBytes: number,
): Promise<FileRecord> {
  const held = await fileBytesHeld(tx, file.projectId, { lock: true });
  if (held + file.bytes > limitBytes) throw storageFullError(held, file.bytes, limitBytes);
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
