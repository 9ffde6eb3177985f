/**
 * Reads a multipart upload straight into the blob store. Nothing is held in memory beyond the part
 * being streamed; a rejected upload leaves no blob behind (and, should the process die mid-stream, the
 * lease written first lets the worker remove it later).
 */
import busboy from 'busboy';
import { basename } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ApiContext, ApiDeps } from '../../context.js';
import { ApiError, InvalidRequestError, PayloadTooLargeError, UnsupportedMediaError } from '../../errors.js';
import { ContentInspector, declaredTypeAgrees, MAX_FILE_BYTES } from './content-type.js';
import { parseMetadata } from './metadata.js';
import { dropUnwrittenUpload, removeBlob, stageUpload } from '../../../records/blob-leases.js';
import type { FileMimeType, FilePurpose } from '../../../records/files.js';
import { idleWhile } from '../../fair-admission.js';

export interface ReceivedUpload {
  filename: string;
  bytes: number;
  sha256: string;
  mimeType: FileMimeType;
  purpose: FilePurpose;
  metadata: Record<string, string>;
}

// Room for the multipart envelope around a file of the maximum size.
const ENVELOPE_BYTES = 1024 * 1024;

export async function receiveUpload(ctx: ApiContext, deps: ApiDeps, blobKey: string): Promise<ReceivedUpload> {
  if (!ctx.is('multipart/form-data')) {
    throw UnsupportedMediaError('unsupported_content_type', 'Upload files as multipart/form-data.');
  }
  const declaredLength = Number(ctx.get('content-length') || 0);
  if (declaredLength > MAX_FILE_BYTES + ENVELOPE_BYTES) {
    ctx.set('Connection', 'close');
    throw PayloadTooLargeError(`The file is larger than the ${MAX_FILE_BYTES}-byte limit.`, 'file');
  }

  await stageUpload(deps.db, blobKey);
  const blob = { written: false };
  try {
    // Reading the upload waits on the client and the blob store: it holds no place in the fair queue.
    return await idleWhile(ctx, () => streamParts(ctx, deps, blobKey, blob));
  } catch (err) {
    if (blob.written) await discardBlob(deps, blobKey);
    // Refused before its bytes were stored, as during a blob-store outage: nothing to remove, nothing to sweep.
    else
      await dropUnwrittenUpload(deps.db, blobKey).catch((dropErr) =>
        deps.log.warn({ err: dropErr, blob_key: blobKey }, 'the upload lease stays until it is due'),
      );
    throw err;
  }
}

/**
 * Removes a blob no record owns (a rejected or replayed upload, a deleted file's); what cannot be removed
 * now, the maintenance sweep removes.
 */
export async function discardBlob(deps: ApiDeps, blobKey: string): Promise<void> {
  const removed = await removeBlob(deps.db, deps.blobs, blobKey).catch(() => false);
  if (!removed) deps.log.warn({ blob_key: blobKey }, 'blob removal deferred to the maintenance sweep');
}

/** Sets `blob.written` once the file part is stored under `blobKey`. */
function streamParts(ctx: ApiContext, deps: ApiDeps, blobKey: string, blob: { written: boolean }): Promise<ReceivedUpload> {
  return new Promise((resolve, reject) => {
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: ctx.req.headers,
        // Browsers and HTTP clients send filenames as raw UTF-8; busboy's default would read them as latin1.
        defParamCharset: 'utf8',
        limits: { files: 1, fields: 40, parts: 41, fieldSize: 64 * 1024, fieldNameSize: 200 },
      });
    } catch {
      return reject(InvalidRequestError('invalid_multipart', 'The multipart body is malformed (check the boundary).'));
    }

    const fields: [string, string][] = [];
    let file: { inspector: ContentInspector; filename: string; declared: string; stored: Promise<void> } | null = null;
    let failed = false;
    const fail = (err: unknown) => {
      if (failed) return;
      failed = true;
      ctx.req.unpipe(parser);
      file?.inspector.destroy();
      // Let an in-flight blob write settle before the caller deletes what it wrote.
      (file?.stored ?? Promise.resolve()).catch(() => {}).finally(() => reject(err));
    };

    // busboy reports a part without a name (`name=""` or none at all) with an undefined name.
    const unnamed = () => InvalidRequestError('invalid_multipart', 'Every form part needs a name in its Content-Disposition header.');
    parser.on('field', (name: string | undefined, value, info) => {
      if (!name) return fail(unnamed());
      if (info.valueTruncated) return fail(InvalidRequestError('invalid_parameter', `The \`${name}\` field is too long.`, name));
      if (name === 'file') return fail(InvalidRequestError('invalid_parameter', 'Send `file` as a file part (with a filename).', 'file'));
      fields.push([name, value]);
    });
    parser.on('file', (name: string | undefined, stream, info) => {
      // Parts already buffered are still parsed after a rejection; none of them may start a blob write.
      if (failed) return stream.resume();
      if (!name) {
        stream.resume();
        return fail(unnamed());
      }
      if (name !== 'file') {
        stream.resume();
        return fail(InvalidRequestError('unknown_parameter', `Unknown file part \`${name}\`; the payload goes in \`file\`.`, name));
      }
      const inspector = new ContentInspector();
      stream.on('error', (err) => inspector.destroy(err));
      inspector.on('error', (err) => {
        stream.resume();
        fail(err);
      });
      const stored = deps.blobs.put(blobKey, stream.pipe(inspector));
      stored.then(() => (blob.written = true), fail);
      file = { inspector, filename: info.filename ?? '', declared: info.mimeType, stored };
    });
    parser.on('filesLimit', () => fail(InvalidRequestError('invalid_parameter', 'Upload one file per request.', 'file')));
    parser.on('fieldsLimit', () => fail(InvalidRequestError('invalid_parameter', 'Too many form fields.', null)));
    parser.on('partsLimit', () => fail(InvalidRequestError('invalid_parameter', 'Too many form parts.', null)));
    parser.on('error', () => fail(InvalidRequestError('invalid_multipart', 'The multipart body is malformed.')));
    ctx.req.on('aborted', () =>
      fail(new ApiError(400, 'invalid_request_error', 'upload_aborted', 'The client closed the connection mid-upload.')),
    );
    parser.on('close', () => {
      if (failed) return;
      if (!file) return fail(InvalidRequestError('missing_parameter', 'Missing required parameter `file`.', 'file'));
      const current = file;
      current.stored.then(() => {
        if (failed) return;
        try {
          resolve(finishUpload(current.inspector, current.filename, current.declared, fields));
        } catch (err) {
          fail(err);
        }
      }, fail);
    });
    ctx.req.pipe(parser);
  });
}

