/**
 * The PDF engine behind `extractContent`'s stream interface: the blob is spooled to a temporary file, so its
 * bytes are held once (by pdfjs) rather than gathered from chunks and copied.
 */
import { createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ExtractionResult } from '../../../../records/files.js';
import type { Progress } from '../errors.js';
import { extractPdf } from './extract.js';

export async function extractPdfStream(body: Readable, progress: Progress): Promise<ExtractionResult> {
  const dir = await mkdtemp(join(tmpdir(), 'agentplane-pdf-'));
  try {
    const path = join(dir, 'file.pdf');
    let bytesRead = 0;
    body.on('data', (chunk: Buffer) => progress((bytesRead += chunk.length)));
    await pipeline(body, createWriteStream(path));
    const result = await extractPdf(path);
    // Pages needing OCR are here with empty text; the OCR engine fills them in.
    return { pages: result.pages.map((page) => page.text), tables: result.tables.length };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
