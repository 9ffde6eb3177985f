/** PDF: page texts from the document itself. */
import type { Readable } from 'node:stream';
import { PDFParse } from 'pdf-parse';
import type { ExtractionResult } from '../../../records/files.js';
import { ExtractionError, type Progress } from './errors.js';

export async function extractPdf(body: Readable, progress: Progress): Promise<ExtractionResult> {
  const chunks: Buffer[] = [];
  let bytesRead = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    bytesRead += chunk.length;
    progress(bytesRead);
  }
  const parser = new PDFParse({ data: new Uint8Array(Buffer.concat(chunks)) });
  try {
    const text = await parser.getText();
    // PostgreSQL text cannot hold NUL, which some PDFs' text layers contain.
    return { pages: text.pages.map((page) => page.text.replaceAll('\u0000', '')), tables: 0 };
  } catch (err) {
    throw new ExtractionError('invalid_file', `The PDF could not be read: ${(err as Error).message}`);
  } finally {
    await parser.destroy();
  }
}
