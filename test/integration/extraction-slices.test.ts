/**
 * Long files among projects: a scanned PDF's or a recording's content stage, and a long context file's
 * embeddings, hold an extraction slot (and a recording the speech sidecar) for a slice of time at a time, not for
 * the whole file, and another project's file uploaded meanwhile is extracted between two slices. Each slice
 * resumes after what the ones before it stored.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Stoppable } from '../../cli/processes.js';
import { serveWorker } from '../../cli/worker-process.js';
import { DEFAULT_FAIR_SHARE } from '../../workflows/project-shares.js';
import { newTenant, startTestApi, workflowBundle, type Tenant, type TestApi } from '../support/api.js';
import { spacedSpeechWav, TALK } from '../support/audio-fixtures.js';
import { eventually } from '../support/eventually.js';
import { scannedPagesPdf } from '../support/pdf-fixtures.js';
import { isolatedNamespace } from '../support/services.js';

describe('AGENTPLANE_EXTRACTION_SLICE_SECONDS', () => {
  const namespace = 'extraction-slices';
  let api: TestApi;
  let worker: Stoppable | undefined;
  let dir: string;

  before(async function () {
    this.timeout(120_000);
    dir = await mkdtemp(join(tmpdir(), 'agentplane-slices-'));
    api = await startTestApi({
      namespace: await isolatedNamespace(namespace),
      worker: false,
      fairShare: { ...DEFAULT_FAIR_SHARE, extractionSliceSeconds: 1 },
    });
    // One extraction stage at a time: the other project's file can only go between the long file's slices.
    worker = await serveWorker(api.services, api.temporalAddress, namespace, await workflowBundle(), undefined, 1);
  });

  after(async () => {
    await worker?.stop();
    await api?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  type PartsTable = 'file_pages' | 'file_page_embeddings' | 'file_graph_drafts';
  const partsStored = async (fileId: string, table: PartsTable = 'file_pages') => {
    const { rows } = await api.services.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table} WHERE file_id = $1`, [fileId]);
    return rows[0]!.n;
  };

  /**
   * Uploads the long file and, once `begun` (by default, once its first slice has stored a part), another
   * project's note: the note is processed while the long file is still processing. Answers the long file, processed.
   */
  const noteGoesBetweenSlices = async (
    data: Buffer,
    filename: string,
    purpose = 'attachment',
    begun = async (id: string) => (await partsStored(id)) > 0,
  ) => {
    const owner = await newTenant(api, `owner of ${filename}`);
    const uploaded = await owner.admin.upload({ file: { data, filename }, purpose });
    assert.equal(uploaded.status, 200, JSON.stringify(uploaded.body));
    const long = uploaded.body.id as string;
    await eventually(
      async () => {
        const { body } = await owner.admin.get(`/v1/files/${long}`);
        assert.ok(await begun(long), `${filename} has not come far enough yet: ${JSON.stringify(body)}`);
      },
      { timeoutMs: 120_000 },
    );

    const other = await newTenant(api, `beside ${filename}`);
    const note = await other.admin.upload({ file: { data: Buffer.from('a short note'), filename: 'note.txt' }, purpose: 'attachment' });
    assert.equal(note.status, 200, JSON.stringify(note.body));
    const noteFile = await other.admin.settledFile(note.body.id as string, 120_000);
    assert.equal(noteFile.status, 'processed', JSON.stringify(noteFile));
    const meanwhile = await owner.admin.get(`/v1/files/${long}`);
    assert.equal(meanwhile.body.status, 'processing', `the note waited for the whole of ${filename}`);

    const longFile = await owner.admin.settledFile(long, 240_000);
    assert.equal(longFile.status, 'processed', JSON.stringify(longFile));
    return { owner, file: longFile };
  };

  const contentOf = async (tenant: Tenant, id: string) => {
    const content = await tenant.admin.get(`/v1/files/${id}/content?limit=100`);
    assert.equal(content.status, 200, JSON.stringify(content.body));
    return content.body.data as { page: number | null; start_ms: number | null; end_ms: number | null; text: string; source: string }[];
  };

  it("extracts another project's file between slices of a long scan, and stores each of the scan's pages once, in order", async function () {
    this.timeout(300_000);
    const PAGES = 16;
    const { owner, file } = await noteGoesBetweenSlices(Buffer.from(await scannedPagesPdf(PAGES)), 'archive.pdf');
    assert.equal(file.extracted.pages, PAGES);
    const parts = await contentOf(owner, file.id as string);
    assert.deepEqual(
      parts.map((p) => p.page),
      Array.from({ length: PAGES }, (_, i) => i + 1),
    );
    for (const part of parts) {
      assert.equal(part.source, 'ocr');
      assert.match(part.text, new RegExp(`SCANNED PAGE ${part.page}\\b`), `page ${part.page} holds another page's words`);
    }
  });

  it("extracts another project's file between slices of a long context file's embeddings, and embeds each page once", async function () {
    this.timeout(300_000);
    // 240 pages: embedding them takes about ten seconds, a slice of 1 s embeds a few batches of 16 at a time.
    const PAGES = 240;
    const pages = Array.from({ length: PAGES }, (_, i) =>
      Array.from(
        { length: 12 },
        (_, line) => `Page ${i + 1}, line ${line + 1}: how the shelves of aisle ${i + 1} are stocked and counted.`,
      ).join('\n'),
    );
    const { file } = await noteGoesBetweenSlices(
      Buffer.from(pages.join('\f')),
      'handbook.txt',
      'context',
      async (id) => (await partsStored(id, 'file_page_embeddings')) > 0,
    );
    assert.equal(file.extracted.pages, PAGES);
    assert.equal(await partsStored(file.id as string, 'file_page_embeddings'), PAGES);
  });

  it("extracts another project's file between slices of a long context file's graph, and commits every item found", async function () {
    this.timeout(300_000);
    // 150 pages of people, places and companies: six batches of 25 pages, each about a second of analysis.
    const PAGES = 150;
    const people = ['Alice Martin', 'Bruno Keller', 'Chloe Dupont', 'Daniel Novak', 'Elena Rossi', 'Farid Haddad'];
    const places = ['Berlin', 'Lisbon', 'Vienna', 'Madrid', 'Warsaw', 'Oslo'];
    const pages = Array.from({ length: PAGES }, (_, i) =>
      Array.from(
        { length: 30 },
        (_, line) =>
          `${people[(i + line) % people.length]} of Acme Corporation met ${people[(i + line + 1) % people.length]} in ${places[line % places.length]} on page ${i + 1}, line ${line + 1}, to agree the shipment.`,
      ).join(' '),
    );
    pages[PAGES - 1] += ' Zora Lindqvist of Nordic Freight signed for it in Oslo.';
    // The note comes once every page is embedded: what is left is the graph.
    const { owner, file } = await noteGoesBetweenSlices(
      Buffer.from(pages.join('\f')),
      'ledger.txt',
      'context',
      async (id) => (await partsStored(id, 'file_page_embeddings')) === PAGES,
    );
    assert.equal(file.extracted.pages, PAGES);
    assert.ok(file.extracted.graph_items > PAGES * 30, JSON.stringify(file.extracted));
    assert.equal(await partsStored(file.id as string, 'file_graph_drafts'), 0, 'the drafts outlive the file');
    // The last slice's items are the file's as much as the first's.
    const search = await owner.admin.get(`/v1/graph/search?q=${encodeURIComponent('Zora Lindqvist')}`);
    assert.equal(search.status, 200, JSON.stringify(search.body));
    const zora = (search.body.entities as { name: string; sources: { file_id: string; page: number | null }[] }[]).find(
      (e) => e.name === 'Zora Lindqvist',
    );
    assert.deepEqual(
      zora?.sources.map((s) => [s.file_id, s.page]),
      [[file.id, PAGES]],
      JSON.stringify(search.body.entities),
    );
  });

  it("extracts another project's file between windows of a long recording, whose segments follow one another once each", async function () {
    this.timeout(300_000);
    // Four minutes: a sentence at the start of every 30 s. A slice of 1 s hears a window of 30 s at a time.
    const talk = TALK.slice(0, 8);
    const recording = await readFile(
      await spacedSpeechWav(
        dir,
        'meeting.wav',
        talk.map((t) => t.sentence),
        30,
      ),
    );
    const { owner, file } = await noteGoesBetweenSlices(recording, 'meeting.wav');
    const segments = await contentOf(owner, file.id as string);
    assert.ok(segments.length >= 3, JSON.stringify(segments));
    for (const [i, segment] of segments.entries()) {
      assert.equal(segment.source, 'transcript');
      if (i > 0) assert.ok(segment.start_ms! >= segments[i - 1]!.end_ms!, `"${segment.text}" overlaps the segment before it`);
    }
    const heard = segments.flatMap((s) => s.text.toLowerCase().match(/[a-z]+/g) ?? []);
    const keys = talk.map(({ key }) => heard.filter((word) => word === key).length);
    assert.ok(
      keys.filter((n) => n === 1).length >= 6 && keys.every((n) => n <= 1),
      `the sentences' keys are heard ${keys.join(', ')} times in: ${heard.join(' ')}`,
    );
  });
});
