import assert from 'node:assert/strict';
import { loadImage } from '@napi-rs/canvas';
import {
  MAX_VISION_IMAGE_BYTES,
  MAX_VISION_LONG_SIDE,
  visionImageOf,
  type VisionImage,
} from '../../workflows/extraction/engines/vision-image.js';
import { prepareForOcrInThread, visionImageInThread } from '../../workflows/extraction/engines/analysis-thread.js';
import { ExtractionError } from '../../workflows/extraction/engines/errors.js';
import type { OcrImage } from '../../workflows/extraction/engines/ocr-image.js';
import { greyPng, png, uncompressedPng } from '../support/fixtures.js';
import { longestStall } from '../support/stalls.js';

describe('the copy of an image that vision models are sent', function () {
  this.timeout(30_000);

  it('is the image itself when it is within 2,000 pixels and 3.5 MB', async () => {
    const small = png();
    const copy = await visionImageOf(small);
    assert.equal(copy.data, small);
    assert.deepEqual([copy.media_type, copy.width, copy.height], ['image/png', 1, 1]);
  });

  it('scales a larger image down to 2,000 pixels, as PNG when that fits', async () => {
    const copy = await visionImageOf(uncompressedPng(3000, 1500));
    assert.deepEqual([copy.media_type, copy.width, copy.height], ['image/png', 2000, 1000]);
    const decoded = await loadImage(copy.data);
    assert.deepEqual([decoded.width, decoded.height], [2000, 1000]);
  });

  it('encodes as JPEG, smaller still if need be, a PNG that stays over 3.5 MB once scaled', async () => {
    const noise = uncompressedPng(2200, 1100, 'noise');
    assert.ok(noise.length > MAX_VISION_IMAGE_BYTES);
    const copy = await visionImageOf(noise);
    assert.equal(copy.media_type, 'image/jpeg');
    assert.ok(copy.data.length <= MAX_VISION_IMAGE_BYTES, `${copy.data.length} bytes`);
    assert.ok(Math.max(copy.width, copy.height) <= MAX_VISION_LONG_SIDE);
    const decoded = await loadImage(copy.data);
    assert.deepEqual([decoded.width, decoded.height], [copy.width, copy.height]);
  });
});

describe('an image decoded and scaled for vision models and for OCR', function () {
  this.timeout(60_000);

  it("is decoded and scaled in a pool thread, this thread's timers served meanwhile", async () => {
    // 81 megapixels, near the most that is read: decoding and scaling them takes most of a second.
    const large = greyPng(9000, 9000);
    const vision = await longestStall(() => visionImageInThread(large));
    assert.equal(vision.settled.status, 'fulfilled');
    const copy = (vision.settled as PromiseFulfilledResult<VisionImage>).value;
    assert.deepEqual([copy.media_type, copy.width, copy.height], ['image/png', 2000, 2000]);
    const decoded = await loadImage(copy.data);
    assert.deepEqual([decoded.width, decoded.height], [2000, 2000]);
    assert.ok(vision.stalledMs < 200, `this thread's timers waited ${vision.stalledMs} ms for the vision copy`);

    const ocr = await longestStall(() => prepareForOcrInThread(large, 4000));
    assert.equal(ocr.settled.status, 'fulfilled');
    const prepared = (ocr.settled as PromiseFulfilledResult<OcrImage>).value;
    assert.deepEqual([prepared.width, prepared.height, prepared.scale], [4000, 4000, 4000 / 9000]);
    assert.equal(prepared.pgm.subarray(0, 16).toString('latin1'), 'P5\n4000 4000\n255');
    assert.ok(ocr.stalledMs < 200, `this thread's timers waited ${ocr.stalledMs} ms for OCR's copy`);
  });

  it('fails a file that is no image as the engines do, with invalid_file', async () => {
    for (const work of [
      () => visionImageInThread(Buffer.from('not an image')),
      () => prepareForOcrInThread(Buffer.from('not an image'), 4000),
    ]) {
      await assert.rejects(work(), (err: unknown) => {
        assert.ok(err instanceof ExtractionError);
        assert.equal(err.code, 'invalid_file');
        assert.equal(err.message, 'The image is neither a readable PNG nor a readable JPEG.');
        return true;
      });
    }
  });
});
