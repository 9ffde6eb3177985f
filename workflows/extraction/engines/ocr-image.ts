/**
 * Turns PNG or JPEG bytes into what OCR reads: an opaque greyscale image (transparency over white), no
 * larger than a bound on its long side, as binary PGM, which Leptonica reads without decoding anything.
 */
import { crc32 } from 'node:zlib';
import { createCanvas, loadImage } from '@napi-rs/canvas';
import { ExtractionError } from './errors.js';

export interface OcrImage {
  pgm: Buffer;
  width: number;
  height: number;
  /** The prepared image's size over the original's (1 unless it was downscaled). */
  scale: number;
}

export interface Dimensions {
  format: 'png' | 'jpeg';
  width: number;
  height: number;
}

/** Refused before decoding: 4 bytes a pixel while decoding would take 400 MB. */
export const MAX_SOURCE_PIXELS = 100_000_000;

export async function prepareForOcr(image: Buffer, maxLongSide: number): Promise<OcrImage> {
  const dimensions = dimensionsOf(image);
  if (!dimensions) throw new ExtractionError('invalid_file', 'The image is neither a readable PNG nor a readable JPEG.');
  const { width, height } = dimensions;
  if (width * height > MAX_SOURCE_PIXELS) {
    throw new ExtractionError(
      'ocr_failed',
      `The image is ${width}×${height} pixels; OCR reads at most ${MAX_SOURCE_PIXELS / 1e6} megapixels.`,
    );
  }

  const decoded = await loadImage(image).catch((err: Error) => {
    throw new ExtractionError('invalid_file', `The ${dimensions.format.toUpperCase()} could not be decoded: ${err.message}`);
  });
  if (decoded.width === 0 || decoded.height === 0) {
    throw new ExtractionError('invalid_file', `The ${dimensions.format.toUpperCase()} could not be decoded.`);
  }
  const scale = Math.min(1, maxLongSide / Math.max(decoded.width, decoded.height));
  const outWidth = Math.max(1, Math.round(decoded.width * scale));
  const outHeight = Math.max(1, Math.round(decoded.height * scale));

  const canvas = createCanvas(outWidth, outHeight);
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#ffffff';
  ctx.fillRect(0, 0, outWidth, outHeight);
  ctx.imageSmoothingQuality = 'high';
  ctx.drawImage(decoded, 0, 0, outWidth, outHeight);
  return { pgm: greyPgm(canvas.data(), outWidth, outHeight), width: outWidth, height: outHeight, scale };
}

/** RGBA pixels (opaque) → binary PGM with Rec. 601 luma. */
function greyPgm(rgba: Buffer, width: number, height: number): Buffer {
  const header = Buffer.from(`P5\n${width} ${height}\n255\n`, 'ascii');
  const out = Buffer.allocUnsafe(header.length + width * height);
  header.copy(out);
  for (let i = 0, o = header.length; o < out.length; i += 4, o++) {
    out[o] = (rgba[i]! * 299 + rgba[i + 1]! * 587 + rgba[i + 2]! * 114 + 500) / 1000;
  }
  return out;
}

/**
 * The format and size of a structurally sound PNG or JPEG, or null for anything else. The decoder
 * (Skia's, in @napi-rs/canvas) crashes the process on some malformed files rather than failing, so only
 * files whose structure checks out reach it: every PNG chunk within the file with a matching CRC, a valid
 * IHDR, image data and IEND; every JPEG segment up to the scan within the file, with a frame header.
 */
export function dimensionsOf(bytes: Buffer): Dimensions | null {
  if (bytes.length >= 8 && bytes.readUInt32BE(0) === 0x89504e47 && bytes.readUInt32BE(4) === 0x0d0a1a0a) return pngDimensions(bytes);
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return jpegDimensions(bytes);
  return null;
}

// Bit depths allowed for each PNG colour type.
const PNG_DEPTHS: Record<number, number[]> = { 0: [1, 2, 4, 8, 16], 2: [8, 16], 3: [1, 2, 4, 8], 4: [8, 16], 6: [8, 16] };

function pngDimensions(bytes: Buffer): Dimensions | null {
  let offset = 8;
  let dimensions: Dimensions | null = null;
  let sawData = false;
  while (offset + 12 <= bytes.length) {
    const length = bytes.readUInt32BE(offset);
    const end = offset + 12 + length;
    if (end > bytes.length) return null;
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    if (!/^[A-Za-z]{4}$/.test(type) || bytes.readUInt32BE(offset + 8 + length) !== crc32(bytes.subarray(offset + 4, offset + 8 + length)))
      return null;
    if (offset === 8) {
      if (type !== 'IHDR' || length !== 13) return null;
      const width = bytes.readUInt32BE(16);
      const height = bytes.readUInt32BE(20);
      const [depth, colour, compression, filter, interlace] = bytes.subarray(24, 29);
      if (width === 0 || height === 0 || width > 0x7fffffff || height > 0x7fffffff) return null;
      if (!PNG_DEPTHS[colour!]?.includes(depth!) || compression !== 0 || filter !== 0 || interlace! > 1) return null;
      dimensions = { format: 'png', width, height };
    } else if (type === 'IDAT') {
      sawData = true;
    } else if (type === 'IEND') {
      return sawData ? dimensions : null;
    }
    offset = end;
  }
  return null;
}

// Walks the JPEG's marker segments to the scan: a start-of-frame (SOF0–SOF15 but DHT, JPG and DAC) must come first.
function jpegDimensions(bytes: Buffer): Dimensions | null {
  let offset = 2;
  let dimensions: Dimensions | null = null;
  while (offset + 4 <= bytes.length) {
    if (bytes[offset] !== 0xff) return null;
    const marker = bytes[offset + 1]!;
    if (marker === 0xff) {
      offset++;
      continue;
    }
    if (marker === 0xd8 || marker === 0xd9 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) return null;
    const length = bytes.readUInt16BE(offset + 2);
    if (length < 2 || offset + 2 + length > bytes.length) return null;
    if (marker === 0xda) return dimensions && offset + 2 + length < bytes.length ? dimensions : null;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (dimensions || length < 8) return null;
      const precision = bytes[offset + 4]!;
      const height = bytes.readUInt16BE(offset + 5);
      const width = bytes.readUInt16BE(offset + 7);
      const components = bytes[offset + 9]!;
      if ((precision !== 8 && precision !== 12) || width === 0 || height === 0 || components < 1 || components > 4) return null;
      if (length !== 8 + components * 3) return null;
      dimensions = { format: 'jpeg', width, height };
    }
    offset += 2 + length;
  }
  return null;
}
