/** Opening a PDF with pdfjs: where its bytes come from, the options every caller shares, and what a failure means. */
import { open, type FileHandle } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { getDocument, PDFDataRangeTransport, VerbosityLevel } from './pdfjs.js';
import type { PDFDocumentProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { ExtractionError } from '../errors.js';
import { MAX_SOURCE_PIXELS } from '../ocr-image.js';

/** A file path, or the PDF's bytes (never modified: pdfjs gets a copy of them, the only one the engine holds). */
export type PdfSource = string | Uint8Array;

const packageRoot = dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
// pdfjs reads these with fs when the trailing slash is there; nothing is fetched over the network.
const standardFontDataUrl = join(packageRoot, 'standard_fonts') + '/';
const cMapUrl = join(packageRoot, 'cmaps') + '/';
const wasmUrl = join(packageRoot, 'wasm') + '/';

/**
 * The bytes pdfjs will own. pdfjs transfers the array's buffer to its (in-thread) worker, detaching it, so it
 * must be an array nobody else holds: a file is read straight into one, a caller's array is copied once.
 */
export async function ownedBytes(source: PdfSource): Promise<Uint8Array> {
  if (typeof source !== 'string') return new Uint8Array(source);
  const file = await open(source, 'r');
  try {
    const { size } = await file.stat();
    const bytes = new Uint8Array(size);
    let offset = 0;
    while (offset < size) {
      const { bytesRead } = await file.read(bytes, offset, size - offset, offset);
      if (bytesRead === 0) break;
      offset += bytesRead;
    }
    return offset === size ? bytes : bytes.subarray(0, offset).slice();
  } finally {
    await file.close();
  }
}

/**
 * Opens the document. A file is read by ranges, as pdfjs asks for them (the parts of the pages read, not the
 * whole file), so each thread holds only what its pages need; bytes given in memory are copied once.
 */
export async function openPdf(source: PdfSource): Promise<PDFDocumentProxy> {
  const file = typeof source === 'string' ? await open(source, 'r') : null;
  const range = file ? new FileRangeTransport(file, (await file.stat()).size) : null;
  const task = getDocument({
    ...(range
      ? { range, length: range.length, disableAutoFetch: true, disableStream: true, rangeChunkSize: RANGE_CHUNK_BYTES }
      : { data: await ownedBytes(source) }),
    standardFontDataUrl,
    cMapUrl,
    cMapPacked: true,
    wasmUrl,
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    stopAtErrors: false,
    // An image is drawn only up to the size OCR reads (a page scanned at 600 dpi has about 35 megapixels): a
    // kilobyte of a flate stream can declare gigapixels, which pdfjs would decode outside any thread's heap.
    maxImageSize: MAX_SOURCE_PIXELS,
    verbosity: VerbosityLevel.ERRORS,
  });
  try {
    const doc = await task.promise;
    if (file) {
      const destroy = doc.destroy.bind(doc);
      doc.destroy = async () => {
        await destroy();
        await file.close();
      };
    }
    return doc;
  } catch (err) {
    await task.destroy();
    await file?.close();
    throw extractionErrorOf(err);
  }
}

/** pdfjs asks for file ranges in chunks of this size. */
const RANGE_CHUNK_BYTES = 256 * 1024;

/** Serves pdfjs the ranges of a file it asks for, read from disk when asked. */
class FileRangeTransport extends PDFDataRangeTransport {
  constructor(
    private readonly file: FileHandle,
    length: number,
  ) {
    super(length, new Uint8Array(0));
  }

  override requestDataRange(begin: number, end: number): void {
    const chunk = new Uint8Array(end - begin);
    this.file.read(chunk, 0, chunk.length, begin).then(
      ({ bytesRead }) => this.onDataRange(begin, bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead)),
      // pdfjs then waits for a range that never comes; an unreadable file fails the stage at its timeout.
      () => this.onDataRange(begin, new Uint8Array(0)),
    );
  }
}

/** What a pdfjs failure to open a document means for the file: it needs a password, or it is not a readable PDF. */
export function extractionErrorOf(err: unknown): Error {
  if (err instanceof ExtractionError) return err;
  const { name, message } = err as Error;
  if (name === 'PasswordException') return new ExtractionError('encrypted_file', 'The PDF is encrypted and needs a password.');
  return new ExtractionError('invalid_file', `The PDF could not be read: ${message}`);
}
