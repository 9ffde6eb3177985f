/**
 * A PDF's content, read in batches of pages: each batch's pages and tables are committed together, so a
 * stage that dies part-way resumes after the last page it stored and writes every page and table once.
 * Pages without a text layer (scans) are rendered and read by OCR.
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
 * document again, so a long document is read in at most about eight batches.
 */
export const PDF_BATCH_PAGES = 64;
const MAX_BATCHES = 8;
/** Scans are rendered at twice PDF's 72 dpi (144 dpi), enough for OCR of body text. */
const SCAN_SCALE = 2;

export async function extractPdfInto(file: FileRecord, path: string, { db, context }: StageDeps): Promise<void> {
  const startPage = (await lastStoredPart(db, file.id)) + 1;
  if (startPage > 1) context.log.info('resuming the PDF after the pages already stored', { fileId: file.id, pagesStored: startPage - 1 });
  for await (const batch of pdfBatches(path, startPage, (page) => context.heartbeat({ pagesRead: page }))) {
    await transaction(db, async (tx) => {
      await storeTables(tx, file.id, batch.tables);
      await storePages(tx, file.id, batch.pages);
    });
  }
}

/** The document's pages from `startPage` on, batch by batch, scans already read by OCR. */
export async function* pdfBatches(
  path: string,
  startPage: number,
  onPage: (page: number) => void,
): AsyncGenerator<{ pages: PageText[]; tables: Table[] }> {
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
    for (const page of batch.pages) pages.push(batch.ocrPages.includes(page.page) ? await readScan(path, page) : page);
    if (pages.length > 0) yield { pages, tables: batch.tables };
    next = first + batch.pages.length;
    if (next > batch.pageCount || batch.pages.length === 0) return;
    batchPages = Math.max(PDF_BATCH_PAGES, Math.ceil(batch.pageCount / MAX_BATCHES));
  }
}

async function readScan(path: string, page: PageText): Promise<PageText> {
  const recognised = await imagePageText(await renderPdfPage(path, page.page, SCAN_SCALE));
  return { ...recognised, page: page.page };
}
