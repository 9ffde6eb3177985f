import assert from 'node:assert/strict';
import { MockActivityEnvironment } from '@temporalio/testing';
import { newTenant, startTestApi, workerDependenciesOf, type Tenant, type TestApi } from '../support/api.js';
import { isolatedNamespace } from '../support/services.js';
import { eventsFor } from '../../records/events.js';
import { pagesOf } from '../../records/files.js';
import { createExtractionActivities, type ExtractionActivities } from '../../workflows/extraction/activities.js';

describe('the extraction activities on their own', function () {
  this.timeout(60_000);
  let api: TestApi;
  let tenant: Tenant;
  let activities: ExtractionActivities;

  before(async () => {
    // No worker polls this namespace: the uploads' workflows wait, and only this suite extracts.
    api = await startTestApi({ worker: false, namespace: await isolatedNamespace('extraction-activities') });
    tenant = await newTenant(api, 'extraction-activities');
    activities = createExtractionActivities(workerDependenciesOf(api.services));
  });

  after(async () => api?.stop());

  async function upload(text: string): Promise<string> {
    const uploaded = await tenant.admin.upload({ file: { data: Buffer.from(text), filename: 'notes.txt' }, purpose: 'context' });
    assert.equal(uploaded.status, 200);
    return uploaded.body.id;
  }

  it('extracts a file, then commits it processed once, and heartbeats the bytes it has read', async () => {
    const text = 'first page\fsecond page';
    const fileId = await upload(text);
    const env = new MockActivityEnvironment();
    const heartbeats: unknown[] = [];
    env.on('heartbeat', (details) => heartbeats.push(details));

    assert.equal(await env.run(activities.extractFileContent, { fileId }), 'extracted');
    assert.equal(
      (await tenant.admin.get(`/v1/files/${fileId}`)).body.status,
      'processing',
      'the content stage alone does not settle the file',
    );
    assert.equal(await new MockActivityEnvironment().run(activities.completeFileExtraction, { fileId }), 'processed');

    assert.ok(
      heartbeats.some((h) => (h as { bytesRead?: number } | undefined)?.bytesRead === Buffer.byteLength(text)),
      JSON.stringify(heartbeats),
    );
    assert.deepEqual(await pagesOf(api.services.db, fileId), ['first page', 'second page']);
    assert.equal((await tenant.admin.get(`/v1/files/${fileId}`)).body.status, 'processed');
    assert.equal(
      await new MockActivityEnvironment().run(activities.completeFileExtraction, { fileId }),
      'skipped',
      'a second run changes nothing',
    );
    assert.equal(
      await new MockActivityEnvironment().run(activities.extractFileContent, { fileId }),
      'skipped',
      'nor does extracting a processed file again',
    );
    assert.equal((await eventsFor(api.services.db, tenant.projectId, 'file.processed', fileId)).length, 1);
  });

  it('stops when cancelled before it began reading, as cancelled, and commits nothing', async () => {
    const fileId = await upload('never read');
    const env = new MockActivityEnvironment();
    env.cancel();

    await assert.rejects(env.run(activities.extractFileContent, { fileId }), { name: 'AbortError' });

    assert.equal((await tenant.admin.get(`/v1/files/${fileId}`)).body.status, 'processing');
    assert.deepEqual(await pagesOf(api.services.db, fileId), []);
  });

  it('stops reading when cancelled mid-file (the file was deleted), as cancelled, and commits nothing', async () => {
    const fileId = await upload('a long page '.repeat(100_000));
    const env = new MockActivityEnvironment();
    // Cancelled as soon as the first bytes are read, as a cancellation arrives with a heartbeat's answer.
    env.once('heartbeat', () => env.cancel());

    await assert.rejects(env.run(activities.extractFileContent, { fileId }), { name: 'AbortError' });

    assert.equal((await tenant.admin.get(`/v1/files/${fileId}`)).body.status, 'processing');
    assert.deepEqual(await pagesOf(api.services.db, fileId), []);
  });

  it('stores the same pages, embeddings and graph in slices as at once, each slice going on where the one before stopped', async function () {
    this.timeout(120_000);
    const people = ['Alice Martin', 'Bruno Keller', 'Chloe Dupont', 'Daniel Novak'];
    const pages = Array.from({ length: 60 }, (_, i) =>
      Array.from(
        { length: 8 },
        (_, line) => `${people[(i + line) % 4]} of Acme Corporation met ${people[(i + line + 1) % 4]} in Berlin on page ${i + 1}.`,
      ).join(' '),
    );
    const whole = await upload(pages.join('\f'));
    const sliced = await upload(pages.join('\f'));
    // At once, as for a workflow begun before there were slices.
    assert.equal(await new MockActivityEnvironment().run(activities.extractFileContent, { fileId: whole }), 'extracted');
    assert.equal(await new MockActivityEnvironment().run(activities.completeFileExtraction, { fileId: whole }), 'processed');
    // In slices with no time in them: each slice does one batch of the step it comes to.
    const slicing = createExtractionActivities({ ...workerDependenciesOf(api.services), fairShare: { extractionSliceSeconds: 0 } });
    let slices = 0;
    for (let outcome: string = 'more'; outcome === 'more'; slices++)
      outcome = await new MockActivityEnvironment().run(slicing.extractFileContent, { fileId: sliced, inSlices: true });
    assert.ok(slices >= 7, `${slices} slices for the content, 4 batches of embeddings and 3 of the graph`);
    assert.equal(await new MockActivityEnvironment().run(slicing.completeFileExtraction, { fileId: sliced }), 'processed');

    const [a, b] = await Promise.all([whole, sliced].map(async (id) => (await tenant.admin.get(`/v1/files/${id}`)).body));
    assert.deepEqual(b.extracted, a.extracted);
    assert.ok(a.extracted.graph_items > 0, JSON.stringify(a.extracted));
    const nodes = async (id: string) =>
      (
        (await tenant.admin.get(`/v1/files/${id}/nodes?limit=100`)).body.data as { name: string; mentions: number; relations: number }[]
      ).map(({ name, mentions, relations }) => [name, mentions, relations]);
    assert.deepEqual(await nodes(sliced), await nodes(whole));
    const embedded = async (id: string) =>
      (await api.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM file_page_embeddings WHERE file_id = $1', [id])).rows[0]!
        .n;
    assert.equal(await embedded(sliced), await embedded(whole));
    assert.deepEqual(await pagesOf(api.services.db, sliced), pages);
  });
});
