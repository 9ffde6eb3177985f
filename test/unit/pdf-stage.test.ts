import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pdfBatches, type PdfBatch } from '../../workflows/extraction/pdf-stage.js';
import { scannedPdf, scannedWords } from '../support/pdf-fixtures.js';

describe("a PDF's batches, in slices of time", function () {
  this.timeout(60_000);
  let dir: string;
  let path: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentplane-pdf-stage-'));
    path = join(dir, 'scan.pdf');
    // Page 1 has a text layer, page 2 is a scan, page 3 is blank.
    await writeFile(path, await scannedPdf());
  });

  after(() => rm(dir, { recursive: true, force: true }));

  const batchesOf = async (startPage: number, until?: number) => {
    const batches: PdfBatch[] = [];
    for await (const batch of pdfBatches(path, startPage, () => {}, until)) batches.push(batch);
    return batches;
  };

  it('reads every page in one batch when the slice has time', async () => {
    const [batch, ...rest] = await batchesOf(1);
    assert.deepEqual(rest, []);
    assert.deepEqual(
      batch!.pages.map((p) => p.page),
      [1, 2, 3],
    );
    assert.equal(batch!.more, false);
  });

  it("stops before the next scan once the slice's time is up, and the next slice reads from there to the end", async () => {
    const first = await batchesOf(1, 0);
    assert.equal(first.length, 1);
    assert.deepEqual(
      first[0]!.pages.map((p) => [p.page, p.source]),
      [[1, 'text_layer']],
    );
    assert.equal(first[0]!.more, true, 'the scan is left for the next slice');

    // A slice reads at least one page, so every slice moves on; a page with a text layer never waits for another.
    const second = await batchesOf(2, 0);
    assert.equal(second.length, 1);
    assert.deepEqual(
      second[0]!.pages.map((p) => [p.page, p.source]),
      [
        [2, 'ocr'],
        [3, 'text_layer'],
      ],
    );
    assert.match(second[0]!.pages[0]!.text, new RegExp(scannedWords));
    assert.equal(second[0]!.more, false, 'nothing is left');
  });
});
