/**
 * The PDF benchmark: a 200-page text PDF (pdf-lib, 40 lines a page) read by our engine and by poppler's
 * `pdftotext` in the same run, interleaved, best of `rounds` after one warm-up of each.
 *   pages/s     pages over wall time; for pdftotext the whole process (start-up included), for us one
 *               `extractPdf` call in a process already running (its worker threads warm after the warm-up).
 *   ratio       our pages/s ÷ pdftotext's, for the default (tables found, every core); goal at least 0.3.
 *   modes       single thread and the pool, with and without tables (without, a page's operator list is
 *               only read when it has no text).
 *   CPU ms/page getTextContent and getOperatorList, each on its own, in this thread: what tables cost.
 * `node dist/bench/pdf.js` prints the figures.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { openPdf } from '../workflows/extraction/engines/pdf/document.js';
import { extractPdf, type PdfOptions } from '../workflows/extraction/engines/pdf/extract.js';
import { textPdf } from '../test/support/pdf-fixtures.js';

export const PDF_PAGES = 200;

export interface PdfFigures {
  pages: number;
  threads: number;
  ours: number;
  pdftotext: number;
  ratio: number;
  modes: { singleThread: number; parallel: number; singleThreadTextOnly: number; parallelTextOnly: number };
  cpuMsPerPage: { textContent: number; operatorList: number };
}

export async function measurePdf(rounds = 3): Promise<PdfFigures> {
  const dir = await mkdtemp(join(tmpdir(), 'agentplane-bench-pdf-'));
  try {
    const path = join(dir, 'bench.pdf');
    await writeFile(path, await textPdf(PDF_PAGES, 40));
    const modes: Record<keyof PdfFigures['modes'], PdfOptions> = {
      singleThread: { threads: 1 },
      parallel: {},
      singleThreadTextOnly: { threads: 1, tables: false },
      parallelTextOnly: { tables: false },
    };
    const best = { singleThread: 0, parallel: 0, singleThreadTextOnly: 0, parallelTextOnly: 0, pdftotext: 0 };
    for (let round = 0; round <= rounds; round++) {
      // Round 0 warms up: pdfjs's code, its fonts, the worker threads.
      for (const [mode, options] of Object.entries(modes) as [keyof typeof modes, PdfOptions][]) {
        const rate = await pagesPerSecond(async () => (await extractPdf(path, options)).pages.length);
        if (round > 0) best[mode] = Math.max(best[mode], rate);
      }
      const rate = await pagesPerSecond(async () => (await runPdftotext(path), PDF_PAGES));
      if (round > 0) best.pdftotext = Math.max(best.pdftotext, rate);
    }
    const { pdftotext, ...ours } = best;
    return {
      pages: PDF_PAGES,
      threads: availableParallelism(),
      ours: ours.parallel,
      pdftotext,
      ratio: ours.parallel / pdftotext,
      modes: ours,
      cpuMsPerPage: await cpuPerPage(path),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function pagesPerSecond(run: () => Promise<number>): Promise<number> {
  const start = performance.now();
  const pages = await run();
  if (pages !== PDF_PAGES) throw new Error(`Read ${pages} pages of ${PDF_PAGES}.`);
  return pages / ((performance.now() - start) / 1000);
}

async function runPdftotext(path: string): Promise<void> {
  try {
    await promisify(execFile)('pdftotext', ['-q', path, '-']);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT')
      throw new Error('pdftotext is missing: apt-get install -y poppler-utils', { cause: err });
    throw err;
  }
}

/** CPU time of each pdfjs call over every page, in this thread, after a warm-up pass. */
async function cpuPerPage(path: string): Promise<PdfFigures['cpuMsPerPage']> {
  const doc = await openPdf(path);
  try {
    const cpuMs = () => {
      const { user, system } = process.cpuUsage();
      return (user + system) / 1000;
    };
    const totals = { textContent: 0, operatorList: 0 };
    for (const pass of [0, 1]) {
      for (let n = 1; n <= doc.numPages; n++) {
        const page = await doc.getPage(n);
        let start = cpuMs();
        await page.getTextContent();
        if (pass) totals.textContent += cpuMs() - start;
        start = cpuMs();
        await page.getOperatorList({ annotationMode: 0 });
        if (pass) totals.operatorList += cpuMs() - start;
        page.cleanup();
      }
    }
    return { textContent: totals.textContent / doc.numPages, operatorList: totals.operatorList / doc.numPages };
  } finally {
    await doc.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await measurePdf();
  const round = (n: number) => Math.round(n);
  console.log(`PDF, ${figures.pages} text pages, ${figures.threads} threads`);
  console.log(
    `  ours ${round(figures.ours)} pages/s, pdftotext ${round(figures.pdftotext)} pages/s, ratio ${figures.ratio.toFixed(2)} (goal ≥ 0.3)`,
  );
  for (const [mode, rate] of Object.entries(figures.modes)) console.log(`  ${mode.padEnd(22)} ${round(rate)} pages/s`);
  console.log(
    `  CPU per page: getTextContent ${figures.cpuMsPerPage.textContent.toFixed(2)} ms, getOperatorList ${figures.cpuMsPerPage.operatorList.toFixed(2)} ms`,
  );
}
