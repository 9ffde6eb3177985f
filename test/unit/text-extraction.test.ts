import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { extractText, MAX_TEXT_PAGE_CHARACTERS, pagesOf } from '../../workflows/extraction/engines/text.js';
import { ExtractionError } from '../../workflows/extraction/engines/errors.js';
import { MAX_FILE_PAGES } from '../../workflows/extraction/engines/content.js';

const stream = (chunks: (string | Buffer)[]) => Readable.from(chunks.map((c) => (typeof c === 'string' ? Buffer.from(c) : c)));
const ignoreProgress = () => {};

describe('text extraction', () => {
  it('makes one page per form feed', async () => {
    const result = await extractText(stream(['one\ftwo\fthree']), ignoreProgress);
    assert.deepEqual(result, { pages: ['one', 'two', 'three'], tables: [] });
  });

  it('splits pages on form feeds wherever the chunks break', async () => {
    const result = await extractText(stream(['al', 'pha\fbe', 'ta', '\f', '\fgam', 'ma\f', 'delta']), ignoreProgress);
    assert.deepEqual(result.pages, ['alpha', 'beta', '', 'gamma', 'delta']);
  });

  it('gives the same pages however the input is cut into chunks', async () => {
    const text = 'première page\fzweite Seite 😀\f第三页\fend';
    const data = Buffer.from(text);
    for (const size of [1, 2, 3, 5, 7, data.length]) {
      const chunks: Buffer[] = [];
      for (let offset = 0; offset < data.length; offset += size) chunks.push(data.subarray(offset, offset + size));
      const result = await extractText(stream(chunks), ignoreProgress);
      assert.deepEqual(result.pages, text.split('\f'), `chunks of ${size} bytes`);
    }
  });

  it('keeps a multi-byte character split between two chunks whole', async () => {
    const euro = Buffer.from('€');
    const result = await extractText(
      stream([Buffer.concat([Buffer.from('price: '), euro.subarray(0, 1)]), euro.subarray(1), '5']),
      ignoreProgress,
    );
    assert.deepEqual(result.pages, ['price: €5']);
  });

  it('gives text without a form feed one page', async () => {
    assert.deepEqual((await extractText(stream(['just one page']), ignoreProgress)).pages, ['just one page']);
  });

  it('gives an empty body one empty page', async () => {
    assert.deepEqual((await extractText(stream([]), ignoreProgress)).pages, ['']);
  });

  it(`goes on to a new page after ${MAX_TEXT_PAGE_CHARACTERS.toLocaleString('en')} characters, cut after a line`, async () => {
    const line = 'x'.repeat(99) + '\n';
    const text = line.repeat(25_000);
    const { pages } = await extractText(stream([text, '\fnext']), ignoreProgress);
    assert.deepEqual(
      pages.map((page) => page.length),
      [MAX_TEXT_PAGE_CHARACTERS, MAX_TEXT_PAGE_CHARACTERS, 500_000, 4],
    );
    assert.equal(pages.join(''), text + 'next');
  });

  it('cuts a long page after its last blank line, else its last line break, else at the limit but never inside a pair', () => {
    assert.deepEqual(pagesOf('aa\n\nbb\ncc\ndd', 8), ['aa\n\n', 'bb\ncc\ndd']);
    assert.deepEqual(pagesOf('a\r\n\r\nbbbbbbbbb', 8), ['a\r\n\r\n', 'bbbbbbbb', 'b']);
    assert.deepEqual(pagesOf('aaaa\nbbbbbbbbb', 8), ['aaaa\n', 'bbbbbbbb', 'b']);
    assert.deepEqual(pagesOf('abcdefghijklmnopq', 8), ['abcdefgh', 'ijklmnop', 'q']);
    assert.deepEqual(pagesOf('abcdefg😀xyz', 8), ['abcdefg', '😀xyz']);
    assert.deepEqual(pagesOf('abcdefgh', 8), ['abcdefgh']);
  });

  it(`takes ${MAX_FILE_PAGES.toLocaleString('en')} pages and fails with invalid_file on one more, before holding them all`, async () => {
    assert.equal((await extractText(stream(['\f'.repeat(MAX_FILE_PAGES - 1)]), ignoreProgress)).pages.length, MAX_FILE_PAGES);
    // 10 MB of form feeds was ten million pages, and about 600 MB of the worker's heap.
    await assert.rejects(extractText(stream(['\f'.repeat(10_000_000)]), ignoreProgress), (err: unknown) => {
      assert.ok(err instanceof ExtractionError, String(err));
      assert.deepEqual(
        [err.code, err.message],
        [
          'invalid_file',
          'The text has more than 10,000 pages (form feeds, or a million characters each); a file may have at most that many.',
        ],
      );
      return true;
    });
  });

  it('reports the bytes read so far after each chunk', async () => {
    const seen: number[] = [];
    await extractText(stream(['abc', 'de', '\ff']), (bytesRead) => seen.push(bytesRead));
    assert.deepEqual(seen, [3, 5, 7]);
  });

  for (const [what, chunks] of [
    ['an invalid byte', [Buffer.from('fine so far '), Buffer.from([0xff]), Buffer.from(' more')]],
    ['an overlong encoding', [Buffer.from([0x61, 0xc0, 0xaf])]],
    ['a character cut off at the end', [Buffer.from('ends with '), Buffer.from('€').subarray(0, 2)]],
  ] as const) {
    it(`fails with invalid_file on ${what}`, async () => {
      await assert.rejects(extractText(stream([...chunks]), ignoreProgress), (err: unknown) => {
        assert.ok(err instanceof ExtractionError, `expected an ExtractionError, got ${String(err)}`);
        assert.equal(err.code, 'invalid_file');
        return true;
      });
    });
  }

  it('passes on a failure of the stream itself', async () => {
    const failing = new Readable({
      read() {
        this.destroy(new Error('disk went away'));
      },
    });
    await assert.rejects(extractText(failing, ignoreProgress), /disk went away/);
  });
});
