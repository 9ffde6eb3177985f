/**
 * A PDF's content, read in batches of pages: each batch's pages and tables are committed together, so a
 * stage that dies part-way resumes after the last page it stored and writes every page and table once.
 * Pages without a text layer (scans) are rendered and read by OCR.
 *
 * A long document is read in slices of time: once a slice's time is up the stage stops after the page it is
 * on, and the workflow asks for the rest as a new task, which other projects' files may go before.
 */
import { transaction } from '../../records/db.js';
import type { FileRecord } from '../../records/files.js';
import { lastStoredPart, storePages, storeTables } from '../../records/file-content.js';
import type { PageText, Table } from './engines/content.js';
import { extractPdf, renderPdfPage } from './engines/pdf/extract.js';
import { imagePageText } from './engines/image.js';
import type { StageDeps } from './content-stage.js';

/**
 * Pages committed at a time: what a crash can cost, and what one batch holds in memory. Each batch opens the
 * document again, so a long document's batches grow, to an eighth of it but at most 256 pages: what a slice
 * that ends part-way through a batch reads again.
 */
export const PDF_BATCH_PAGES = 64;
const MAX_BATCHES = 8;
const MAX_BATCH_PAGES = 256;
/** Scans are rendered at twice PDF's 72 dpi (144 dpi), enough for OCR of body text. */
const SCAN_SCALE = 2;

/** Stores the document's pages from the first not yet stored, until the last (`done`) or the slice's end (`more`). */
export async function extractPdfInto(
  file: FileRecord,
  path: string,
  { db, context, until = Infinity }: StageDeps,
): Promise<'done' | 'more'> {
  const startPage = (await lastStoredPart(db, file.id)) + 1;
  if (startPage > 1) context.log.info('resuming the PDF after the pages already stored', { fileId: file.id, pagesStored: startPage - 1 });
  let outcome: 'done' | 'more' = 'done';
  for await (const batch of pdfBatches(path, startPage, (page) => context.heartbeat({ pagesRead: page }), until)) {
    await transaction(db, async (tx) => {
      await storeTables(tx, file.id, batch.tables);
      await storePages(tx, file.id, batch.pages);
    });
    if (batch.more) outcome = 'more';
  }
  return outcome;
}

export interface PdfBatch {
  pages: PageText[];
  tables: Table[];
  /** The last batch of a slice whose time is up: the pages after it are left for a later one. */
  more: boolean;
}

/**
 * The document's pages from `startPage` on, batch by batch, scans already read by OCR. Once `until` has passed,
 * the batch ends before the next scan (the pages with a text layer are read already) and no other is read.
 */
export async function* pdfBatches(
  path: string,
  startPage: number,
  onPage: (page: number) => void,
  until = Infinity,
): AsyncGenerator<PdfBatch> {
  let next = startPage;
  let batchPages = PDF_BATCH_PAGES;
  for (;;) {
    const first = next;
    const batch = await extractPdf(path, {
      startPage: first,
      endPage: first + batchPages - 1,
      onProgress: (done: number) => onPage(first + done - 1),
    });
    // One scan at a time: a rendered page is large, and OCR reads one page at a time anyway.
    const pages: PageText[] = [];
    for (const page of batch.pages) {
      const scan = batch.ocrPages.includes(page.page);
      if (scan && pages.length > 0 && Date.now() >= until) break;
      pages.push(scan ? await readScan(path, page) : page);
    }
    next = first + pages.length;
    const done = next > batch.pageCount || batch.pages.length === 0;
    const more = !done && Date.now() >= until;
    const tables = pages.length < batch.pages.length ? batch.tables.filter((t) => (t.page ?? first) < next) : batch.tables;
    if (pages.length > 0) yield { pages, tables, more };
    if (done || more) return;
    batchPages = Math.min(MAX_BATCH_PAGES, Math.max(PDF_BATCH_PAGES, Math.ceil(batch.pageCount / MAX_BATCHES)));
  }
}

async function readScan(path: string, page: PageText): Promise<PageText> {
  const recognised = await imagePageText(await renderPdfPage(path, page.page, SCAN_SCALE));
  return { ...recognised, page: page.page };
}