/** The type the inspector found in the content, if the declared type agrees with it. */
function detectedType(inspector: ContentInspector, declared: string): FileMimeType {
  const mimeType = inspector.detected;
  if (!mimeType) throw InvalidRequestError('invalid_parameter', 'The file could not be read.', 'file');
  if (!declaredTypeAgrees(declared, mimeType)) {
    throw UnsupportedMediaError('file_type_mismatch', `The part is declared as ${declared} but its content is ${mimeType}.`, 'file');
  }
  return mimeType;
}

function finishUpload(inspector: ContentInspector, filename: string, declared: string, fields: [string, string][]): ReceivedUpload {
  const mimeType = detectedType(inspector, declared);
  let purpose: string | undefined;
  const metadataFields: [string, string][] = [];
  for (const [name, value] of fields) {
    if (name === 'purpose') {
      if (purpose !== undefined) throw InvalidRequestError('invalid_parameter', 'Give `purpose` once.', 'purpose');
      purpose = value;
    } else if (name === 'metadata' || name.startsWith('metadata[')) metadataFields.push([name, value]);
    else throw InvalidRequestError('unknown_parameter', `Unknown parameter \`${name}\`.`, name);
  }
  if (purpose === undefined) throw InvalidRequestError('missing_parameter', 'Missing required parameter `purpose`.', 'purpose');
  if (purpose !== 'context' && purpose !== 'attachment') {
    throw InvalidRequestError('invalid_parameter', '`purpose` must be `context` or `attachment`.', 'purpose');
  }
  return {
    filename: cleanFilename(filename),
    bytes: inspector.bytes,
    sha256: inspector.sha256,
    mimeType,
    purpose,
    metadata: parseMetadata(metadataFields),
  };
}

/**
 * A file given whole rather than streamed (an A2A message's file part): inspected as an upload is (type from the
 * content, checked against the declared one; size bounded), then stored under `blobKey` with an upload's lease,
 * which the transaction that records the file drops. A file refused is never stored.
 */
export async function receiveBytes(
  deps: ApiDeps,
  blobKey: string,
  file: { data: Buffer; filename: string; declared: string; purpose: FilePurpose },
): Promise<ReceivedUpload> {
  const inspector = new ContentInspector();
  await pipeline(Readable.from([file.data]), inspector, new Writable({ write: (_chunk, _encoding, done) => done() }));
  const mimeType = detectedType(inspector, file.declared);
  await stageUpload(deps.db, blobKey);
  try {
    await deps.blobs.put(blobKey, Readable.from([file.data]));
  } catch (err) {
    await dropUnwrittenUpload(deps.db, blobKey).catch((dropErr) =>
      deps.log.warn({ err: dropErr, blob_key: blobKey }, 'the upload lease stays until it is due'),
    );
    throw err;
  }
  const { bytes, sha256 } = inspector;
  return { filename: cleanFilename(file.filename), bytes, sha256, mimeType, purpose: file.purpose, metadata: {} };
}

function cleanFilename(name: string): string {
  const cleaned = basename(name.replaceAll('\\', '/'))
    // Control characters have no place in a stored name.
    // eslint-disable-next-line no-control-regex
    .replace(/[\u0000-\u001f\u007f]/g, '')
    .slice(0, 255);
  return cleaned || 'upload';
}
