import type { FileErrorCode } from '../../../records/files.js';

/** A failure a retry cannot fix: the file is marked `failed` with this code. */
export class ExtractionError extends Error {
  constructor(
    readonly code: FileErrorCode,
    message: string,
  ) {
    super(message);
  }
}

/** Called as bytes are read, so a long extraction keeps proving it is alive. */
export type Progress = (bytesRead: number) => void;
