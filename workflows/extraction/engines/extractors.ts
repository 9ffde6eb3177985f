/**
 * Extraction engines, one per content type. Each reads the blob as a stream and returns the page texts
 * and a table count. Failures a retry cannot fix are ExtractionErrors; anything else is retried.
 */
import type { Readable } from 'node:stream';
import type { ExtractionResult } from '../../../records/files.js';
import { ExtractionError, type Progress } from './errors.js';
import { extractPdfStream } from './pdf/from-stream.js';
import { extractText } from './text.js';

type Extractor = (body: Readable, progress: Progress) => Promise<ExtractionResult>;

const extractors: Record<string, Extractor> = {
  'text/plain': extractText,
  'application/pdf': extractPdfStream,
  // Images are one page; OCR fills in its text.
  'image/png': async (body) => drain(body).then(() => ({ pages: [''], tables: 0 })),
  'image/jpeg': async (body) => drain(body).then(() => ({ pages: [''], tables: 0 })),
  // Audio has no pages; transcription adds time-spanned text.
  'audio/wav': async (body) => drain(body).then(() => ({ pages: [], tables: 0 })),
  'audio/mp4': async (body) => drain(body).then(() => ({ pages: [], tables: 0 })),
};

export async function extractContent(mimeType: string, body: Readable, progress: Progress): Promise<ExtractionResult> {
  const extractor = extractors[mimeType];
  if (!extractor) {
    body.destroy();
    throw new ExtractionError('unsupported_file', `No extractor handles ${mimeType}.`);
  }
  return extractor(body, progress);
}

async function drain(body: Readable): Promise<void> {
  for await (const _ of body);
}
