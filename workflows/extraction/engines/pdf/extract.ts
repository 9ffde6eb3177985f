/**
 * The PDF engine's entry point: every page's text, the tables, and the pages needing OCR, read by worker threads
 * that each open the document once and take page ranges in turn, and a scan's page rendered by one of them.
 *
 * No page is read in the calling thread. A document is whatever a tenant uploads: a content stream of a few
 * hundred kilobytes that inflates to gigabytes of drawing, or an image of a billion pixels, kept the process's
 * event loop for minutes and its memory past any pod's limit while every other project's runs waited on them.
 * In a thread of its own, with a heap of its own, such a page costs only that thread, ended when the page takes
 * longer than a page may or needs more memory than a thread has.
 */
import { availableParallelism } from 'node:os';
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { MAX_FILE_PAGES } from '../content.js';
import { ExtractionError } from '../errors.js';
import type { PdfSource } from './document.js';
import type { PdfExtraction } from './pages.js';
import type { WorkerMessage, WorkerRequest } from './worker.js';

export interface PdfOptions {
  /** Pages before this one (1-based) are skipped: a resumed run has stored them already. */
  startPage?: number;
  /** Pages after this one are left for a later call: a caller committing in batches reads one at a time. */
  endPage?: number;
  /** Called after each page with the number of pages this call has read so far, for heartbeats. */
  onProgress?: (pagesDone: number) => void;
  /** Threads reading pages; default the machine's parallelism. */
  threads?: number;
  /** Find tables (default true); without them the text costs about half as much. */
  tables?: boolean;
  /** How long one page (or opening the document) may take before the document is refused; default a minute. */
  pageTimeLimitMs?: number;
}

/** A page taking longer than this is not a page of a document anyone wrote: the longest real ones take seconds. */
export const PAGE_TIME_LIMIT_MS = 60_000;
/** Each thread's JavaScript heap. A real page needs a few megabytes; a range of 16 of them, tens. */
export const THREAD_HEAP_MB = 256;

/** Ranges are handed out this many pages at a time, so a thread that finishes early takes the next. */
const pagesPerRange = 16;
/** Below this many pages another thread's share would not repay opening the document in it. */
const minPagesPerThread = 24;

export async function extractPdf(source: PdfSource, options: PdfOptions = {}): Promise<PdfExtraction> {
  const tables = options.tables ?? true;
  const timeLimit = options.pageTimeLimitMs ?? PAGE_TIME_LIMIT_MS;
  const lead = new PdfThread(timeLimit);
  const helpers: PdfThread[] = [];
  try {
    const pageCount = await lead.open(source, tables);
    if (pageCount > MAX_FILE_PAGES) {
      throw new ExtractionError(
        'invalid_file',
        `The PDF has ${pageCount.toLocaleString('en')} pages; a file may have at most ${MAX_FILE_PAGES.toLocaleString('en')}.`,
      );
    }
    const from = Math.max(1, options.startPage ?? 1);
    const to = Math.min(pageCount, options.endPage ?? pageCount);
    if (from > to) return { pageCount, pages: [], tables: [], ocrPages: [] };

    const ranges: { from: number; to: number }[] = [];
    for (let start = from; start <= to; start += pagesPerRange) ranges.push({ from: start, to: Math.min(to, start + pagesPerRange - 1) });
    const threads = Math.max(1, Math.min(options.threads ?? availableParallelism(), Math.floor((to - from + 1) / minPagesPerThread)));
    while (helpers.length < threads - 1) helpers.push(new PdfThread(timeLimit));

    const results: PdfExtraction[] = [];
    let pagesDone = 0;
    const onPage = () => options.onProgress?.(++pagesDone);
    const takeRanges = async (thread: PdfThread) => {
      try {
        for (let range = ranges.shift(); range; range = ranges.shift()) results.push(await thread.read(range, onPage));
      } catch (err) {
        ranges.length = 0; // the others stop after the range they are reading
        throw err;
      }
    };
    const settled = await Promise.allSettled([
      takeRanges(lead),
      ...helpers.map(async (helper) => {
        await helper.open(source, tables);
        await takeRanges(helper);
      }),
    ]);
    const failure = settled.find((s) => s.status === 'rejected');
    if (failure) throw failure.reason;
    results.sort((a, b) => (a.pages[0]?.page ?? 0) - (b.pages[0]?.page ?? 0));
    return {
      pageCount,
      pages: results.flatMap((r) => r.pages),
      tables: results.flatMap((r) => r.tables),
      ocrPages: results.flatMap((r) => r.ocrPages),
    };
  } finally {
    for (const thread of [lead, ...helpers]) thread.release();
  }
}

