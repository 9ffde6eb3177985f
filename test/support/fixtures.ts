/** Small, valid files of every supported type, built here so the tests need no binary fixtures. */
import { randomBytes } from 'node:crypto';
import { crc32, deflateSync } from 'node:zlib';

/** A PDF with one page per entry, each showing its text. */
export function pdf(pages: string[]): Buffer {
  const objects: string[] = [];
  const pageIds = pages.map((_, i) => 4 + i * 2);
  objects[1] = '<< /Type /Catalog /Pages 2 0 R >>';
  objects[2] = `<< /Type /Pages /Kids [${pageIds.map((id) => `${id} 0 R`).join(' ')}] /Count ${pages.length} >>`;
  objects[3] = '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>';
  pages.forEach((text, i) => {
    const stream = `BT /F1 12 Tf 72 720 Td (${text.replace(/[()\\]/g, '\\$&')}) Tj ET`;
    objects[4 + i * 2] =
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${5 + i * 2} 0 R >>`;
    objects[5 + i * 2] = `<< /Length ${Buffer.byteLength(stream)} >>\nstream\n${stream}\nendstream`;
  });
  let body = '%PDF-1.4\n';
  const offsets: number[] = [];
  for (let id = 1; id < objects.length; id++) {
    offsets[id] = Buffer.byteLength(body);
    body += `${id} 0 obj\n${objects[id]}\nendobj\n`;
  }
  const xref = Buffer.byteLength(body);
  body += `xref\n0 ${objects.length}\n0000000000 65535 f \n`;
  for (let id = 1; id < objects.length; id++) body += `${String(offsets[id]).padStart(10, '0')} 00000 n \n`;
  body += `trailer\n<< /Size ${objects.length} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(body, 'latin1');
}

function pngChunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([head, body, crc]);
}

/** A PNG of 8-bit greyscale (colour type 0) or RGB (2) rows, each row's filter byte included in `raw`. */
function pngOf(width: number, height: number, colourType: 0 | 2, raw: Buffer, level?: number): Buffer {
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = colourType;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw, { level })),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Rows of `channels` bytes a pixel, each filled by `fill` and led by its filter byte (none). */
function rawRows(width: number, height: number, channels: number, fill: (bytes: number) => Buffer): Buffer {
  const row = 1 + width * channels;
  const raw = fill(row * height);
  for (let y = 0; y < height; y++) raw[y * row] = 0;
  return raw;
}

const lightGrey = (bytes: number) => Buffer.alloc(bytes, 0xe0);

/**
 * A PNG stored without compression, so its bytes grow with its pixels and it is made at once: light grey, or
 * random colours (which no encoder can shrink much).
 */
export function uncompressedPng(width: number, height: number, pixels: 'grey' | 'noise' = 'grey'): Buffer {
  if (pixels === 'grey') return pngOf(width, height, 0, rawRows(width, height, 1, lightGrey), 0);
  return pngOf(width, height, 2, rawRows(width, height, 3, randomBytes), 0);
}

/** A light grey PNG of any size, compressed: 9,000 × 9,000 pixels (81 megapixels to decode) in about 80 KB. */
export function greyPng(width: number, height: number): Buffer {
  return pngOf(width, height, 0, rawRows(width, height, 1, lightGrey));
}

/** A 1×1 grey PNG. */
export function png(): Buffer {
  return pngOf(1, 1, 0, Buffer.from([0, 0x80]));
}

/** The start of a baseline JPEG (SOI and a JFIF APP0 segment) and its end marker. */
export function jpeg(): Buffer {
  return Buffer.from([
    0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, 0xff, 0xd9,
  ]);
}

/** `seconds` of 8 kHz mono 16-bit PCM silence. */
export function wav(seconds = 1): Buffer {
  const data = Buffer.alloc(8000 * 2 * seconds);
  return Buffer.concat([wavHeader(data.length), data]);
}

/** The 44-byte header of an 8 kHz mono 16-bit PCM WAV whose `dataBytes` of samples follow it. */
export function wavHeader(dataBytes: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + dataBytes, 4);
  header.write('WAVEfmt ', 8, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8000, 24);
  header.writeUInt32LE(16000, 28);
  header.writeUInt16LE(2, 32);
  header.writeUInt16LE(16, 34);
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(dataBytes, 40);
  return header;
}

/** An MPEG-4 audio file's `ftyp` box (brand M4A) followed by an empty `mdat`. */
export function m4a(): Buffer {
  const ftyp = Buffer.alloc(32);
  ftyp.writeUInt32BE(32, 0);
  ftyp.write('ftypM4A ', 4, 'latin1');
  ftyp.writeUInt32BE(0, 12);
  ftyp.write('M4A mp42isom\0\0\0\0', 16, 'latin1');
  const mdat = Buffer.alloc(8);
  mdat.writeUInt32BE(8, 0);
  mdat.write('mdat', 4, 'latin1');
  return Buffer.concat([ftyp, mdat]);
}

/** A GIF header: a real image type that is not supported. */
export function gif(): Buffer {
  return Buffer.from('GIF89a\x01\x00\x01\x00\x00\x00\x00;', 'latin1');
}
