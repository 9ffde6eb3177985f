import assert from 'node:assert/strict';
import { sharedApi, newTenant, type Tenant, type TestApi } from '../support/api.js';
import * as fixtures from '../support/fixtures.js';
import { textImage } from '../support/image-fixtures.js';
import { m4aOf, spokenWav } from '../support/audio-fixtures.js';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventsFor } from '../../records/events.js';
import { pagesOf } from '../../records/files.js';

describe('file extraction', () => {
  let api: TestApi;
  let tenant: Tenant;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    tenant = await newTenant(api, 'extraction');
  });

  const spokenM4a = async () => {
    const dir = await mkdtemp(join(tmpdir(), 'agentplane-m4a-'));
    try {
      return await readFile(await m4aOf(await spokenWav(dir, 'voice.wav', 'testing the recorder')));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  };
  const cases: [string, () => Buffer | Promise<Buffer>, string, string, number][] = [
    ['plain text with two form feeds', () => Buffer.from('one\ftwo\fthree'), 'notes.txt', 'text/plain', 3],
    ['plain text without a form feed', () => Buffer.from('just one page'), 'one.txt', 'text/plain', 1],
    ['a two-page PDF', () => fixtures.pdf(['First page', 'Second page']), 'doc.pdf', 'application/pdf', 2],
    ['a PNG image', fixtures.png, 'pixel.png', 'image/png', 1],
    ['a JPEG image', () => textImage(['Hello']).jpeg, 'photo.jpg', 'image/jpeg', 1],
    ['a WAV recording', () => fixtures.wav(1), 'voice.wav', 'audio/wav', 0],
    ['an M4A recording', spokenM4a, 'voice.m4a', 'audio/mp4', 0],
  ];
  for (const [what, build, filename, mimeType, pages] of cases) {
    it(`takes ${what} from processing to processed with ${pages} page(s)`, async () => {
      const data = await build();
      const upload = await tenant.admin.upload({ file: { data, filename }, purpose: 'context' });
      assert.equal(upload.status, 200);
      assert.equal(upload.body.status, 'processing');
      assert.equal(upload.body.bytes, data.length);
      assert.equal(upload.body.filename, filename);
      assert.equal(upload.body.mime_type, mimeType);
      assert.deepEqual(upload.body.extracted, { pages: 0, tables: 0, graph_items: 0 });

      const file = await tenant.admin.settledFile(upload.body.id);
      assert.equal(file.status, 'processed');
      assert.deepEqual(file.extracted, { pages, tables: 0, graph_items: 0 });
      assert.equal(file.last_error, null);
      assert.ok(file.processed_at >= file.created_at);
    });
  }

  it('keeps the text of each page and records file.processed exactly once', async () => {
    const upload = await tenant.admin.upload({ file: { data: Buffer.from('alpha\fbeta'), filename: 'a.txt' }, purpose: 'attachment' });
    await tenant.admin.settledFile(upload.body.id);
    assert.deepEqual(await pagesOf(api.services.db, upload.body.id), ['alpha', 'beta']);
    const events = await eventsFor(api.services.db, tenant.projectId, 'file.processed', upload.body.id);
    assert.equal(events.length, 1);
    assert.deepEqual(events[0]!.data, { object: 'file', id: upload.body.id });
  });

  it('marks a PDF it cannot read as failed with invalid_file instead of leaving it processing', async () => {
    const broken = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.from('this is not a real document body'.repeat(10))]);
    const upload = await tenant.admin.upload({ file: { data: broken, filename: 'broken.pdf' }, purpose: 'context' });
    assert.equal(upload.status, 200);
    const file = await tenant.admin.settledFile(upload.body.id);
    assert.equal(file.status, 'failed');
    assert.equal(file.last_error.code, 'invalid_file');
    assert.equal(file.extracted.pages, 0);
  });
});
