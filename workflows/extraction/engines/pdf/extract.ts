/**
 * The PDF engine's entry point: every page's text, the tables, and the pages needing OCR, read by this thread
 * and, for longer documents, by worker threads that each open the document once and take page ranges in turn.
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import type { PDFDocumentProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { ExtractionError } from '../errors.js';
import { openPdf, type PdfSource } from './document.js';
import { extractOpenPages, type PdfExtraction } from './pages.js';
import type { WorkerMessage, WorkerRequest } from './worker.js';

export interface PdfOptions {
  /** Pages before this one (1-based) are skipped: a resumed run has stored them already. */
  startPage?: number;
  /** Pages after this one are left for a later call: a caller committing in batches reads one at a time. */
  endPage?: number;
  /** Called after each page with the number of pages this call has read so far, for heartbeats. */
  onProgress?: (pagesDone: number) => void;
  /** Threads reading pages, this one included; default the machine's parallelism. 1 reads in this thread only. */
  threads?: number;
  /** Find tables (default true); without them the text costs about half as much. */
  tables?: boolean;
}

/** Ranges are handed out this many pages at a time, so a thread that finishes early takes the next. */
const pagesPerRange = 16;
/** Below this many pages a thread's share would not repay opening the document in it. */
const minPagesPerThread = 24;

export async function extractPdf(source: PdfSource, options: PdfOptions = {}): Promise<PdfExtraction> {
  const doc = await openPdf(source);
  try {
    const from = Math.max(1, options.startPage ?? 1);
    const to = Math.min(doc.numPages, options.endPage ?? doc.numPages);
    if (from > to) return { pageCount: doc.numPages, pages: [], tables: [], ocrPages: [] };
    const pages = to - from + 1;
    const threads = Math.max(1, Math.min(options.threads ?? availableParallelism(), Math.floor(pages / minPagesPerThread)));
    if (threads === 1) return await extractOpenPages(doc, { from, to, tables: options.tables, onProgress: options.onProgress });
    return await extractInPool(doc, source, from, to, threads, options);
  } finally {
    await doc.destroy();
  }
}

async function extractInPool(
  doc: PDFDocumentProxy,
  source: PdfSource,
  from: number,
  to: number,
  threads: number,
  options: PdfOptions,
): Promise<PdfExtraction> {
  const ranges: { from: number; to: number }[] = [];
  for (let start = from; start <= to; start += pagesPerRange) {
    ranges.push({ from: start, to: Math.min(to, start + pagesPerRange - 1) });
  }
  const results: PdfExtraction[] = [];
  let pagesDone = 0;
  const onPage = () => options.onProgress?.(++pagesDone);
  const tables = options.tables ?? true;

  // This thread is one member of the pool; the others are workers, each with its own copy of the bytes.
  const workers = idleWorkers.splice(0, threads - 1);
  while (workers.length < threads - 1) workers.push(new Worker(new URL('./worker.js', import.meta.url)));
  const inThisThread = (async () => {
    for (let range = ranges.shift(); range; range = ranges.shift()) {
      results.push(await extractOpenPages(doc, { ...range, tables, onProgress: onPage }));
    }
  })();
  const inWorkers = workers.map((worker) => drive(worker, { type: 'open', source, tables }, ranges, results, onPage));
  const settled = await Promise.allSettled([inThisThread, ...inWorkers]);
  const failure = settled.find((s) => s.status === 'rejected');
  if (failure) throw failure.reason;
  results.sort((a, b) => (a.pages[0]?.page ?? 0) - (b.pages[0]?.page ?? 0));
  return {
    pageCount: doc.numPages,
    pages: results.flatMap((r) => r.pages),
    tables: results.flatMap((r) => r.tables),
    ocrPages: results.flatMap((r) => r.ocrPages),
  };
}

/** Workers kept between documents; unreferenced while idle, so they never keep the process alive. */
const idleWorkers: Worker[] = [];

/**
 * Has one worker open the document and take ranges until none are left, then close it and go back to the idle
 * workers. A worker that fails is ended rather than reused.
 */
function drive(
  worker: Worker,
  open: WorkerRequest,
  ranges: { from: number; to: number }[],
  results: PdfExtraction[],
  onPage: () => void,
): Promise<void> {
  worker.ref();
  return new Promise<void>((resolve, reject) => {
    const next = () => {
      const range = ranges.shift();
      if (range) return worker.postMessage({ type: 'range', ...range } satisfies WorkerRequest);
      worker.postMessage({ type: 'close' } satisfies WorkerRequest);
      finish();
      worker.unref();
      idleWorkers.push(worker);
      resolve();
    };
    const onMessage = (message: WorkerMessage) => {
      if (message.type === 'ready') next();
      else if (message.type === 'page') onPage();
      else if (message.type === 'done') {
        results.push(message.result);
        next();
      } else fail(message.code ? new ExtractionError(message.code, message.message) : new Error(message.message));
    };
    const fail = (err: Error) => {
      finish();
      void worker.terminate();
      reject(err);
    };
    const onExit = (code: number) => fail(new Error(`A PDF worker thread exited with code ${code}.`));
    const finish = () => {
      worker.off('message', onMessage);
      worker.off('error', fail);
      worker.off('exit', onExit);
    };
    worker.on('message', onMessage);
    worker.on('error', fail);
    worker.on('exit', onExit);
    worker.postMessage(open);
  });
}
