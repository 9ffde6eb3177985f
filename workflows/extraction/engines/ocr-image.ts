/**
 * Turns PNG or JPEG bytes into what OCR reads: an opaque greyscale image (transparency over white), no
 * larger than a bound on its long side, as binary PGM, which Leptonica reads without decoding anything.
 */
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
    throw new ExtractionError('ocr_failed', `The image is ${width}×${height} pixels; OCR reads at most ${MAX_SOURCE_PIXELS / 1e6} megapixels.`);
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

/** The format and size a PNG's or JPEG's header declares, or null for anything else. */
export function dimensionsOf(bytes: Buffer): Dimensions | null {
  if (bytes.length >= 24 && bytes.readUInt32BE(0) === 0x89504e47 && bytes.readUInt32BE(4) === 0x0d0a1a0a && bytes.toString('latin1', 12, 16) === 'IHDR') {
    const width = bytes.readUInt32BE(16);
    const height = bytes.readUInt32BE(20);
    return width > 0 && height > 0 ? { format: 'png', width, height } : null;
  }
  if (bytes.length >= 4 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return jpegDimensions(bytes);
  return null;
}

// Walks the JPEG's marker segments to the first start-of-frame (SOF0–SOF15 but DHT, JPG and DAC).
function jpegDimensions(bytes: Buffer): Dimensions | null {
  let offset = 2;
  while (offset + 4 <= bytes.length) {
    if (bytes[offset] !== 0xff) return null;
    const marker = bytes[offset + 1]!;
    if (marker === 0xff) {
      offset++;
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2;
      continue;
    }
    const length = bytes.readUInt16BE(offset + 2);
    if (length < 2) return null;
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      if (offset + 9 > bytes.length) return null;
      const height = bytes.readUInt16BE(offset + 5);
      const width = bytes.readUInt16BE(offset + 7);
      return width > 0 && height > 0 ? { format: 'jpeg', width, height } : null;
    }
    offset += 2 + length;
  }
  return null;
}
