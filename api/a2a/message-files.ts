/**
 * A message's files as the run's attachments, made as an upload makes a file (purpose `attachment`): each is
 * inspected and stored before the run is admitted, recorded (with its `file.create` audit entry) in the
 * transaction that makes the run, and extracted before the run starts, which waits for it. A message the
 * platform refuses, or one sent again, leaves no file behind.
 */
import type { ApiContext, ApiDeps } from '../context.js';
import { callerOf } from '../context.js';
import { auditAlso } from '../audit.js';
import type { Queryable } from '../../records/db.js';
import { newFileId } from '../../records/files.js';
import { discardBlob, receiveBytes, type ReceivedUpload } from '../routes/files/upload.js';
import { fileStorageOf, recordFile, startFileExtraction } from '../routes/files/store.js';
import type { MessageFile } from './message-input.js';

interface StagedFile extends ReceivedUpload {
  id: string;
  blobKey: string;
}

export class MessageFiles {
  private constructor(
    private readonly ctx: ApiContext,
    private readonly deps: ApiDeps,
    private readonly staged: StagedFile[],
  ) {}

  /** Inspects and stores each file; the first one refused (its type, its size) refuses them all. */
  static async stage(ctx: ApiContext, deps: ApiDeps, files: MessageFile[]): Promise<MessageFiles> {
    const { projectId } = callerOf(ctx);
    const staged = new MessageFiles(ctx, deps, []);
    try {
      for (const file of files) {
        const id = newFileId();
        const blobKey = `files/${projectId}/${id}`;
        const received = await receiveBytes(deps, blobKey, {
          data: file.data,
          filename: file.filename,
          declared: file.mediaType,
          purpose: 'attachment',
        });
        staged.staged.push({ ...received, id, blobKey });
      }
    } catch (err) {
      await staged.discard();
      throw err;
    }
    return staged;
  }

  /** What the files are, for the message's identity: the same message sent again carries the same bytes. */
  identity(): [string, string, string][] {
    return this.staged.map((file) => [file.sha256, file.filename, file.mimeType]);
  }

  /** In the run's transaction: the file records and their audit entries; their ids, to attach. */
  async record(tx: Queryable): Promise<string[]> {
    const { projectId } = callerOf(this.ctx);
    for (const file of this.staged) {
      await recordFile(tx, { ...file, projectId }, fileStorageOf(this.deps));
      await auditAlso(tx, this.ctx, { action: 'file.create', targetType: 'file', targetId: file.id });
    }
    return this.staged.map((file) => file.id);
  }

  async extract(): Promise<void> {
    const { projectId } = callerOf(this.ctx);
    for (const file of this.staged) await startFileExtraction(this.ctx, this.deps, file.id, projectId);
  }

  /** Removes the stored bytes when no file was recorded: the run was refused, or the message was one sent before. */
  async discard(): Promise<void> {
    for (const file of this.staged) await discardBlob(this.deps, file.blobKey);
  }
}
