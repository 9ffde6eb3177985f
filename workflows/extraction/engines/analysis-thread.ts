/**
 * The synchronous work of extraction, run in a pool thread: entities and relations (about 2 s for a
 * 200,000-character slice of a large file), the tables written in a text file (up to 8 s for its first 20
 * million characters), and an image decoded and scaled for OCR or for vision models (up to 100 megapixels). In
 * the worker's own thread they held every other project's runs, tool calls and heartbeats that long, a hundred
 * times over for one large upload.
 */
import { Worker } from 'node:worker_threads';
import type { Table } from './content.js';
import type { EntityExtraction, Passage } from './entities.js';
import { ExtractionError } from './errors.js';
import type { OcrImage } from './ocr-image.js';
import type { VisionImage } from './vision-image.js';
import type { AnalysisAnswer, AnalysisJob } from './analysis-worker.js';

/**
 * A text job needs at most about 300 MB (20 million characters of short lines read for tables); a heap of its own
 * keeps a runaway one from the process's.
 */
const THREAD_HEAP_MB = 512;

/** Threads kept between jobs; unreferenced while idle, so they never keep the process alive. */
const idleWorkers: Worker[] = [];

/** What `extractEntities(passages)` finds. */
export async function extractEntitiesInThread(passages: readonly Passage[]): Promise<EntityExtraction> {
  const answer = await inThread({ job: 'entities', passages });
  return (answer as { entities: EntityExtraction }).entities;
}

/** What `textTables(pages)` finds. */
export async function textTablesInThread(pages: string[]): Promise<Table[]> {
  const answer = await inThread({ job: 'tables', pages });
  return (answer as { tables: Table[] }).tables;
}

/** What `prepareForOcr(image, maxLongSide)` makes. */
export async function prepareForOcrInThread(image: Buffer, maxLongSide: number): Promise<OcrImage> {
  const { ocrImage } = (await inThread({ job: 'ocrImage', image, maxLongSide })) as { ocrImage: OcrImage };
  return { ...ocrImage, pgm: bufferOf(ocrImage.pgm) };
}

/** What `visionImageOf(image)` makes. */
export async function visionImageInThread(image: Buffer): Promise<VisionImage> {
  const { visionImage } = (await inThread({ job: 'visionImage', image })) as { visionImage: VisionImage };
  return { ...visionImage, data: bufferOf(visionImage.data) };
}

/** A buffer as it came through a message, either way: a view of its bytes, without copying them. */
export const bufferOf = (bytes: Uint8Array) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);

async function inThread(job: AnalysisJob): Promise<AnalysisAnswer> {
  const worker =
    idleWorkers.pop() ??
    new Worker(new URL('./analysis-worker.js', import.meta.url), { resourceLimits: { maxOldGenerationSizeMb: THREAD_HEAP_MB } });
  worker.ref();
  let answer: AnalysisAnswer;
  try {
    answer = await new Promise<AnalysisAnswer>((resolve, reject) => {
      const finish = () => {
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
      };
      const onMessage = (message: AnalysisAnswer) => {
        finish();
        resolve(message);
      };
      const onError = (err: Error & { code?: string }) => {
        finish();
        // Nothing a retry could change: the same text needs the same memory.
        const tooLarge = err.code === 'ERR_WORKER_OUT_OF_MEMORY';
        reject(tooLarge ? new ExtractionError('invalid_file', `Analysing the file's text needs more than ${THREAD_HEAP_MB} MB.`) : err);
      };
      const onExit = (code: number) => onError(new Error(`An analysis thread exited with code ${code}.`));
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      worker.postMessage(job);
    });
  } catch (err) {
    void worker.terminate();
    throw err;
  }
  worker.unref();
  idleWorkers.push(worker);
  if ('failure' in answer) throw answer.code ? new ExtractionError(answer.code, answer.failure) : new Error(answer.failure);
  return answer;
}
