import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Table } from '../../workflows/extraction/engines/content.js';
import { MAX_FILE_PAGES } from '../../workflows/extraction/engines/content.js';
import { ExtractionError } from '../../workflows/extraction/engines/errors.js';
import { extractPdf, PAGE_TIME_LIMIT_MS, renderPdfPage, THREAD_HEAP_MB } from '../../workflows/extraction/engines/pdf/extract.js';
import { extractPdfPages } from '../../workflows/extraction/engines/pdf/pages.js';
import { MAX_RENDER_SIDE, renderPage } from '../../workflows/extraction/engines/pdf/render.js';
import {
  borderlessTable,
  borderlessTablePdf,
  encryptedPdf,
  fruitTable,
  garbage,
  inflatingPdf,
  largeScanPdf,
  ruledTablePdf,
  scannedPdf,
  scannedWords,
  spanningTable,
  textPdf,
  twoColumnProsePdf,
  type Grid,
} from '../support/pdf-fixtures.js';
import { longestStall } from '../support/stalls.js';

/** The cells as `row,column[ rowSpan×columnSpan]=text`, easy to compare and to read in a failure. */
const cellsOf = (table: Table) =>
  table.cells.map((c) => `${c.row},${c.column}${c.row_span > 1 || c.column_span > 1 ? ` ${c.row_span}x${c.column_span}` : ''}=${c.text}`);

const assertNear = (actual: number, expected: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= 2, `${what}: ${actual} is not within 2 pt of ${expected}`);

function assertRuledGrid(table: Table, grid: Grid): void {
  assert.equal(table.detection, 'ruled');
  assert.equal(table.page, 1);
  assert.equal(table.rows, grid.ys.length - 1);
  assert.equal(table.columns, grid.xs.length - 1);
  assertNear(table.box!.x, grid.xs[0]!, 'left');
  assertNear(table.box!.y, grid.ys[0]!, 'top');
  assertNear(table.box!.width, grid.xs.at(-1)! - grid.xs[0]!, 'width');
  assertNear(table.box!.height, grid.ys.at(-1)! - grid.ys[0]!, 'height');
}

async function assertFails(promise: Promise<unknown>, code: string): Promise<void> {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof ExtractionError, `${String(err)} is not an ExtractionError`);
    assert.equal(err.code, code);
    return true;
  });
}

