import assert from 'node:assert/strict';
import { newTenant, sharedApi, type Tenant, type TestApi } from '../support/api.js';
import type { ApiClient } from '../support/client.js';

type FileNode = { id: string; object: string; type: string; name: string; canonical_name: string; mentions: number; relations: number };

const MEMO = 'Maria Lopez, CEO of Acme Corporation, met the auditors in Berlin. Acme Corporation acquired Globex Ltd for $1.2 million.';

async function uploadText(client: ApiClient, text: string, filename: string, purpose: 'context' | 'attachment' = 'context') {
  const upload = await client.upload({ purpose, file: { data: Buffer.from(text), filename, type: 'text/plain' } });
  assert.equal(upload.status, 200, JSON.stringify(upload.body));
  const file = await client.settledFile(upload.body.id);
  assert.equal(file.status, 'processed', JSON.stringify(file.last_error));
  return file;
}

describe("GET /v1/files/{id}/nodes: the graph nodes a file's items support", () => {
  let api: TestApi;
  let tenant: Tenant;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    tenant = await newTenant(api, 'file-nodes');
  });

  it('lists every node the file supports, the most supported first, with exactly its mentions and relations', async () => {
    const memo = await uploadText(tenant.admin, MEMO, 'memo.txt');
    const listed = await tenant.admin.get(`/v1/files/${memo.id}/nodes?limit=100`);
    assert.equal(listed.status, 200, JSON.stringify(listed.body));
    const nodes: FileNode[] = listed.body.data;
    assert.equal(listed.body.has_more, false);

    const acme = nodes.find((n) => n.type === 'organization' && /Acme/.test(n.name));
    assert.ok(acme, JSON.stringify(nodes));
    assert.equal(acme.object, 'file.graph_node');
    assert.equal(acme.mentions, 2);
    assert.equal(nodes[0]!.id, acme.id, 'the most supported node comes first');
    const totals = nodes.map((n) => n.mentions + n.relations);
    assert.deepEqual(
      totals,
      [...totals].sort((a, b) => b - a),
    );

    const { rows } = await api.services.db.query<{ entities: number; relations: number }>(
      `SELECT count(*) FILTER (WHERE kind = 'entity')::int AS entities, count(*) FILTER (WHERE kind = 'relation')::int AS relations
       FROM graph_items WHERE file_id = $1`,
      [memo.id],
    );
    assert.equal(
      nodes.reduce((sum, n) => sum + n.mentions, 0),
      rows[0]!.entities,
    );
    assert.equal(
      nodes.reduce((sum, n) => sum + n.relations, 0),
      2 * rows[0]!.relations,
      'each relation item relates two nodes',
    );
    assert.equal(rows[0]!.entities + rows[0]!.relations, memo.extracted.graph_items);

    const detail = await tenant.admin.get(`/v1/graph/nodes/${acme.id}`);
    assert.equal(detail.status, 200);
    assert.equal(detail.body.name, acme.name);
  });

  it('pages by node id, and answers 400 invalid_cursor for a node the file does not support', async () => {
    const memo = await uploadText(tenant.admin, MEMO, 'memo-paged.txt');
    const all: FileNode[] = (await tenant.admin.get(`/v1/files/${memo.id}/nodes?limit=100`)).body.data;
    assert.ok(all.length >= 4, JSON.stringify(all));
    const first = await tenant.admin.get(`/v1/files/${memo.id}/nodes?limit=2`);
    assert.equal(first.body.has_more, true);
    const rest = await tenant.admin.get(`/v1/files/${memo.id}/nodes?limit=100&after=${first.body.last_id}`);
    assert.deepEqual(
      [...first.body.data, ...rest.body.data].map((n: FileNode) => n.id),
      all.map((n) => n.id),
    );

    const other = await uploadText(tenant.admin, 'Ingrid Halvorsen visited Trondheim.', 'other.txt');
    const foreign: FileNode[] = (await tenant.admin.get(`/v1/files/${other.id}/nodes`)).body.data;
    const refused = await tenant.admin.get(`/v1/files/${memo.id}/nodes?after=${foreign[0]!.id}`);
    assert.equal(refused.status, 400);
    assert.equal(refused.body.error.code, 'invalid_cursor');
    assert.equal(refused.body.error.param, 'after');
  });

  it("lists nothing for an attachment, and answers 404 for another project's file", async () => {
    const attachment = await uploadText(tenant.admin, 'Zebulon Quartz founded Quartzwerk GmbH in Vienna.', 'attachment.txt', 'attachment');
    const listed = await tenant.admin.get(`/v1/files/${attachment.id}/nodes`);
    assert.equal(listed.status, 200);
    assert.deepEqual(listed.body.data, []);

    const stranger = await newTenant(api, 'file-nodes-stranger');
    assert.equal((await stranger.admin.get(`/v1/files/${attachment.id}/nodes`)).status, 404);
  });
});
