import assert from 'node:assert/strict';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { newTenant, workerDependenciesOf, sharedApi, startTestApi, workflowBundle, type Tenant, type TestApi } from '../support/api.js';
import { eventually } from '../support/eventually.js';
import { isolatedNamespace } from '../support/services.js';
import type { ApiClient, ApiResponse } from '../support/client.js';
import { eventsFor } from '../../records/events.js';
import { newId } from '../../records/ids.js';
import type { Db } from '../../records/db.js';
import { extractionWorkflowId } from '../../workflows/extraction/client.js';
import { createWorker } from '../../workflows/worker.js';

type FileObject = {
  id: string;
  status: string;
  purpose: string;
  extracted: { pages: number; tables: number; graph_items: number };
} & Record<string, unknown>;

async function uploadText(
  client: ApiClient,
  text: string,
  options: { filename?: string; purpose?: string; metadata?: Record<string, string> } = {},
): Promise<FileObject> {
  const upload = await client.upload({
    file: { data: Buffer.from(text), filename: options.filename ?? 'notes.txt', type: 'text/plain' },
    purpose: options.purpose ?? 'context',
    metadata: options.metadata,
  });
  assert.equal(upload.status, 200, JSON.stringify(upload.body));
  return upload.body;
}

async function processed(client: ApiClient, id: string): Promise<FileObject> {
  const file = await client.settledFile<FileObject>(id);
  assert.equal(file.status, 'processed', JSON.stringify(file));
  return file;
}

function assertError(response: ApiResponse, status: number, code: string, param?: string | null): void {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error.code, code, JSON.stringify(response.body));
  if (param !== undefined) assert.equal(response.body.error.param, param, JSON.stringify(response.body));
}

async function blobKeyOf(db: Db, fileId: string): Promise<string> {
  const { rows } = await db.query<{ blob_key: string }>('SELECT blob_key FROM files WHERE id = $1', [fileId]);
  assert.ok(rows[0], `no file row for ${fileId}`);
  return rows[0].blob_key;
}

const count = async (db: Db, sql: string, params: unknown[]) =>
  Number((await db.query<{ n: string }>(`SELECT count(*) AS n FROM ${sql}`, params)).rows[0]!.n);

/** What graph extraction will write: nodes shared per project, items per file, and the file's count. */
class GraphWriter {
  constructor(
    private readonly db: Db,
    private readonly projectId: string,
  ) {}

  async node(entityType: string, canonicalName: string): Promise<string> {
    const id = newId('node');
    await this.db.query('INSERT INTO graph_nodes (id, project_id, entity_type, canonical_name) VALUES ($1, $2, $3, $4)', [
      id,
      this.projectId,
      entityType,
      canonicalName,
    ]);
    return id;
  }

  async entity(fileId: string, nodeId: string): Promise<string> {
    return this.item(fileId, { kind: 'entity', nodeId });
  }

  async relation(fileId: string, source: string, relation: string, target: string): Promise<string> {
    return this.item(fileId, { kind: 'relation', source, relation, target });
  }

  async recount(fileId: string): Promise<void> {
    await this.db.query('UPDATE files SET graph_items = (SELECT count(*) FROM graph_items WHERE file_id = $1) WHERE id = $1', [fileId]);
  }