describe('PDF engine', () => {
  describe('text', () => {
    it('reads every page’s text, in order, line by line', async () => {
      const result = await extractPdf(await textPdf(3, 4));
      assert.equal(result.pageCount, 3);
      assert.deepEqual(
        result.pages.map((p) => [p.page, p.source]),
        [
          [1, 'text_layer'],
          [2, 'text_layer'],
          [3, 'text_layer'],
        ],
      );
      const lines = result.pages[1]!.text.split('\n');
      assert.deepEqual(
        lines,
        [1, 2, 3, 4].map((l) => `Page 2 line ${l}: the quick brown fox jumps over the lazy dog`),
      );
      assert.deepEqual(result.ocrPages, []);
    });

    it('reads a range of pages from a file path', async () => {
      const dir = await mkdtemp(join(tmpdir(), 'pdf-engine-'));
      try {
        const path = join(dir, 'five.pdf');
        await writeFile(path, await textPdf(5, 2));
        const result = await extractPdfPages(path, { from: 2, to: 3 });
        assert.equal(result.pageCount, 5);
        assert.deepEqual(
          result.pages.map((p) => p.page),
          [2, 3],
        );
        assert.match(result.pages[1]!.text, /^Page 3 line 1:/);
      } finally {
        await rm(dir, { recursive: true });
      }
    });

    it('leaves the caller’s bytes as they were', async () => {
      const bytes = Buffer.from(await textPdf(1, 1));
      const copy = Buffer.from(bytes);
      await extractPdf(bytes);
      assert.ok(bytes.equals(copy));
    });

    it('skips the pages before startPage and reports each page done', async () => {
      const done: number[] = [];
      const result = await extractPdf(await textPdf(6, 1), { startPage: 4, onProgress: (n) => done.push(n) });
      assert.deepEqual(
        result.pages.map((p) => p.page),
        [4, 5, 6],
      );
      assert.deepEqual(done, [1, 2, 3]);
    });

    it('gives the same pages, tables and progress when worker threads share a long document', async () => {
      const bytes = await textPdf(60, 3);
      let done = 0;
      const parallel = await extractPdf(bytes, { threads: 2, onProgress: (n) => (done = Math.max(done, n)) });
      const single = await extractPdf(bytes, { threads: 1 });
      assert.deepEqual(parallel, single);
      assert.equal(done, 60);
      assert.match(parallel.pages[59]!.text, /^Page 60 line 1:/);
    });
  });

  describe('ruled tables', () => {
    for (const style of ['stroked', 'filled'] as const) {
      it(`finds a table whose rules are ${style === 'stroked' ? 'stroked lines' : '0.5 pt filled rectangles'}, cell by cell`, async () => {
        const { tables } = await extractPdf(await ruledTablePdf(fruitTable, style));
        assert.equal(tables.length, 1);
        assertRuledGrid(tables[0]!, fruitTable);
        assert.deepEqual(cellsOf(tables[0]!), [
          '0,0=Item',
          '0,1=Quantity',
          '0,2=Price',
          '1,0=Apples',
          '1,1=3',
          '1,2=1.20',
          '2,0=Pears',
          '2,1=12',
          '2,2=0.80',
        ]);
        const apples = tables[0]!.cells[3]!;
        assertNear(apples.box!.x, 72, 'cell left');
        assertNear(apples.box!.y, 124, 'cell top');
        assertNear(apples.box!.width, 150, 'cell width');
        assertNear(apples.box!.height, 24, 'cell height');
      });
    }

    it('makes a header cell span two columns where the rule between them is missing', async () => {
      const { tables } = await extractPdf(await ruledTablePdf(spanningTable, 'stroked'));
      assert.equal(tables.length, 1);
      assertRuledGrid(tables[0]!, spanningTable);
      assert.deepEqual(cellsOf(tables[0]!), [
        '0,0 1x2=Fruit and count',
        '0,2=Price',
        '1,0=Apples',
        '1,1=3',
        '1,2=1.20',
        '2,0=Pears',
        '2,1=12',
        '2,2=0.80',
      ]);
      assertNear(tables[0]!.cells[0]!.box!.width, 300, 'spanning cell width');
    });

    it('keeps the table’s words in the page text too', async () => {
      const { pages } = await extractPdf(await ruledTablePdf(fruitTable, 'filled'));
      assert.match(pages[0]!.text, /Item Quantity Price\nApples 3 1\.20\nPears 12 0\.80/);
    });
  });

  describe('borderless tables', () => {
    it('finds aligned columns of short cells between paragraphs', async () => {
      const { tables } = await extractPdf(await borderlessTablePdf());
      assert.equal(tables.length, 1);
      const table = tables[0]!;
      assert.equal(table.detection, 'aligned');
      assert.equal(table.rows, 4);
      assert.equal(table.columns, 3);
      assert.deepEqual(
        table.cells.map((c) => c.text),
        borderlessTable.cells.flat(),
      );
      assertNear(table.box!.x, 72, 'left');
      assertNear(table.box!.y, borderlessTable.top, 'top');
      assert.ok(table.box!.height < borderlessTable.rowHeight * 4 + 4, 'the paragraphs are not part of it');
    });

    it('does not take two columns of prose for a table', async () => {
      const { tables, pages } = await extractPdf(await twoColumnProsePdf());
      assert.deepEqual(tables, []);
      assert.match(pages[0]!.text, /committee/);
    });
  });

  describe('scanned pages', () => {
    it('reports a page with only an image as needing OCR, and not a blank page', async () => {
      const result = await extractPdf(await scannedPdf());
      assert.deepEqual(result.ocrPages, [2]);
      assert.deepEqual(
        result.pages.map((p) => p.text),
        ['A cover page with real text', '', ''],
      );
    });

    it('renders that page to a PNG of the page’s size times the scale', async () => {
      const png = await renderPdfPage(await scannedPdf(), 2, 2);
      assert.deepEqual([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      assert.equal(png.readUInt32BE(16), 612 * 2);
      assert.equal(png.readUInt32BE(20), 792 * 2);
      assert.ok(png.length > 5_000, `a ${png.length}-byte PNG is too small to hold "${scannedWords}"`);
    });
  });

  describe('documents made to exhaust the reader', () => {
    it('reads a page of 200,000 words on one spot, more than a call’s arguments can hold', async () => {
      const { pages } = await extractPdf(await inflatingPdf(200_000));
      assert.equal(pages[0]!.text, 'a'.repeat(200_000));
    });

    it('refuses a page that takes longer than a page may, read in a thread that leaves this one free', async () => {
      // A million words: 60 KB of file, 25 MB of drawing, and minutes of this thread before.
      const bytes = await inflatingPdf(1_000_000);
      const { stalledMs, settled } = await longestStall(() => extractPdf(bytes, { pageTimeLimitMs: 2_000 }));
      assert.equal(settled.status, 'rejected');
      const err = (settled as PromiseRejectedResult).reason as ExtractionError;
      assert.ok(err instanceof ExtractionError, String(err));
      assert.equal(err.code, 'invalid_file');
      assert.equal(err.message, 'Page 1 of the PDF took more than 2 s to read, the most a page may take.');
      assert.ok(stalledMs < 1_000, `this thread's timers waited ${stalledMs} ms`);
    });

    it(`refuses a page that needs more than a thread's ${THREAD_HEAP_MB} MB, ending only that thread`, async function () {
      this.timeout(PAGE_TIME_LIMIT_MS);
      await assert.rejects(extractPdf(await inflatingPdf(1_000_000)), (err: unknown) => {
        assert.ok(err instanceof ExtractionError, String(err));
        assert.deepEqual(
          [err.code, err.message],
          ['invalid_file', `Page 1 of the PDF needs more than ${THREAD_HEAP_MB} MB to read, the most a page may use.`],
        );
        return true;
      });
      // The next document is read as ever.
      assert.equal((await extractPdf(await textPdf(1, 1))).pages.length, 1);
    });

    it(`fails with invalid_file on a PDF of more than ${MAX_FILE_PAGES.toLocaleString('en')} pages, reading none of them`, async () => {
      let pagesRead = 0;
      await assert.rejects(extractPdf(await textPdf(MAX_FILE_PAGES + 1, 0), { onProgress: () => pagesRead++ }), (err: unknown) => {
        assert.ok(err instanceof ExtractionError, String(err));
        assert.deepEqual([err.code, err.message], ['invalid_file', 'The PDF has 10,001 pages; a file may have at most 10,000.']);
        return true;
      });
      assert.equal(pagesRead, 0);
    });

    it(`renders a scan larger than OCR reads at ${MAX_RENDER_SIDE} pixels on its long side`, async () => {
      // 200 inches square: 28,800 pixels at the scale asked, a 3 GB canvas.
      const png = await renderPage(await largeScanPdf(14_400), 1, 2);
      assert.deepEqual([png.readUInt32BE(16), png.readUInt32BE(20)], [MAX_RENDER_SIDE, MAX_RENDER_SIDE]);
    });
  });

  describe('errors', () => {
    it('fails with encrypted_file on a PDF that needs a password', async () => {
      await assertFails(extractPdf(await encryptedPdf()), 'encrypted_file');
    });

    it('fails with invalid_file on bytes that are not a PDF', async () => {
      await assertFails(extractPdf(garbage), 'invalid_file');
      await assertFails(extractPdf(Buffer.from('plainly not a pdf')), 'invalid_file');
    });
  });
});
