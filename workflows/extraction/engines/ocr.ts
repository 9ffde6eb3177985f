/**
 * OCR with tesseract.js, offline: English LSTM data from the `@tesseract.js-data/eng` package, nothing
 * fetched or cached. A pool of long-lived workers (threads) is started on first use, replaced when one of
 * its threads dies, and stopped by `close()`.
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { Worker as Thread } from 'node:worker_threads';
import Tesseract from 'tesseract.js';
import type { Box } from './content.js';
import { ExtractionError } from './errors.js';
import { prepareForOcrInThread } from './analysis-thread.js';

export interface RecognisedWord {
  text: string;
  /** 0–100. */
  confidence: number;
  /** Pixels of the image as given, from its top-left corner. */
  box: Box;
}

export interface RecognisedImage {
  /** Lines end in `\n`; a blank line separates paragraphs. */
  text: string;
  /** Mean word confidence, 0–100; 0 when nothing was read. */
  confidence: number;
  words: RecognisedWord[];
}

export interface OcrPoolOptions {
  /** Worker threads, each with its own copy of the model (~100 MB); 1 unless told. */
  workers?: number;
  /** Larger images are scaled down to this many pixels on their long side first; 4000 unless told. */
  maxLongSide?: number;
}

const langPath = join(dirname(createRequire(import.meta.url).resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');

interface Running {
  scheduler: Tesseract.Scheduler;
  /** Rejects when any of the pool's threads exits, whether it died or the pool was closed. */
  stopped: Promise<never>;
  stop(): Promise<void>;
}

export class OcrPool {
  readonly #workers: number;
  readonly #maxLongSide: number;
  #running: Promise<Running> | null = null;
  // Images waiting for a worker hold their decoded pixels; bounding the number in hand bounds the memory.
  #inHand = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(options: OcrPoolOptions = {}) {
    this.#workers = Math.max(1, options.workers ?? 1);
    this.#maxLongSide = options.maxLongSide ?? 4000;
  }

  /** The text of a PNG or JPEG image, with its words and where they are. */
  async recognizeImage(image: Buffer): Promise<RecognisedImage> {
    await this.#acquire();
    try {
      // Decoded and scaled in a pool thread: up to 100 megapixels, too long for the worker's own.
      const prepared = await prepareForOcrInThread(image, this.#maxLongSide);
      const running = await this.#start();
      const job = running.scheduler.addJob('recognize', prepared.pgm, {}, { text: true, blocks: true });
      const page = await Promise.race([
        job.catch((err: unknown) => {
          throw new ExtractionError('ocr_failed', `OCR could not read the image: ${messageOf(err)}`);
        }),
        running.stopped,
      ]);
      return resultOf(page.data, prepared.scale);
    } finally {
      this.#release();
    }
  }

  /** Stops the workers; work under way fails, and the next recognition starts a new pool. */
  async close(): Promise<void> {
    const running = this.#running;
    this.#running = null;
    if (running)
      await running.then(
        (r) => r.stop(),
        () => {},
      );
  }

  #start(): Promise<Running> {
    if (!this.#running) {
      const running = startPool(this.#workers);
      this.#running = running;
      const forget = () => {
        if (this.#running === running) this.#running = null;
      };
      running.then((r) => r.stopped.catch(forget), forget);
    }
    return this.#running;
  }

  async #acquire(): Promise<void> {
    if (this.#inHand >= this.#workers * 2) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#inHand++;
  }

  #release(): void {
    const next = this.#waiting.shift();
    if (next) next();
    else this.#inHand--;
  }
}

async function startPool(size: number): Promise<Running> {
  const scheduler = Tesseract.createScheduler();
  const threads: Thread[] = [];
  let closing = false;
  let stopThreads!: (err: Error) => void;
  const stopped = new Promise<never>((_, reject) => (stopThreads = reject));
  stopped.catch(() => {});
  const exits: Promise<void>[] = [];

  const stop = async () => {
    closing = true;
    for (const thread of threads) void thread.terminate();
    await Promise.all(exits);
  };

  const started = await Promise.allSettled(Array.from({ length: size }, () => startWorker()));
  for (const result of started) {
    if (result.status === 'rejected') continue;
    const thread = threadOf(result.value);
    threads.push(thread);
    // Without a listener, an uncaught error in the thread would be thrown in this process.
    thread.on('error', () => {});
    exits.push(
      new Promise((resolve) => {
        thread.once('exit', (code) => {
          stopThreads(new Error(closing ? 'The OCR pool was closed.' : `An OCR worker stopped (exit code ${code}).`));
          if (!closing) void stop();
          resolve();
        });
      }),
    );
    scheduler.addWorker(result.value);
  }
  const failure = started.find((result) => result.status === 'rejected');
  if (failure) {
    await stop();
    throw failure.reason;
  }
  return { scheduler, stopped, stop };
}

async function startWorker(): Promise<Tesseract.Worker> {
  // tesseract.js reports a failure to load the language data only to the error handler.
  let failStart!: (err: Error) => void;
  const startFailed = new Promise<never>((_, reject) => (failStart = reject));
  startFailed.catch(() => {});
  const worker = Tesseract.createWorker('eng', Tesseract.OEM.LSTM_ONLY, {
    langPath,
    gzip: true,
    cacheMethod: 'none',
    logger: () => {},
    errorHandler: (err: unknown) => failStart(new Error(`OCR could not start: ${messageOf(err)}`)),
  });
  const started = await Promise.race([worker, startFailed]);
  try {
    await started.setParameters({
      // The default (a single block) runs the columns of a table together.
      tessedit_pageseg_mode: Tesseract.PSM.AUTO,
      // Tesseract's diagnostics ("Estimating resolution as …") would otherwise go to the process's stderr.
      debug_file: '/dev/null',
    });
  } catch (err) {
    await started.terminate();
    throw new Error(`OCR could not start: ${messageOf(err)}`, { cause: err });
  }
  return started;
}

function threadOf(worker: Tesseract.Worker): Thread {
  const thread = (worker as unknown as { worker?: Thread }).worker;
  if (!thread || typeof thread.once !== 'function') throw new Error('tesseract.js did not expose its worker thread.');
  return thread;
}

function resultOf(page: Tesseract.Page, scale: number): RecognisedImage {
  const words: RecognisedWord[] = [];
  for (const block of page.blocks ?? []) {
    for (const paragraph of block.paragraphs) {
      for (const line of paragraph.lines) {
        for (const word of line.words) {
          if (!word.text.trim()) continue;
          const { x0, y0, x1, y1 } = word.bbox;
          words.push({
            text: word.text,
            confidence: word.confidence,
            box: { x: x0 / scale, y: y0 / scale, width: (x1 - x0) / scale, height: (y1 - y0) / scale },
          });
        }
      }
    }
  }
  return { text: page.text, confidence: words.length ? page.confidence : 0, words };
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** The process's pool: one worker, started on first use. */
export const ocr = new OcrPool();
