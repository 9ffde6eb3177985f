import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import type { Worker as Thread } from 'node:worker_threads';
import Tesseract from 'tesseract.js';
import { OcrPool, ocr, type RecognisedImage } from '../../workflows/extraction/engines/ocr.js';
import { ExtractionError } from '../../workflows/extraction/engines/errors.js';
import { imagePage } from '../../workflows/extraction/engines/image.js';
import type { Box } from '../../workflows/extraction/engines/content.js';
import { tableImage, textImage, type TextImage } from '../support/image-fixtures.js';
import * as fixtures from '../support/fixtures.js';

type CreateWorker = typeof Tesseract.createWorker;
const tesseract = Tesseract as unknown as { createWorker: CreateWorker };
const originalCreateWorker = tesseract.createWorker;

/** Counts the workers tesseract.js starts, and can make the next recognition fail or kill its thread. */
const workers = {
  started: 0,
  next: 'recognise' as 'recognise' | 'reject' | 'crash',
};

const LINES = ['The quick brown fox jumps over', 'the lazy dog near 42 green fields', 'while seven owls watch quietly'];

/** The share of the drawn words that OCR read exactly, each read word used once. */
function wordsRead(drawn: TextImage, result: RecognisedImage): number {
  const read = result.words.map((word) => word.text);
  let found = 0;
  for (const word of drawn.words) {
    const at = read.indexOf(word.text);
    if (at !== -1) {
      found++;
      read.splice(at, 1);
    }
  }
  return found / drawn.words.length;
}

const centre = (box: Box) => ({ x: box.x + box.width / 2, y: box.y + box.height / 2 });
const holds = (box: Box, point: { x: number; y: number }, slack: number) =>
  point.x >= box.x - slack && point.x <= box.x + box.width + slack && point.y >= box.y - slack && point.y <= box.y + box.height + slack;

function assertBoxesWhereDrawn(drawn: TextImage, result: RecognisedImage, slack: number): void {
  let compared = 0;
  for (const word of drawn.words) {
    const match = result.words.find((read) => read.text === word.text && holds(word.box, centre(read.box), slack));
    assert.ok(match, `"${word.text}" drawn at ${JSON.stringify(word.box)} was not read there: ${JSON.stringify(result.words)}`);
    assert.ok(
      holds(match.box, centre(word.box), slack),
      `"${word.text}" read at ${JSON.stringify(match.box)}, drawn at ${JSON.stringify(word.box)}`,
    );
    compared++;
  }
  assert.ok(compared > 0);
}

describe('OCR of images', function () {
  this.timeout(120_000);
  let pool: OcrPool;
  const text = textImage(LINES);

  before(() => {
    tesseract.createWorker = async (...args: Parameters<CreateWorker>) => {
      const worker = await originalCreateWorker(...args);
      workers.started++;
      const thread = (worker as unknown as { worker: Thread }).worker;
      const recognize = worker.recognize.bind(worker);
      worker.recognize = async (...call: Parameters<Tesseract.Worker['recognize']>) => {
        const what = workers.next;
        workers.next = 'recognise';
        if (what === 'reject') throw new Error('simulated failure');
        if (what === 'crash') {
          void thread.terminate();
          return new Promise<never>(() => {});
        }
        return recognize(...call);
      };
      return worker;
    };
    pool = new OcrPool({ workers: 1 });
  });

  after(async () => {
    tesseract.createWorker = originalCreateWorker;
    await pool.close();
    await ocr.close();
  });

  it('reads the words of a PNG, line by line, where they were drawn, with confidence above 60', async () => {
    const result = await pool.recognizeImage(text.png);
    assert.ok(wordsRead(text, result) >= 0.9, result.text);
    const lines = result.text.split('\n').filter((line) => line.trim());
    assert.equal(lines.length, LINES.length, result.text);
    assert.ok(result.confidence > 60, `confidence ${result.confidence}`);
    assert.ok(result.words.every((word) => word.confidence >= 0 && word.confidence <= 100));
    assertBoxesWhereDrawn(text, result, 4);
  });

  it('reads the same words from a JPEG, on the worker already started', async () => {
    const before = workers.started;
    const result = await pool.recognizeImage(text.jpeg);
    assert.ok(wordsRead(text, result) >= 0.9, result.text);
    assert.ok(result.confidence > 60);
    assert.equal(workers.started, before);
  });

  it('reads a table-like image row by row, its cells in order', async () => {
    const rows = [
      ['Item', 'Qty', 'Price'],
      ['Apples', '3', '1.20'],
      ['Pears', '12', '0.80'],
    ];
    const image = tableImage(rows);
    const result = await pool.recognizeImage(image.png);
    const lines = result.text.split('\n').filter((line) => line.trim());
    assert.deepEqual(
      lines.map((line) => line.split(/\s+/)),
      rows,
    );
    assertBoxesWhereDrawn(image, result, 4);
  });

  it('scales an image over 4000 px down first, and gives boxes in the pixels of the image as given', async () => {
    const large = textImage(['Large print reads well'], { fontSize: 120, width: 6000, height: 600, margin: 200 });
    const result = await pool.recognizeImage(large.png);
    assert.ok(wordsRead(large, result) >= 0.9, result.text);
    assertBoxesWhereDrawn(large, result, 8);
  });

  it('reads a blank image as no text, not as a failure', async () => {
    const result = await pool.recognizeImage(fixtures.png());
    assert.deepEqual(result, { text: '', confidence: 0, words: [] });
  });

  for (const [what, bytes] of [
    ['bytes that are no image', Buffer.from('these bytes are not an image at all')],
    ['a PNG cut off in its header', text.png.subarray(0, 30)],
    ['a PNG cut off before its end', text.png.subarray(0, text.png.length - 20)],
    ['a JPEG without a frame', fixtures.jpeg()],
    ['a JPEG cut off before its scan', text.jpeg.subarray(0, 100)],
  ] as const) {
    it(`fails with invalid_file on ${what}`, async () => {
      await assert.rejects(pool.recognizeImage(bytes), (err) => err instanceof ExtractionError && err.code === 'invalid_file');
    });
  }

  it('fails with ocr_failed when recognition itself fails, and the worker goes on working', async () => {
    workers.next = 'reject';
    await assert.rejects(pool.recognizeImage(text.png), (err) => err instanceof ExtractionError && err.code === 'ocr_failed');
    assert.ok(wordsRead(text, await pool.recognizeImage(text.png)) >= 0.9);
  });

  it('fails the recognition under way when its worker dies, as an error to retry, and starts a new worker', async () => {
    const before = workers.started;
    workers.next = 'crash';
    await assert.rejects(
      pool.recognizeImage(text.png),
      (err) => !(err instanceof ExtractionError) && /stopped/.test((err as Error).message),
    );
    const result = await pool.recognizeImage(text.png);
    assert.ok(wordsRead(text, result) >= 0.9);
    assert.equal(workers.started, before + 1);
  });

  it('recognises again after close(), on a new worker', async () => {
    await pool.close();
    const before = workers.started;
    const result = await pool.recognizeImage(text.png);
    assert.ok(wordsRead(text, result) >= 0.9);
    assert.equal(workers.started, before + 1);
  });

  it('reads a PNG file streamed in parts as one page holding its text, with its confidence', async () => {
    const page = await imagePage(Readable.from([text.png.subarray(0, 100), text.png.subarray(100)]), () => {});
    assert.equal(page.page, 1);
    assert.equal(page.source, 'ocr');
    assert.ok((page.confidence ?? 0) > 60);
    assert.match(page.text, /quick brown fox/);
  });
});
