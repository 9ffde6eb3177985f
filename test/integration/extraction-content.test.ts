import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sharedApi, newTenant, type Tenant } from '../support/api.js';
import { textImage } from '../support/image-fixtures.js';
import { m4aOf, spokenWav, wavDurationMs } from '../support/audio-fixtures.js';
import {
  borderlessTable,
  borderlessTablePdf,
  encryptedPdf,
  fruitTable,
  ruledTablePdf,
  scannedPdf,
  scannedWords,
  spanningTable,
  textPdf,
} from '../support/pdf-fixtures.js';

type Cell = { row: number; column: number; row_span: number; column_span: number; text: string };
type Part = {
  id: string;
  page: number | null;
  start_ms: number | null;
  end_ms: number | null;
  text: string;
  source: string;
  confidence: number | null;
};

/** The grid's texts as rows, from the API's cells. */
const rowsOf = (table: { rows: number; columns: number; cells: Cell[] }) => {
  const rows: (string | null)[][] = Array.from({ length: table.rows }, () => Array<string | null>(table.columns).fill(null));
  for (const c of table.cells) rows[c.row]![c.column] = c.text;
  return rows;
};

describe('what extraction makes of each kind of file, served by the content and tables endpoints', function () {
  this.timeout(180_000);
  let tenant: Tenant;

  before(async () => {
    tenant = await newTenant(await sharedApi(), 'extraction-content');
  });

  async function processed(data: Buffer | Uint8Array, filename: string, purpose: 'context' | 'attachment' = 'attachment') {
    const upload = await tenant.admin.upload({ purpose, file: { data: Buffer.from(data), filename } });
    assert.equal(upload.status, 200, JSON.stringify(upload.body));
    const file = await tenant.admin.settledFile(upload.body.id, 120_000);
    assert.equal(file.status, 'processed', JSON.stringify(file.last_error));
    return file;
  }

  const tablesOf = async (id: string) => (await tenant.admin.get(`/v1/files/${id}/tables`)).body.data;
  const contentOf = async (id: string): Promise<Part[]> => (await tenant.admin.get(`/v1/files/${id}/content?limit=100`)).body.data;

  for (const style of ['stroked', 'filled'] as const) {
    it(`finds a table whose rules are ${style === 'stroked' ? 'stroked lines' : 'thin filled rectangles'}, cell by cell, with its page and box`, async () => {
      const file = await processed(await ruledTablePdf(fruitTable, style), `${style}.pdf`);
      const tables = await tablesOf(file.id);
      assert.equal(file.extracted.tables, tables.length);
      assert.equal(tables.length, 1);
      const [table] = tables;
      assert.equal(table.page, 1);
      assert.equal(table.detection, 'ruled');
      assert.deepEqual(rowsOf(table), fruitTable.cells);
      assert.ok(Math.abs(table.box.x - fruitTable.xs[0]!) < 2 && Math.abs(table.box.y - fruitTable.ys[0]!) < 2, JSON.stringify(table.box));
    });
  }

  it('gives a cell that spans two columns once, with its span', async () => {
    const file = await processed(await ruledTablePdf(spanningTable, 'stroked'), 'spanning.pdf');
    const [table] = await tablesOf(file.id);
    const header = table.cells.find((c: Cell) => c.row === 0 && c.column === 0);
    assert.deepEqual([header.text, header.column_span, header.row_span], ['Fruit and count', 2, 1]);
    assert.equal(table.cells.filter((c: Cell) => c.row === 0).length, 2);
  });

  it('finds a borderless table from its aligned columns', async () => {
    const file = await processed(await borderlessTablePdf(), 'borderless.pdf');
    const [table] = await tablesOf(file.id);
    assert.equal(table.detection, 'aligned');
    assert.deepEqual(rowsOf(table), borderlessTable.cells);
  });

  it('reads a scanned page (no text layer) by OCR', async () => {
    const file = await processed(await scannedPdf(), 'scan.pdf');
    const [cover, scan, blank] = await contentOf(file.id);
    assert.deepEqual([cover!.source, cover!.text], ['text_layer', 'A cover page with real text']);
    assert.equal(scan!.source, 'ocr');
    assert.match(scan!.text, new RegExp(scannedWords));
    assert.ok((scan!.confidence ?? 0) > 60);
    assert.deepEqual([blank!.source, blank!.text], ['text_layer', ''], 'a blank page is not a scan');
  });

  it('keeps every page of a long PDF, in order', async () => {
    const file = await processed(await textPdf(150, 5), 'long.pdf');
    assert.equal(file.extracted.pages, 150);
    const first = await tenant.admin.get(`/v1/files/${file.id}/content?limit=100`);
    const rest = await tenant.admin.get(`/v1/files/${file.id}/content?limit=100&after=${first.body.last_id}`);
    const pages = [...first.body.data, ...rest.body.data] as Part[];
    assert.deepEqual(
      pages.map((p) => p.page),
      Array.from({ length: 150 }, (_, i) => i + 1),
    );
    assert.ok(
      pages.every((p) => p.text.startsWith(`Page ${p.page} line 1:`)),
      'each page holds its own text',
    );
  });

  it('reads the text in a PNG image by OCR', async () => {
    const image = textImage(['Quarterly revenue grew', 'in every region']);
    const file = await processed(image.png, 'slide.png');
    const [page] = await contentOf(file.id);
    assert.equal(page!.source, 'ocr');
    assert.match(page!.text, /Quarterly revenue grew/);
    assert.match(page!.text, /every region/);
  });

  it('finds CSV, TSV and Markdown tables in plain text', async () => {
    const text = [
      'Prices:',
      '',
      'item,price',
      'apple,"1,20"',
      'pear,0.80',
      '',
      '| a | b |',
      '|---|---|',
      '| 1 | 2 |',
      '',
      'x\ty',
      '3\t4',
    ].join('\n');
    const file = await processed(Buffer.from(text), 'tables.txt');
    const tables = await tablesOf(file.id);
    assert.equal(file.extracted.tables, 3);
    assert.deepEqual(
      tables.map((t: { detection: string }) => t.detection),
      ['delimited', 'delimited', 'delimited'],
    );
    assert.deepEqual(
      tables.map(rowsOf).sort(),
      [
        [
          ['item', 'price'],
          ['apple', '1,20'],
          ['pear', '0.80'],
        ],
        [
          ['a', 'b'],
          ['1', '2'],
        ],
        [
          ['x', 'y'],
          ['3', '4'],
        ],
      ].sort(),
    );
  });

  it('serves a text file without form feeds as pages of a million characters, a page of the list ending with the part that reaches 4 MiB', async () => {
    // 60,000 lines of 100 characters: six pages cut after a line, where the file was one page of 6 MB.
    const text = Array.from({ length: 60_000 }, (_, i) => `line ${String(i).padStart(5, '0')} `.padEnd(99, '.') + '\n').join('');
    const file = await processed(Buffer.from(text), 'long.txt');
    assert.equal(file.extracted.pages, 6);
    const first = await tenant.admin.get(`/v1/files/${file.id}/content?limit=100`);
    assert.deepEqual(
      [first.body.data.map((p: Part) => [p.id, p.text.length]), first.body.has_more],
      [[1, 2, 3, 4, 5].map((n) => [`page-${n}`, 1_000_000]), true],
    );
    const rest = await tenant.admin.get(`/v1/files/${file.id}/content?limit=100&after=page-5`);
    assert.deepEqual([rest.body.data.map((p: Part) => p.id), rest.body.has_more], [['page-6'], false]);
    assert.equal([...first.body.data, ...rest.body.data].map((p: Part) => p.text).join(''), text);
  });

  it('lists tables until they reach 4 MiB, and the rest after them', async () => {
    // Six CSV paragraphs of 400 rows of two 1,000-character cells: a page each, about 0.86 MB of cells each.
    const row = (r: number) => `${'a'.repeat(996)}${String(r).padStart(4, '0')},${'b'.repeat(1_000)}\n`;
    const paragraph = Array.from({ length: 400 }, (_, r) => row(r)).join('');
    const file = await processed(Buffer.from(Array(6).fill(paragraph).join('\n')), 'tables.txt');
    assert.equal(file.extracted.tables, 6);
    const first = await tenant.admin.get(`/v1/files/${file.id}/tables?limit=100`);
    assert.deepEqual(
      [first.body.data.map((t: { page: number; rows: number }) => [t.page, t.rows]), first.body.has_more],
      [[1, 2, 3, 4, 5].map((page) => [page, 400]), true],
    );
    const rest = await tenant.admin.get(`/v1/files/${file.id}/tables?limit=100&after=${first.body.data[4].id}`);
    assert.deepEqual([rest.body.data.map((t: { page: number }) => t.page), rest.body.has_more], [[6], false]);
  });

  it('fails an encrypted PDF with encrypted_file, and says why', async () => {
    const upload = await tenant.admin.upload({
      purpose: 'context',
      file: { data: Buffer.from(await encryptedPdf()), filename: 'locked.pdf' },
    });
    const file = await tenant.admin.settledFile(upload.body.id, 60_000);
    assert.equal(file.status, 'failed');
    assert.equal(file.last_error.code, 'encrypted_file');
    assert.match(file.last_error.message, /password|encrypt/i);
  });

  describe('audio', () => {
    let dir: string;
    const sentence = 'The meeting in London starts on Monday. Then the team flies to Berlin.';

    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'agentplane-audio-'));
    });

    after(async () => rm(dir, { recursive: true, force: true }));

    for (const kind of ['WAV', 'M4A'] as const) {
      it(`transcribes ${kind} speech into time-spanned segments, with no pages, and its places reach the graph with their time span`, async () => {
        const wav = await spokenWav(dir, `speech-${kind}.wav`, sentence);
        const durationMs = wavDurationMs(await readFile(wav));
        const data = await readFile(kind === 'WAV' ? wav : await m4aOf(wav));
        const file = await processed(data, `speech.${kind.toLowerCase()}`, 'context');
        assert.equal(file.extracted.pages, 0);
        const segments = await contentOf(file.id);
        assert.ok(segments.length > 0);
        for (const s of segments) {
          assert.equal(s.page, null);
          assert.equal(s.source, 'transcript');
          assert.ok(s.start_ms! >= 0 && s.end_ms! > s.start_ms! && s.end_ms! <= durationMs + 1000, JSON.stringify(s));
        }
        assert.match(segments[0]!.id, /^segment-1$/);
        const transcript = segments.map((s) => s.text).join(' ');
        assert.match(transcript, /London/);
        assert.match(transcript, /Berlin/);

        const search = await tenant.admin.get('/v1/graph/search?q=Berlin&type=place');
        const berlin = search.body.entities.find((e: { name: string }) => e.name === 'Berlin');
        const mention = berlin.sources.find((s: { file_id: string }) => s.file_id === file.id);
        assert.ok(mention, JSON.stringify(berlin.sources));
        assert.equal(mention.page, null);
        const segment = segments.find((s) => s.start_ms === mention.start_ms)!;
        assert.equal(segment.text.slice(mention.start, mention.end), 'Berlin');
      });
    }
  });
});
