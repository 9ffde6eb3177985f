/** Plain text: UTF-8, one page per form feed (U+000C), at least one page. */
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { textTablesInThread } from './analysis-thread.js';
import type { Table } from './content.js';
import { ExtractionError, type Progress } from './errors.js';

export interface TextExtraction {
  pages: string[];
  /** The CSV, TSV and Markdown tables written in the pages (found in a pool thread: seconds for 100 MB). */
  tables: Table[];
}

export async function extractText(body: Readable, progress: Progress): Promise<TextExtraction> {
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
  return { pages, tables: await textTablesInThread(pages) };
}