/** One page as a PNG, at `scale` times 72 dpi, for OCR of a page with no text layer. */
export async function renderPdfPage(
  source: PdfSource,
  page: number,
  scale: number,
  options: Pick<PdfOptions, 'pageTimeLimitMs'> = {},
): Promise<Buffer> {
  const thread = new PdfThread(options.pageTimeLimitMs ?? PAGE_TIME_LIMIT_MS);
  try {
    return await thread.render(source, page, scale);
  } finally {
    thread.release();
  }
}

/** Threads kept between documents; unreferenced while idle, so they never keep the process alive. */
const idleWorkers: Worker[] = [];

/**
 * One pool thread, for one document: each request is answered before the next is sent, and one that takes longer
 * than a page may (counting from its last page read), or that ends the thread, ends it and fails the document.
 * A thread that failed is ended rather than reused.
 */
class PdfThread {
  readonly #worker: Worker;
  /** Settles once the thread has loaded pdfjs: a page's time counts from then. */
  readonly #loaded: Promise<unknown>;
  #broken = false;

  constructor(private readonly timeLimitMs: number) {
    const idle = idleWorkers.pop();
    this.#worker =
      idle ?? new Worker(new URL('./worker.js', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
    this.#loaded = idle ? Promise.resolve() : once(this.#worker, 'message');
    this.#worker.ref();
  }

  /** Opens the document in this thread; its page count. */
  async open(source: PdfSource, tables: boolean): Promise<number> {
    const answer = await this.#ask({ type: 'open', source, tables }, () => 'The PDF');
    return (answer as Extract<WorkerMessage, { type: 'ready' }>).pageCount;
  }

  async read(range: { from: number; to: number }, onPage: () => void): Promise<PdfExtraction> {
    let reading = range.from;
    const answer = await this.#ask(
      { type: 'range', ...range },
      () => `Page ${reading} of the PDF`,
      () => {
        reading++;
        onPage();
      },
    );
    return (answer as Extract<WorkerMessage, { type: 'done' }>).result;
  }

  async render(source: PdfSource, page: number, scale: number): Promise<Buffer> {
    const answer = await this.#ask({ type: 'render', source, page, scale }, () => `Page ${page} of the PDF`);
    return Buffer.from((answer as Extract<WorkerMessage, { type: 'rendered' }>).png);
  }

  /** Back to the idle threads, having closed its document; or ended, if it failed. */
  release(): void {
    if (this.#broken) return;
    this.#worker.postMessage({ type: 'close' } satisfies WorkerRequest);
    this.#worker.unref();
    idleWorkers.push(this.#worker);
  }

  async #ask(request: WorkerRequest, what: () => string, onPage?: () => void): Promise<WorkerMessage> {
    const worker = this.#worker;
    await this.#loaded.catch((err: Error) => {
      this.#broken = true;
      void worker.terminate();
      throw err;
    });
    return new Promise<WorkerMessage>((resolve, reject) => {
      let timer = setTimeout(() => timedOut(), this.timeLimitMs);
      const finish = () => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const fail = (err: Error) => {
        finish();
        this.#broken = true;
        void worker.terminate();
        reject(err);
      };
      const timedOut = () =>
        fail(
          new ExtractionError('invalid_file', `${what()} took more than ${this.timeLimitMs / 1000} s to read, the most a page may take.`),
        );
      const onMessage = (message: WorkerMessage) => {
        if (message.type === 'page') {
          clearTimeout(timer);
          timer = setTimeout(() => timedOut(), this.timeLimitMs);
          onPage?.();
        } else if (message.type === 'failed') {
          fail(message.code ? new ExtractionError(message.code, message.message) : new Error(message.message));
        } else {
          finish();
          resolve(message);
        }
      };
      const onError = (err: Error & { code?: string }) =>
        fail(
          err.code === 'ERR_WORKER_OUT_OF_MEMORY'
            ? new ExtractionError('invalid_file', `${what()} needs more than ${THREAD_HEAP_MB} MB to read, the most a page may use.`)
            : err,
        );
      const onExit = (code: number) => fail(new Error(`A PDF worker thread exited with code ${code}.`));
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      worker.postMessage(request);
    });
  }
}
