/** Plain text: UTF-8, one page per form feed (U+000C), at least one page. */
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import type { ExtractionResult } from '../../../records/files.js';
import type { Table } from './content.js';
import { findDelimitedTables } from './delimited-tables.js';
import { ExtractionError, type Progress } from './errors.js';

export async function extractText(body: Readable, progress: Progress): Promise<ExtractionResult> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const pages: string[] = [];
  let current = '';
  let bytesRead = 0;
  try {
    for await (const chunk of body as AsyncIterable<Buffer>) {
      bytesRead += chunk.length;
      const parts = decoder.decode(chunk, { stream: true }).split('\f');
      current += parts[0]!;
      for (const part of parts.slice(1)) {
        pages.push(current);
        current = part;
      }
      progress(bytesRead);
    }
    current += decoder.decode();
  } catch (err) {
    if (err instanceof TypeError) throw new ExtractionError('invalid_file', 'The text is not valid UTF-8.');
    throw err;
  }
  pages.push(current);
  return { pages, tables: textTables(pages).length };
}

/** The CSV, TSV and Markdown tables written in a text file's pages. */
export function textTables(pages: string[]): Table[] {
  return pages.flatMap((text, i) => findDelimitedTables(text, i + 1));
}
