import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { extractText } from '../../workflows/extraction/engines/text.js';
import { ExtractionError } from '../../workflows/extraction/engines/errors.js';

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
