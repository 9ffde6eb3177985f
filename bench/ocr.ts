/**
 * The OCR benchmark: seconds per page for an A4 page of prose drawn at 150 dpi, on a worker that has
 * already read one page (so start-up is not counted).
 */
import { OcrPool } from '../workflows/extraction/engines/ocr.js';
import { a4PageImage } from '../test/support/image-fixtures.js';

export interface OcrBenchResult {
  pages: number;
  secondsPerPage: number;
  /** The share of the drawn words read back exactly. */
  wordsRead: number;
}

export async function benchOcr({ pages = 3, dpi = 150 }: { pages?: number; dpi?: number } = {}): Promise<OcrBenchResult> {
  const page = a4PageImage(dpi);
  const pool = new OcrPool({ workers: 1 });
  try {
    await pool.recognizeImage(page.png);
    let wordsRead = 0;
    const started = process.hrtime.bigint();
    for (let i = 0; i < pages; i++) {
      const result = await pool.recognizeImage(page.png);
      const read = new Set(result.words.map((word) => word.text));
      wordsRead += page.words.filter((word) => read.has(word.text)).length / page.words.length;
    }
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    return { pages, secondsPerPage: seconds / pages, wordsRead: wordsRead / pages };
  } finally {
    await pool.close();
  }
}
