/**
 * Plain text: UTF-8, one page per form feed (U+000C), at least one page, and no page longer than
 * MAX_TEXT_PAGE_CHARACTERS: a longer one goes on to the next.
 */
import type { Readable } from 'node:stream';
import { TextDecoder } from 'node:util';
import { textTablesInThread } from './analysis-thread.js';
import { MAX_FILE_PAGES, type Table } from './content.js';
import { ExtractionError, type Progress } from './errors.js';

export interface TextExtraction {
  pages: string[];
  /** The CSV, TSV and Markdown tables written in the pages, found in a pool thread. */
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
      if (pages.length + parts.length > MAX_FILE_PAGES) throw tooManyPages();
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
  const bounded = pages.flatMap((page) => pagesOf(page));
  if (bounded.length > MAX_FILE_PAGES) throw tooManyPages();
  return { pages: bounded, tables: await textTablesInThread(bounded) };
}

const tooManyPages = () =>
  new ExtractionError(
    'invalid_file',
    `The text has more than ${MAX_FILE_PAGES.toLocaleString('en')} pages (form feeds, or a million characters each); a file may have at most that many.`,
  );

/**
 * The most characters a text file's page holds. A page is what a reader is served at once (`GET
 * /v1/files/:id/content`), and a 100 MB file without form feeds was one page, which no server can hold in
 * memory for every reader who asks.
 */
export const MAX_TEXT_PAGE_CHARACTERS = 1_000_000;

/**
 * A form feed's page as pages of at most `max` characters, each cut after its last blank line (between
 * paragraphs, where no table is cut), or else its last line break, or else at the limit, never between the two
 * halves of a surrogate pair.
 */
export function pagesOf(text: string, max = MAX_TEXT_PAGE_CHARACTERS): string[] {
  const pages: string[] = [];
  let start = 0;
  while (text.length - start > max) {
    // Searched within the page only: from its end back to the text's start, each search was the whole file.
    const page = text.slice(start, start + max);
    const after = (found: number, length: number) => (found < 0 ? 0 : found + length);
    const blank = Math.max(after(page.lastIndexOf('\n\n'), 2), after(page.lastIndexOf('\n\r\n'), 3));
    let cut = blank || after(page.lastIndexOf('\n'), 1) || max;
    if (cut === max && /[\ud800-\udbff]/.test(page[cut - 1]!)) cut--;
    pages.push(page.slice(0, cut));
    start += cut;
  }
  pages.push(text.slice(start));
  return pages;
}
