/** PNG and JPEG: one page, its text read by OCR. */
import type { Readable } from 'node:stream';
import type { PageText } from './content.js';
import { ExtractionError, type Progress } from './errors.js';
import { ocr } from './ocr.js';

/** The upload limit: a stored blob larger than this is not one we accepted. */
const MAX_IMAGE_BYTES = 104_857_600;

/** The image read from `body`, as its one page of OCR text. */
export async function imagePage(body: Readable, progress: Progress): Promise<PageText> {
  return imagePageText(await readImage(body, progress));
}

/** The image's one page, with OCR's confidence. */
export async function imagePageText(image: Buffer): Promise<PageText> {
  const { text, confidence } = await ocr.recognizeImage(image);
  return { page: 1, text, source: 'ocr', confidence };
}

/** The image's bytes, refused past the upload limit. */
export async function readImage(body: Readable, progress: Progress): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let bytesRead = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    bytesRead += chunk.length;
    if (bytesRead > MAX_IMAGE_BYTES) {
      body.destroy();
      throw new ExtractionError('invalid_file', `The image is larger than the ${MAX_IMAGE_BYTES / 1024 / 1024} MB upload limit.`);
    }
    chunks.push(chunk);
    progress(bytesRead);
  }
  return Buffer.concat(chunks, bytesRead);
}
