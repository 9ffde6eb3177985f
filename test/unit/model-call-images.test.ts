import assert from 'node:assert/strict';
import { pino } from 'pino';
import { ModelCatalogue } from '../../models/catalogue.js';
import { imageOf, loadImages, MAX_IMAGE_BYTES_PER_CALL, type ModelCallRequest } from '../../models/model-call.js';

describe('images in one model call', () => {
  it('carries at most 20 MB of images, and tells the model which it left out', async () => {
    const catalogue = await ModelCatalogue.load({ OPENAI_API_KEY: 'sk-test' }, pino({ level: 'silent' }));
    const ids = Array.from({ length: 8 }, (_, i) => `file_${i}`);
    const request: ModelCallRequest = {
      model: catalogue.find('gpt-4.1-mini')!,
      messages: [{ role: 'user', content: ids.map((id) => ({ type: 'image' as const, file_id: id, media_type: 'image/jpeg' })) }],
      tools: [],
      settings: {},
      signal: new AbortController().signal,
      loadImage: async () => {
        return { data: Buffer.alloc(3_500_000), media_type: 'image/jpeg' };
      },
      onTextDelta: () => {},
    };
    const images = await loadImages(request);
    assert.deepEqual([...images.keys()], ids.slice(0, 5), 'the first five fit in 20 MB');
    assert.ok([...images.values()].reduce((sum, image) => sum + image.data.length, 0) <= MAX_IMAGE_BYTES_PER_CALL);
    assert.deepEqual(imageOf(images, { file_id: 'file_5', media_type: 'image/jpeg' }), {
      leftOut: '[The image of file file_5 is left out: one model call carries at most 20 MB of images.]',
    });
    assert.ok('base64' in imageOf(images, { file_id: 'file_0', media_type: 'image/jpeg' }));
  });

  it('needs no image reader for a call without images, and refuses images it cannot read', async () => {
    const catalogue = await ModelCatalogue.load({ OPENAI_API_KEY: 'sk-test' }, pino({ level: 'silent' }));
    const call = (content: ModelCallRequest['messages'][number]['content']): ModelCallRequest => ({
      model: catalogue.find('gpt-4.1-mini')!,
      messages: [{ role: 'user', content } as ModelCallRequest['messages'][number]],
      tools: [],
      settings: {},
      signal: new AbortController().signal,
    });
    assert.equal((await loadImages(call('Grade this answer.'))).size, 0);
    await assert.rejects(loadImages(call([{ type: 'image', file_id: 'file_0', media_type: 'image/png' }])), /carries images/);
  });
});