  private async item(
    fileId: string,
    item: { kind: string; nodeId?: string; source?: string; relation?: string; target?: string },
  ): Promise<string> {
    const id = newId('gi');
    await this.db.query(
      `INSERT INTO graph_items (id, project_id, file_id, kind, node_id, source_node, target_node, relation, provenance)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        id,
        this.projectId,
        fileId,
        item.kind,
        item.nodeId ?? null,
        item.source ?? null,
        item.target ?? null,
        item.relation ?? null,
        { page: 1, start: 0, end: 10 },
      ],
    );
    return id;
  }
}

interface ListPage {
  object: string;
  data: FileObject[];
  first_id: string | null;
  last_id: string | null;
  has_more: boolean;
}

async function list(client: ApiClient, query: Record<string, string | number> = {}): Promise<ListPage> {
  const search = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)]));
  const response = await client.get(`/v1/files${search.size > 0 ? `?${search}` : ''}`);
  assert.equal(response.status, 200, JSON.stringify(response.body));
  const page = response.body as ListPage;
  assert.deepEqual(Object.keys(page).sort(), ['data', 'first_id', 'has_more', 'last_id', 'object']);
  assert.equal(page.object, 'list');
  assert.equal(page.first_id, page.data[0]?.id ?? null);
  assert.equal(page.last_id, page.data[page.data.length - 1]?.id ?? null);
  return page;
}

/** Follows `after` (or `before`) from page to page; returns the ids in the order read and each page's size. */
async function walk(client: ApiClient, query: Record<string, string | number>, direction: 'after' | 'before', start?: string) {
  const ids: string[] = [];
  const sizes: number[] = [];
  let cursor = start;
  for (let pages = 0; pages < 50; pages++) {
    const page = await list(client, { ...query, ...(cursor ? { [direction]: cursor } : {}) });
    const pageIds = page.data.map((f) => f.id);
    if (direction === 'after') ids.push(...pageIds);
    else ids.unshift(...pageIds);
    sizes.push(pageIds.length);
    if (!page.has_more) return { ids, sizes };
    cursor = (direction === 'after' ? page.last_id : page.first_id)!;
  }
  throw new Error('pagination did not end within 50 pages');
}

describe('file lifecycle', () => {
  let api: TestApi;
  let tenant: Tenant;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    tenant = await newTenant(api, 'lifecycle');
  });

  describe('GET /v1/files/:id', () => {
    it('shows a processed file with its extraction results', async () => {
      const uploaded = await uploadText(tenant.admin, 'first\fsecond', { filename: 'two-pages.txt', metadata: { team: 'search' } });
      const file = await processed(tenant.admin, uploaded.id);
      assert.deepEqual(file, {
        id: uploaded.id,
        object: 'file',
        filename: 'two-pages.txt',
        bytes: 12,
        purpose: 'context',
        status: 'processed',
        mime_type: 'text/plain',
        extracted: { pages: 2, tables: 0, graph_items: 0 },
        metadata: { team: 'search' },
        last_error: null,
        created_at: uploaded.created_at,
        processed_at: file.processed_at,
      });
      assert.equal(typeof file.processed_at, 'number');
      assert.ok((file.processed_at as number) >= (file.created_at as number));
    });

    it('answers 404 for an id no file has', async () => {
      assertError(await tenant.admin.get('/v1/files/file_doesnotexist000000000000'), 404, 'resource_not_found', 'id');
    });

    it("answers 404 for another project's file, as if it did not exist", async () => {
      const uploaded = await uploadText(tenant.admin, 'private');
      const other = await newTenant(api, 'lifecycle-other');
      assertError(await other.admin.get(`/v1/files/${uploaded.id}`), 404, 'resource_not_found', 'id');
    });
  });

  describe('GET /v1/files', () => {
    let lister: Tenant;
    /** Oldest first, as uploaded. */
    const uploaded: FileObject[] = [];
    const purposes = ['context', 'attachment', 'context', 'context', 'attachment', 'context', 'attachment'];

    before(async function () {
      this.timeout(120_000);
      lister = await newTenant(api, 'lifecycle-list');
      for (const [i, purpose] of purposes.entries())
        uploaded.push(await uploadText(lister.admin, `file number ${i}`, { filename: `f${i}.txt`, purpose }));
      for (const file of uploaded) await processed(lister.admin, file.id);
    });

    const newestFirst = () => uploaded.map((f) => f.id).reverse();
    const oldestFirst = () => uploaded.map((f) => f.id);

    it('answers an empty list for a project without files', async () => {
      const empty = await newTenant(api, 'lifecycle-empty');
      assert.deepEqual(await list(empty.admin), { object: 'list', data: [], first_id: null, last_id: null, has_more: false });
    });

    it("lists the project's files newest first, and only them", async () => {
      const page = await list(lister.admin);
      assert.deepEqual(
        page.data.map((f) => f.id),
        newestFirst(),
      );
      assert.equal(page.has_more, false);
      assert.deepEqual(page.data[0], (await lister.admin.get(`/v1/files/${page.data[0]!.id}`)).body);
    });

    it('walks every file exactly once, newest first, following `after`', async () => {
      for (const limit of [1, 2, 3, 7]) {
        const { ids, sizes } = await walk(lister.admin, { limit }, 'after');
        assert.deepEqual(ids, newestFirst(), `limit ${limit}`);
        assert.deepEqual(
          sizes,
          Array.from({ length: Math.ceil(7 / limit) }, (_, i) => Math.min(limit, 7 - i * limit)),
          `limit ${limit}`,
        );
      }
    });

    it('walks every file exactly once, oldest first, with `order=asc`', async () => {
      for (const limit of [1, 3, 7]) {
        const { ids } = await walk(lister.admin, { limit, order: 'asc' }, 'after');
        assert.deepEqual(ids, oldestFirst(), `limit ${limit}`);
      }
    });

    it('says there is more only while there is', async () => {
      assert.equal((await list(lister.admin, { limit: 6 })).has_more, true);
      assert.equal((await list(lister.admin, { limit: 7 })).has_more, false);
      const last = newestFirst()[5]!;
      const tail = await list(lister.admin, { limit: 1, after: last });
      assert.deepEqual(
        tail.data.map((f) => f.id),
        [newestFirst()[6]],
      );
      assert.equal(tail.has_more, false);
      const past = await list(lister.admin, { after: newestFirst()[6]! });
      assert.deepEqual(past, { object: 'list', data: [], first_id: null, last_id: null, has_more: false });
    });

    it('walks back with `before`, in both orders', async () => {
      for (const [order, expected] of [
        ['desc', newestFirst()],
        ['asc', oldestFirst()],
      ] as const) {
        const from = expected[expected.length - 1]!;
        const { ids, sizes } = await walk(lister.admin, { limit: 2, order }, 'before', from);
        assert.deepEqual(ids, expected.slice(0, -1), order);
        assert.deepEqual(sizes, [2, 2, 2], order);
      }
    });

    it('gives back the previous page with `before` the first id of the next', async () => {
      const first = await list(lister.admin, { limit: 3 });
      const second = await list(lister.admin, { limit: 3, after: first.last_id! });
      assert.deepEqual(
        second.data.map((f) => f.id),
        newestFirst().slice(3, 6),
      );
      const back = await list(lister.admin, { limit: 3, before: second.first_id! });
      assert.deepEqual(
        back.data.map((f) => f.id),
        first.data.map((f) => f.id),
      );
      assert.equal(back.has_more, false);
      const partial = await list(lister.admin, { limit: 3, before: newestFirst()[4]! });
      assert.deepEqual(
        partial.data.map((f) => f.id),
        newestFirst().slice(1, 4),
      );
      assert.equal(partial.has_more, true);
    });

    it('accepts limits of 1 and 100', async () => {
      const one = await list(lister.admin, { limit: 1 });
      assert.deepEqual(
        one.data.map((f) => f.id),
        newestFirst().slice(0, 1),
      );
      assert.equal(one.has_more, true);
      const hundred = await list(lister.admin, { limit: 100 });
      assert.deepEqual(
        hundred.data.map((f) => f.id),
        newestFirst(),
      );
      assert.equal(hundred.has_more, false);
    });

    for (const limit of ['0', '101', '-1', '1.5', 'ten', '']) {
      it(`answers 400 for limit=${limit}`, async () => {
        assertError(await lister.admin.get(`/v1/files?limit=${limit}`), 400, 'invalid_parameter', 'limit');
      });
    }

    it('answers 400 for an order other than asc or desc', async () => {
      assertError(await lister.admin.get('/v1/files?order=newest'), 400, 'invalid_parameter', 'order');
    });

    it('answers 400 invalid_cursor for a cursor no file of the project has', async () => {
      assertError(await lister.admin.get('/v1/files?after=file_doesnotexist000000000000'), 400, 'invalid_cursor', 'after');
      assertError(await lister.admin.get('/v1/files?before=file_doesnotexist000000000000'), 400, 'invalid_cursor', 'before');
      const elsewhere = await uploadText(tenant.admin, 'in another project');
      assertError(await lister.admin.get(`/v1/files?after=${elsewhere.id}`), 400, 'invalid_cursor', 'after');
    });

    it('answers 400 for `after` and `before` together', async () => {
      const [a, b] = newestFirst();
      assertError(await lister.admin.get(`/v1/files?after=${a}&before=${b}`), 400, 'invalid_parameter', 'before');
    });

    it('filters by purpose, also across pages', async () => {
      for (const purpose of ['context', 'attachment']) {
        const expected = uploaded
          .filter((f) => f.purpose === purpose)
          .map((f) => f.id)
          .reverse();
        const { ids } = await walk(lister.admin, { purpose, limit: 2 }, 'after');
        assert.deepEqual(ids, expected, purpose);
      }
    });

    it('answers 400 for an unknown purpose', async () => {
      assertError(await lister.admin.get('/v1/files?purpose=training'), 400, 'invalid_parameter', 'purpose');
    });

    it('answers 400 for an unknown query parameter, naming it', async () => {
      assertError(await lister.admin.get('/v1/files?status=processed'), 400, 'unknown_parameter', 'status');
    });

    it('answers 400 for a parameter given twice', async () => {
      assertError(await lister.admin.get('/v1/files?limit=1&limit=2'), 400, 'invalid_parameter', 'limit');
    });

    it('lists with a files:read key and refuses a key without it', async () => {
      assert.equal((await list(await lister.keyWith('files:read'))).data.length, 7);
      assertError(await (await lister.keyWith('files:write')).get('/v1/files'), 403, 'missing_scope');
    });
  });

  describe('DELETE /v1/files/:id', () => {
    it('removes the file, its graph items, the nodes only it supported, its pages and its blob; shared nodes stay', async () => {
      const db = api.services.db;
      const graph = new GraphWriter(db, tenant.projectId);
      const doomed = await processed(tenant.admin, (await uploadText(tenant.admin, 'notes on an old machine\fwho designed it')).id);
      const survivor = await processed(tenant.admin, (await uploadText(tenant.admin, 'more notes on machines')).id);

      const ada = await graph.node('person', 'ada lovelace');
      const engine = await graph.node('machine', 'analytical engine');
      const babbage = await graph.node('person', 'charles babbage');
      const difference = await graph.node('machine', 'difference engine');
      const doomedItems = [
        await graph.entity(doomed.id, ada),
        await graph.entity(doomed.id, engine),
        await graph.relation(doomed.id, ada, 'wrote_about', engine),
        await graph.relation(doomed.id, engine, 'designed_by', babbage),
      ];
      const survivorItems = [await graph.entity(survivor.id, ada), await graph.relation(survivor.id, ada, 'mentions', difference)];
      await graph.recount(doomed.id);
      await graph.recount(survivor.id);

      const before = await tenant.admin.get(`/v1/files/${doomed.id}`);
      assert.deepEqual(before.body.extracted, { pages: 2, tables: 0, graph_items: doomedItems.length });
      const blobKey = await blobKeyOf(db, doomed.id);
      await access(join(api.blobDir, blobKey));
      assert.equal(await count(db, 'file_pages WHERE file_id = $1', [doomed.id]), 2);

      const deleted = await tenant.admin.delete(`/v1/files/${doomed.id}`);
      assert.equal(deleted.status, 200);
      assert.deepEqual(deleted.body, {
        id: doomed.id,
        object: 'file',
        deleted: true,
        graph_items_removed: before.body.extracted.graph_items,
      });

      assert.equal(await count(db, 'graph_items WHERE file_id = $1', [doomed.id]), 0);
      const remainingItems = await db.query<{ id: string }>('SELECT id FROM graph_items WHERE project_id = $1 ORDER BY id', [
        tenant.projectId,
      ]);
      assert.deepEqual(
        remainingItems.rows.map((r) => r.id),
        [...survivorItems].sort(),
      );
      const nodes = await db.query<{ id: string }>('SELECT id FROM graph_nodes WHERE project_id = $1 ORDER BY id', [tenant.projectId]);
      assert.deepEqual(
        nodes.rows.map((r) => r.id),
        [ada, difference].sort(),
      );

      assert.equal(await count(db, 'file_pages WHERE file_id = $1', [doomed.id]), 0);
      await assert.rejects(access(join(api.blobDir, blobKey)), { code: 'ENOENT' });
      assert.equal(await api.services.blobs.exists(blobKey), false);
      assert.equal(await count(db, 'blob_deletions WHERE blob_key = $1', [blobKey]), 0);

      const kept = await tenant.admin.get(`/v1/files/${survivor.id}`);
      assert.equal(kept.status, 200);
      assert.deepEqual(kept.body.extracted, { pages: 1, tables: 0, graph_items: 2 });
      assert.equal(await count(db, 'file_pages WHERE file_id = $1', [survivor.id]), 1);
      assert.equal(await api.services.blobs.exists(await blobKeyOf(db, survivor.id)), true);
    });

    it('answers 404 to a second DELETE and to GET, drops the file from the list, and keeps the audit rows', async () => {
      const file = await processed(tenant.admin, (await uploadText(tenant.admin, 'short-lived')).id);
      const first = await tenant.admin.delete(`/v1/files/${file.id}`);
      assert.deepEqual(first.body, { id: file.id, object: 'file', deleted: true, graph_items_removed: 0 });
      assertError(await tenant.admin.delete(`/v1/files/${file.id}`), 404, 'resource_not_found', 'id');
      assertError(await tenant.admin.get(`/v1/files/${file.id}`), 404, 'resource_not_found', 'id');
      const { ids } = await walk(tenant.admin, { limit: 100 }, 'after');
      assert.ok(!ids.includes(file.id));

      const audit = await api.services.db.query<{ action: string; status: number }>(
        'SELECT action, status FROM audit_logs WHERE project_id = $1 AND target_id = $2 ORDER BY created_at, id',
        [tenant.projectId, file.id],
      );
      assert.deepEqual(audit.rows, [
        { action: 'file.create', status: 200 },
        { action: 'file.delete', status: 200 },
        { action: 'file.delete', status: 404 },
      ]);
    });

    it('deletes a file whose extraction failed', async () => {
      const broken = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.from('not a document body '.repeat(10))]);
      const upload = await tenant.admin.upload({ file: { data: broken, filename: 'broken.pdf' }, purpose: 'context' });
      assert.equal(upload.status, 200);
      assert.equal((await tenant.admin.settledFile(upload.body.id)).status, 'failed');
      const deleted = await tenant.admin.delete(`/v1/files/${upload.body.id}`);
      assert.deepEqual(deleted.body, { id: upload.body.id, object: 'file', deleted: true, graph_items_removed: 0 });
    });

    it("answers 404 for another project's file and leaves it alone", async () => {
      const file = await uploadText(tenant.admin, 'mine');
      const other = await newTenant(api, 'lifecycle-intruder');
      assertError(await other.admin.delete(`/v1/files/${file.id}`), 404, 'resource_not_found', 'id');
      assert.equal((await tenant.admin.get(`/v1/files/${file.id}`)).status, 200);
    });

    it('answers 403 to a key without files:write and leaves the file alone', async () => {
      const file = await uploadText(tenant.admin, 'guarded');
      assertError(await (await tenant.keyWith('files:read')).delete(`/v1/files/${file.id}`), 403, 'missing_scope');
      assert.equal((await tenant.admin.get(`/v1/files/${file.id}`)).status, 200);
    });
  });
});

describe('file lifecycle before extraction runs', () => {
  let api: TestApi;
  let tenant: Tenant;
  let namespace: string;

  before(async function () {
    this.timeout(120_000);
    namespace = await isolatedNamespace('lifecycle-cancel');
    api = await startTestApi({ worker: false, namespace });
    tenant = await newTenant(api, 'lifecycle-cancel');
  });

  after(async function () {
    this.timeout(60_000);
    await api?.stop();
  });

  const workflowOf = (fileId: string) => api.services.temporal.workflow.getHandle(extractionWorkflowId(fileId));

  it('shows a file still processing with zero extraction results', async () => {
    const uploaded = await uploadText(tenant.admin, 'waiting for a worker', { filename: 'wait.txt', metadata: { stage: 'one' } });
    const file = await tenant.admin.get(`/v1/files/${uploaded.id}`);
    assert.equal(file.status, 200);
    assert.deepEqual(file.body, {
      id: uploaded.id,
      object: 'file',
      filename: 'wait.txt',
      bytes: 20,
      purpose: 'context',
      status: 'processing',
      mime_type: 'text/plain',
      extracted: { pages: 0, tables: 0, graph_items: 0 },
      metadata: { stage: 'one' },
      last_error: null,
      created_at: uploaded.created_at,
      processed_at: null,
    });
    assert.equal((await workflowOf(uploaded.id).describe()).status.name, 'RUNNING');
    assert.equal((await tenant.admin.delete(`/v1/files/${uploaded.id}`)).status, 200);
  });

  it('cancels the extraction of a file deleted while it runs; the file stays gone and is never processed', async function () {
    this.timeout(120_000);
    const uploaded = await uploadText(tenant.admin, 'deleted before extraction\fcould finish');
    const workflow = workflowOf(uploaded.id);
    assert.equal((await workflow.describe()).status.name, 'RUNNING');
    const blobKey = await blobKeyOf(api.services.db, uploaded.id);

    const deleted = await tenant.admin.delete(`/v1/files/${uploaded.id}`);
    assert.deepEqual(deleted.body, { id: uploaded.id, object: 'file', deleted: true, graph_items_removed: 0 });

    // Only now does a worker poll this namespace: it finds the cancellation waiting.
    const { worker, connection } = await createWorker({
      ...workerDependenciesOf(api.services),
      temporalAddress: api.temporalAddress,
      namespace,
      workflowBundle: await workflowBundle(),
    });
    const running = worker.run();
    try {
      await eventually(async () => assert.equal((await workflow.describe()).status.name, 'CANCELLED'), {
        message: 'the extraction was not cancelled',
      });
    } finally {
      worker.shutdown();
      await running;
      await connection.close();
    }

    assertError(await tenant.admin.get(`/v1/files/${uploaded.id}`), 404, 'resource_not_found', 'id');
    assert.equal(await count(api.services.db, 'files WHERE id = $1', [uploaded.id]), 0);
    assert.deepEqual(await eventsFor(api.services.db, tenant.projectId, 'file.processed', uploaded.id), []);
    assert.equal(await api.services.blobs.exists(blobKey), false);
  });
});
