/**
 * The copy of an image that vision models are sent: within what the providers accept for one image, so that a
 * model call reads a small stored copy rather than the upload (up to 100 MB) and never sends what they refuse.
 */
import { createCanvas, loadImage, type Image } from '@napi-rs/canvas';
import { ExtractionError } from './errors.js';
import { dimensionsOf, MAX_SOURCE_PIXELS } from './ocr-image.js';

/** Pixels on the long side: Anthropic refuses more than 2,000 when a request carries many images. */
export const MAX_VISION_LONG_SIDE = 2000;
/** Bytes: Anthropic refuses images over 5 MB, base64 grows them by a third. */
export const MAX_VISION_IMAGE_BYTES = 3_500_000;
const JPEG_QUALITY = 85;
/** Each try past the byte bound shrinks the image by this much on each side. */
const SHRINK = 0.75;

export interface VisionImage {
  data: Buffer;
  media_type: 'image/png' | 'image/jpeg';
  width: number;
  height: number;
}

/**
 * The image itself when it is already within the bounds; otherwise scaled down to them and encoded again, as
 * PNG when the original is one and that fits, else as JPEG (transparency over white).
 */
export async function visionImageOf(image: Buffer): Promise<VisionImage> {
  const dimensions = dimensionsOf(image);
  if (!dimensions) throw new ExtractionError('invalid_file', 'The image is neither a readable PNG nor a readable JPEG.');
  const { format, width, height } = dimensions;
  const media_type = format === 'png' ? 'image/png' : 'image/jpeg';
  if (Math.max(width, height) <= MAX_VISION_LONG_SIDE && image.length <= MAX_VISION_IMAGE_BYTES)
    return { data: image, media_type, width, height };
  if (width * height > MAX_SOURCE_PIXELS) {
    throw new ExtractionError(
      'invalid_file',
      `The image is ${width}×${height} pixels; at most ${MAX_SOURCE_PIXELS / 1e6} megapixels are read.`,
    );
  }
  const decoded = await loadImage(image).catch((err: Error) => {
    throw new ExtractionError('invalid_file', `The ${format.toUpperCase()} could not be decoded: ${err.message}`);
  });
  let scale = Math.min(1, MAX_VISION_LONG_SIDE / Math.max(decoded.width, decoded.height));
  for (;;) {
    const smaller = await encoded(decoded, scale, format);
    if (smaller.data.length <= MAX_VISION_IMAGE_BYTES) return smaller;
    scale *= SHRINK;
  }
}

async function encoded(decoded: Image, scale: number, format: 'png' | 'jpeg'): Promise<VisionImage> {
  const width = Math.max(1, Math.round(decoded.width * scale));
  const height = Math.max(1, Math.round(decoded.height * scale));
  const canvas = createCanvas(width, height);
  const ctx = canvas.getContext('2d');
  ctx.imageSmoothingQuality = 'high';
  if (format === 'png') {
    ctx.drawImage(decoded, 0, 0, width, height);
    const png = await canvas.encode('png');
    if (png.length <= MAX_VISION_IMAGE_BYTES) return { data: png, media_type: 'image/png', width, height };
    // Too large as PNG: white goes behind what is drawn, for JPEG.
    ctx.globalCompositeOperation = 'destination-over';
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, width, height);
  } else {
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(0, 0, width, height);
    ctx.drawImage(decoded, 0, 0, width, height);
  }
  return { data: await canvas.encode('jpeg', JPEG_QUALITY), media_type: 'image/jpeg', width, height };
}
