import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ContentInspector, declaredTypeAgrees, MAX_FILE_BYTES, type SupportedType } from '../../api/routes/files/content-type.js';
import { ApiError } from '../../api/errors.js';
import * as fixtures from '../support/fixtures.js';

/** Streams `chunks` through an inspector and returns it with everything it passed on. */
async function inspect(chunks: Buffer[], limit?: number): Promise<{ inspector: ContentInspector; output: Buffer }> {
  const inspector = new ContentInspector(limit);
  const received: Buffer[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      received.push(chunk);
      done();
    },
  });
  await pipeline(Readable.from(chunks), inspector, sink);
  return { inspector, output: Buffer.concat(received) };
}

async function rejectsWith(chunks: Buffer[], status: number, code: string, limit?: number): Promise<void> {
  await assert.rejects(inspect(chunks, limit), (err: unknown) => {
    assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
    assert.equal(err.status, status);
    assert.equal(err.code, code);
    assert.equal(err.param, 'file');
    return true;
  });
}

/** Cuts `data` into pieces of `size` bytes. */
function chunked(data: Buffer, size: number): Buffer[] {
  const chunks: Buffer[] = [];
  for (let offset = 0; offset < data.length; offset += size) chunks.push(data.subarray(offset, offset + size));
  return chunks;
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('ContentInspector', () => {
  const samples: [SupportedType, () => Buffer][] = [
    ['application/pdf', () => fixtures.pdf(['One page'])],
    ['image/png', fixtures.png],
    ['image/jpeg', fixtures.jpeg],
    ['audio/wav', () => fixtures.wav(1)],
    ['audio/mp4', fixtures.m4a],
    ['text/plain', () => Buffer.from('plain words\non two lines\n')],
  ];
  for (const [type, build] of samples) {
    it(`detects ${type} and passes every byte through unchanged, counted and hashed`, async () => {
      const data = build();
      const { inspector, output } = await inspect(chunked(data, 7));
      assert.equal(inspector.detected, type);
      assert.equal(inspector.bytes, data.length);
      assert.equal(inspector.sha256, sha256(data));
      assert.deepEqual(output, data);
    });
  }

  it('detects a binary type whose first bytes arrive over many small chunks and a large remainder', async () => {
    const data = fixtures.wav(3);
    const { inspector, output } = await inspect([...chunked(data.subarray(0, 5000), 3), data.subarray(5000)]);
    assert.equal(inspector.detected, 'audio/wav');
    assert.equal(inspector.bytes, data.length);
    assert.equal(inspector.sha256, sha256(data));
    assert.deepEqual(output, data);
  });

  it('accepts text whose multi-byte characters are split between chunks, before and after the sniffed head', async () => {
    const text = `${'a'.repeat(4099)}€ and ${'ü'.repeat(3000)} and 😀 end`;
    const data = Buffer.from(text);
    // 4099 ASCII bytes then the first byte of € closes the first chunk; one-byte chunks split the rest.
    const { inspector, output } = await inspect([data.subarray(0, 4100), ...chunked(data.subarray(4100), 1)]);
    assert.equal(inspector.detected, 'text/plain');
    assert.equal(inspector.bytes, data.length);
    assert.equal(inspector.sha256, sha256(data));
    assert.equal(output.toString('utf8'), text);
  });

  it('accepts short text split in the middle of a character', async () => {
    const data = Buffer.from('naïve café');
    const { inspector } = await inspect([data.subarray(0, 3), data.subarray(3)]);
    assert.equal(inspector.detected, 'text/plain');
  });

  it('rejects invalid UTF-8 in the head with 415', async () => {
    await rejectsWith([Buffer.from([0x68, 0x69, 0xc3, 0x28])], 415, 'unsupported_file_type');
  });

  it('rejects invalid UTF-8 far past the head with 415', async () => {
    await rejectsWith([Buffer.from('a'.repeat(10_000)), Buffer.from([0xff]), Buffer.from('tail')], 415, 'unsupported_file_type');
  });

  it('rejects text that ends in the middle of a character with 415', async () => {
    await rejectsWith([Buffer.from('x'.repeat(5000)), Buffer.from('€').subarray(0, 2)], 415, 'unsupported_file_type');
  });

  it('rejects a NUL byte in otherwise valid text with 415, in the head and past it', async () => {
    await rejectsWith([Buffer.from('abc\u0000def')], 415, 'unsupported_file_type');
    await rejectsWith([Buffer.from('a'.repeat(5000)), Buffer.from('b\u0000')], 415, 'unsupported_file_type');
  });

  for (const [encoding, order, data] of [
    ['UTF-16', 'little-endian', Buffer.from('\ufeffA note saved by Notepad as Unicode.\r\n', 'utf16le')],
    ['UTF-16', 'big-endian', Buffer.from([0xfe, 0xff, 0x00, 0x68, 0x00, 0x69])],
    ['UTF-32', 'little-endian', Buffer.from([0xff, 0xfe, 0x00, 0x00, 0x68, 0x00, 0x00, 0x00])],
  ] as const) {
    it(`rejects ${encoding} ${order} text with 415 saying it is ${encoding} text and must be UTF-8, not naming another format`, async () => {
      await rejectsWith([data], 415, 'unsupported_file_type');
      await assert.rejects(inspect([data]), {
        message: `The file is ${encoding} text; plain text must be UTF-8. Save it as UTF-8 and upload it again.`,
      });
    });
  }

  it('rejects a GIF, a real image type that is not supported, with 415 naming its type', async () => {
    await rejectsWith([fixtures.gif()], 415, 'unsupported_file_type');
    await assert.rejects(inspect([fixtures.gif()]), /image\/gif/);
  });

  for (const text of [
    'BMW sales rose this year.\n',
    'ID3 tags describe MP3 files.\n',
    '<?xml version="1.0"?><note>hi</note>\n',
    'BEGIN:VCARD\nVERSION:3.0\nFN:Ada\nEND:VCARD\n',
    'MZ stands for Mark Zbikowski.\n',
  ]) {
    it(`takes UTF-8 text that starts like another format's signature for text: ${JSON.stringify(text.slice(0, 12))}`, async () => {
      const data = Buffer.from(text);
      const { inspector, output } = await inspect([data]);
      assert.equal(inspector.detected, 'text/plain');
      assert.deepEqual(output, data);
    });
  }

  it('rejects an empty payload with 400 empty_file', async () => {
    await rejectsWith([], 400, 'empty_file');
  });

  it('accepts exactly `limit` bytes and rejects `limit` + 1 with 413', async () => {
    const limit = 8192;
    const { inspector } = await inspect(chunked(Buffer.alloc(limit, 'a'), 1000), limit);
    assert.equal(inspector.bytes, limit);
    await rejectsWith(chunked(Buffer.alloc(limit + 1, 'a'), 1000), 413, 'file_too_large', limit);
    await rejectsWith([Buffer.alloc(limit + 1, 'a')], 413, 'file_too_large', limit);
    await rejectsWith(chunked(Buffer.alloc(limit + 1, 'a'), 3), 413, 'file_too_large', limit);
  });

  it('defaults its limit to 100 MB', () => {
    assert.equal(MAX_FILE_BYTES, 100 * 1024 * 1024);
  });
});

describe('declaredTypeAgrees', () => {
  it('accepts a missing, empty or generic declaration for every type', () => {
    for (const type of ['application/pdf', 'image/png', 'image/jpeg', 'audio/wav', 'audio/mp4', 'text/plain'] as const) {
      assert.equal(declaredTypeAgrees(undefined, type), true);
      assert.equal(declaredTypeAgrees('', type), true);
      assert.equal(declaredTypeAgrees('application/octet-stream', type), true);
      assert.equal(declaredTypeAgrees('Application/Octet-Stream; x=1', type), true);
    }
  });

  it('accepts the usual names of each type, ignoring case and parameters', () => {
    const agreeing: [string, SupportedType][] = [
      ['application/pdf', 'application/pdf'],
      ['application/x-pdf', 'application/pdf'],
      ['IMAGE/PNG', 'image/png'],
      ['image/jpeg', 'image/jpeg'],
      ['image/jpg', 'image/jpeg'],
      ['audio/wav', 'audio/wav'],
      ['audio/x-wav', 'audio/wav'],
      ['audio/vnd.wave', 'audio/wav'],
      ['audio/mp4', 'audio/mp4'],
      ['audio/x-m4a', 'audio/mp4'],
      ['text/plain; charset=utf-8', 'text/plain'],
      ['text/markdown', 'text/plain'],
      ['text/csv', 'text/plain'],
    ];
    for (const [declared, detected] of agreeing) assert.equal(declaredTypeAgrees(declared, detected), true, `${declared} for ${detected}`);
  });

  it('refuses a declaration naming another type', () => {
    const disagreeing: [string, SupportedType][] = [
      ['image/png', 'image/jpeg'],
      ['application/pdf', 'text/plain'],
      ['text/plain', 'application/pdf'],
      ['image/gif', 'image/png'],
      ['audio/mpeg', 'audio/mp4'],
      ['video/mp4', 'audio/mp4'],
      ['image/pngx', 'image/png'],
    ];
    for (const [declared, detected] of disagreeing)
      assert.equal(declaredTypeAgrees(declared, detected), false, `${declared} for ${detected}`);
  });
});
