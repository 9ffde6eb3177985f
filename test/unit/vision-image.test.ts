import assert from 'node:assert/strict';
import { loadImage } from '@napi-rs/canvas';
import { MAX_VISION_IMAGE_BYTES, MAX_VISION_LONG_SIDE, visionImageOf } from '../../workflows/extraction/engines/vision-image.js';
import { png, uncompressedPng } from '../support/fixtures.js';

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
