/** One pass over a range of an open document's pages: their text, their tables, and which of them need OCR. */
import type { PDFDocumentProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import type { PageText, Table } from '../content.js';
import { alignedTables } from './aligned-tables.js';
import { extractionErrorOf, openPdf, type PdfSource } from './document.js';
import { ruledTables } from './ruled-tables.js';
import { drawingOf } from './rulings.js';
import { linesOf, pageText, wordsOf, type Line } from './words.js';

export interface PdfExtraction {
  /** Pages in the whole document, whatever range was read. */
  pageCount: number;
  /** One per page read, in order; a page needing OCR is here with empty text until OCR replaces it. */
  pages: PageText[];
  tables: Table[];
  /** Pages with no text layer but a painted image: scans, for `renderPage` and an OCR engine. */
  ocrPages: number[];
}

export interface PageRange {
  /** 1-based, inclusive; default the first page. */
  from?: number;
  /** 1-based, inclusive; default the last page. */
  to?: number;
  /**
   * Find tables (default true). Without them a page's operator list is only read when it has no text, to
   * tell a scan from a blank page; the text costs about half as much.
   */
  tables?: boolean;
  /** Called after each page with the number of pages of the range done so far. */
  onProgress?: (pagesDone: number) => void;
}

interface PageResult {
  page: PageText;
  tables: Table[];
  needsOcr: boolean;
}

/** Opens the PDF, reads a range of its pages, and closes it. */
export async function extractPdfPages(source: PdfSource, range: PageRange = {}): Promise<PdfExtraction> {
  const doc = await openPdf(source);
  try {
    return await extractOpenPages(doc, range);
  } finally {
    await doc.destroy();
  }
}

export async function extractOpenPages(doc: PDFDocumentProxy, range: PageRange = {}): Promise<PdfExtraction> {
  const from = Math.max(1, range.from ?? 1);
  const to = Math.min(doc.numPages, range.to ?? doc.numPages);
  const result: PdfExtraction = { pageCount: doc.numPages, pages: [], tables: [], ocrPages: [] };
  for (let n = from; n <= to; n++) {
    const { page, tables, needsOcr } = await extractPage(doc, n, range.tables ?? true);
    result.pages.push(page);
    result.tables.push(...tables);
    if (needsOcr) result.ocrPages.push(n);
    range.onProgress?.(n - from + 1);
  }
  return result;
}

/**
 * Where cells of a table meet on a line, the gap between their texts is wider than a word space, which words.ts
 * measures as one average character (about half an em): a page none of whose lines has a gap of nearly an em
 * holds no ruled table of two or more columns (unless every cell of every row is filled to its rules).
 */
const cellGapEms = 0.9;

function mayHoldRuledTable(lines: Line[]): boolean {
  return lines.some((line) =>
    line.words.some((word, i) => i > 0 && word.x - (line.words[i - 1]!.x + line.words[i - 1]!.width) > line.height * cellGapEms),
  );
}

async function extractPage(doc: PDFDocumentProxy, n: number, findTables: boolean): Promise<PageResult> {
  try {
    const page = await doc.getPage(n);
    try {
      const viewport = page.getViewport({ scale: 1 });
      const words = wordsOf((await page.getTextContent()).items, viewport);
      const lines = linesOf(words);
      const text = { page: n, text: pageText(lines), source: 'text_layer' as const };
      if (!findTables && words.length > 0) return { page: text, tables: [], needsOcr: false };
      // The drawing (the operator list) costs as much as the text again: read it only where a ruled table
      // could be, or to tell a scan from a blank page.
      if (words.length > 0 && !mayHoldRuledTable(lines)) return { page: text, tables: alignedTables(n, words, []), needsOcr: false };
      const drawing = await drawingOf(page, viewport);
      const ruled = ruledTables(n, drawing, words);
      const tables = [...ruled, ...alignedTables(n, words, ruled)];
      return { page: text, tables: findTables ? tables : [], needsOcr: words.length === 0 && drawing.paintsImage };
    } finally {
      page.cleanup();
    }
  } catch (err) {
    throw extractionErrorOf(err);
  }
}
