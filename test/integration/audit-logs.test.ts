import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { sharedApi, newTenant, type Tenant, type TestApi } from '../support/api.js';
import { ApiClient, type ApiResponse } from '../support/client.js';
import type { components } from '../../api/generated/openapi.js';
import type { Scope } from '../../records/api-keys.js';

type AuditLogEntry = components['schemas']['AuditLogEntry'];

describe('audit log', () => {
  let api: TestApi;
  let tenant: Tenant;
  let adminKeyId: string;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    tenant = await newTenant(api, 'audit');
    adminKeyId = await keyIdOf(tenant.admin);
  });

  async function keyIdOf(client: ApiClient): Promise<string> {
    const hash = createHash('sha256').update(client.key!).digest();
    const { rows } = await api.services.db.query<{ id: string }>('SELECT id FROM api_keys WHERE secret_hash = $1', [hash]);
    assert.equal(rows.length, 1);
    return rows[0]!.id;
  }

  /** The one audit entry the request that produced `response` wrote, as the API lists it. */
  async function entryOf(client: ApiClient, response: ApiResponse, filter: string): Promise<AuditLogEntry> {
    const requestId = response.headers.get('x-request-id');
    assert.ok(requestId, 'the response has no x-request-id');
    const { rows } = await api.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_logs WHERE request_id = $1', [
      requestId,
    ]);
    assert.equal(rows[0]!.n, 1, `expected one audit row for request ${requestId}`);
    const listed = await client.get<{ data: AuditLogEntry[] }>(`/v1/audit-logs?limit=100&${filter}`);
    assert.equal(listed.status, 200);
    const entry = listed.body.data.find((e) => e.request_id === requestId);
    assert.ok(entry, `no audit entry listed for request ${requestId} with ${filter}`);
    return entry;
  }

  async function auditRowCount(projectId: string): Promise<number> {
    const { rows } = await api.services.db.query<{ n: number }>('SELECT count(*)::int AS n FROM audit_logs WHERE project_id = $1', [
      projectId,
    ]);
    return rows[0]!.n;
  }

  describe('what is written', () => {
    it('records a file upload as file.create with actor, target, outcome and the request id', async () => {
      const upload = await tenant.admin.upload({ file: { data: Buffer.from('audited'), filename: 'a.txt' }, purpose: 'context' });
      assert.equal(upload.status, 200);
      const entry = await entryOf(tenant.admin, upload, `target_id=${upload.body.id}`);
      assert.match(entry.id, /^audit_/);
      assert.equal(entry.object, 'audit_log');
      assert.deepEqual(entry.actor, { api_key_id: adminKeyId });
      assert.equal(entry.action, 'file.create');
      assert.deepEqual(entry.target, { type: 'file', id: upload.body.id });
      assert.deepEqual(entry.outcome, { status: 200, error_code: null });
      assert.equal(entry.request_id, upload.headers.get('x-request-id'));
      assert.ok(Math.abs(entry.created_at - Date.now() / 1000) < 60);
    });

    it('keeps a caller-supplied request id on the entry', async () => {
      const requestId = `caller-${Date.now()}`;
      const upload = await tenant.admin.upload(
        { file: { data: Buffer.from('traced'), filename: 't.txt' }, purpose: 'attachment' },
        { 'x-request-id': requestId },
      );
      assert.equal(upload.headers.get('x-request-id'), requestId);
      const entry = await entryOf(tenant.admin, upload, `target_id=${upload.body.id}`);
      assert.equal(entry.request_id, requestId);
    });

    it('records file.delete and keeps every entry of the file after it is gone', async () => {
      const upload = await tenant.admin.upload({ file: { data: Buffer.from('short-lived'), filename: 'gone.txt' }, purpose: 'context' });
      const removed = await tenant.admin.delete(`/v1/files/${upload.body.id}`);
      assert.equal(removed.status, 200);
      assert.equal((await tenant.admin.get(`/v1/files/${upload.body.id}`)).status, 404);

      const deletion = await entryOf(tenant.admin, removed, `target_id=${upload.body.id}`);
      assert.equal(deletion.action, 'file.delete');
      assert.deepEqual(deletion.target, { type: 'file', id: upload.body.id });
      assert.deepEqual(deletion.outcome, { status: 200, error_code: null });

      const history = await tenant.admin.get<{ data: AuditLogEntry[] }>(`/v1/audit-logs?target_id=${upload.body.id}`);
      assert.deepEqual(
        history.body.data.map((e) => e.action),
        ['file.delete', 'file.create'],
      );
      assert.deepEqual(
        history.body.data.map((e) => e.request_id),
        [removed.headers.get('x-request-id'), upload.headers.get('x-request-id')],
      );
    });

    it('records api_key.create and api_key.revoke against the key', async () => {
      const created = await tenant.admin.post('/v1/api-keys', { name: 'audited key', scopes: ['files:read'] });
      assert.equal(created.status, 201);
      const revoked = await tenant.admin.delete(`/v1/api-keys/${created.body.id}`);
      assert.equal(revoked.status, 200);

      const creation = await entryOf(tenant.admin, created, `target_id=${created.body.id}`);
      assert.equal(creation.action, 'api_key.create');
      assert.deepEqual(creation.target, { type: 'api_key', id: created.body.id });
      assert.deepEqual(creation.outcome, { status: 201, error_code: null });
      const revocation = await entryOf(tenant.admin, revoked, `target_id=${created.body.id}`);
      assert.equal(revocation.action, 'api_key.revoke');
      assert.deepEqual(revocation.target, { type: 'api_key', id: created.body.id });
      assert.deepEqual(revocation.outcome, { status: 200, error_code: null });
    });

    it("records project.create in the bootstrap key's project", async () => {
      const project = await api.root.post('/v1/projects', { name: 'audited project' });
      assert.equal(project.status, 201);
      const entry = await entryOf(api.root, project, `target_id=${project.body.id}`);
      assert.equal(entry.action, 'project.create');
      assert.deepEqual(entry.target, { type: 'project', id: project.body.id });
      assert.deepEqual(entry.outcome, { status: 201, error_code: null });
      assert.deepEqual(entry.actor, { api_key_id: await keyIdOf(api.root) });
    });

    it('records an idempotent replay as a request of its own', async () => {
      const headers = { 'idempotency-key': `audit-replay-${Date.now()}` };
      const first = await tenant.admin.post('/v1/api-keys', { name: 'replayed', scopes: ['files:read'] }, headers);
      const replay = await tenant.admin.post('/v1/api-keys', { name: 'replayed', scopes: ['files:read'] }, headers);
      assert.equal(replay.body.id, first.body.id);
      const entries = [
        await entryOf(tenant.admin, first, `target_id=${first.body.id}`),
        await entryOf(tenant.admin, replay, `target_id=${first.body.id}`),
      ];
      assert.deepEqual(
        entries.map((e) => e.outcome.status),
        [201, 201],
      );
    });
  });

  describe('failed mutations', () => {
    it('records a 403 with the key that tried and the error code', async () => {
      const reader = await tenant.keyWith('files:read');
      const refused = await reader.upload({ file: { data: Buffer.from('nope'), filename: 'n.txt' }, purpose: 'context' });
      assert.equal(refused.status, 403);
      const entry = await entryOf(tenant.admin, refused, 'action=file.create');
      assert.deepEqual(entry.actor, { api_key_id: await keyIdOf(reader) });
      assert.deepEqual(entry.target, { type: 'file', id: null });
      assert.deepEqual(entry.outcome, { status: 403, error_code: 'missing_scope' });
    });

    it('records a refused project creation as 403 bootstrap_key_required in the caller project', async () => {
      const refused = await tenant.admin.post('/v1/projects', { name: 'not mine to make' });
      assert.equal(refused.status, 403);
      const entry = await entryOf(tenant.admin, refused, 'action=project.create');
      assert.deepEqual(entry.outcome, { status: 403, error_code: 'bootstrap_key_required' });
      assert.deepEqual(entry.actor, { api_key_id: adminKeyId });
    });

    it('records a deletion of an unknown file as 404 against the id asked for', async () => {
      const missing = await tenant.admin.delete('/v1/files/file_doesnotexist');
      assert.equal(missing.status, 404);
      const entry = await entryOf(tenant.admin, missing, 'target_id=file_doesnotexist');
      assert.equal(entry.action, 'file.delete');
      assert.deepEqual(entry.outcome, { status: 404, error_code: 'resource_not_found' });
    });

    it('records invalid input: an unknown parameter, malformed JSON, the wrong content type', async () => {
      const unknown = await tenant.admin.post('/v1/api-keys', { name: 'x', scopes: ['files:read'], colour: 'blue' });
      assert.equal(unknown.status, 400);
      assert.deepEqual((await entryOf(tenant.admin, unknown, 'action=api_key.create')).outcome, {
        status: 400,
        error_code: 'unknown_parameter',
      });

      const malformed = await tenant.admin.request('POST', '/v1/api-keys', {
        body: '{"name": ',
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(malformed.status, 400);
      assert.deepEqual((await entryOf(tenant.admin, malformed, 'action=api_key.create')).outcome, {
        status: 400,
        error_code: 'invalid_json',
      });

      const text = await tenant.admin.request('POST', '/v1/api-keys', { body: 'name=x', headers: { 'content-type': 'text/plain' } });
      assert.equal(text.status, 415);
      assert.deepEqual((await entryOf(tenant.admin, text, 'action=api_key.create')).outcome, {
        status: 415,
        error_code: 'unsupported_content_type',
      });
    });

    it('records an Idempotency-Key conflict as 409', async () => {
      const headers = { 'idempotency-key': `audit-conflict-${Date.now()}` };
      assert.equal((await tenant.admin.post('/v1/api-keys', { name: 'first', scopes: ['files:read'] }, headers)).status, 201);
      const conflict = await tenant.admin.post('/v1/api-keys', { name: 'second', scopes: ['files:read'] }, headers);
      assert.equal(conflict.status, 409);
      assert.deepEqual((await entryOf(tenant.admin, conflict, 'action=api_key.create')).outcome, {
        status: 409,
        error_code: 'idempotency_key_reused',
      });
    });

    it('never commits a deletion without its entry: when the entry cannot be written, the file stays', async () => {
      const upload = await tenant.admin.upload({ file: { data: Buffer.from('keep me'), filename: 'kept.txt' }, purpose: 'attachment' });
      const id: string = upload.body.id;
      const db = api.services.db;
      // The audit table refuses this file's entries, as a full disk or a lost connection would.
      await db.query(`CREATE FUNCTION refuse_audit_of_${id}() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.target_id = '${id}' THEN RAISE EXCEPTION 'audit entry refused'; END IF; RETURN NEW; END $$`);
      await db.query(
        `CREATE TRIGGER refuse_audit_of_${id} BEFORE INSERT ON audit_logs FOR EACH ROW EXECUTE FUNCTION refuse_audit_of_${id}()`,
      );
      try {
        const removal = await fetch(`${api.url}/v1/files/${id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${tenant.admin.key}` },
        });
        assert.notEqual(removal.status, 200, 'the deletion was answered as done without its audit entry');
      } finally {
        await db.query(`DROP TRIGGER refuse_audit_of_${id} ON audit_logs`);
        await db.query(`DROP FUNCTION refuse_audit_of_${id}()`);
      }
      assert.equal((await tenant.admin.get(`/v1/files/${id}`)).status, 200, 'the file was deleted with no audit entry');
      const removed = await tenant.admin.delete(`/v1/files/${id}`);
      assert.equal(removed.status, 200);
      assert.deepEqual((await entryOf(tenant.admin, removed, `target_id=${id}`)).outcome, { status: 200, error_code: null });
    });

    it('writes nothing for a request without a valid key: it has no project', async () => {
      const requestId = `unauthenticated-${Date.now()}`;
      const refused = await new ApiClient(api.url, 'ap_notarealkey0000000000000000000000').delete('/v1/files/file_x');
      assert.equal(refused.status, 401);
      const anonymous = await new ApiClient(api.url).request('POST', '/v1/projects', {
        json: { name: 'x' },
        headers: { 'x-request-id': requestId },
      });
      assert.equal(anonymous.status, 401);
      const { rows } = await api.services.db.query('SELECT 1 FROM audit_logs WHERE request_id = ANY($1)', [
        [requestId, refused.headers.get('x-request-id')],
      ]);
      assert.equal(rows.length, 0);
    });
  });

  it('writes nothing for GET requests', async () => {
    const upload = await tenant.admin.upload({ file: { data: Buffer.from('read me'), filename: 'r.txt' }, purpose: 'attachment' });
    const before = await auditRowCount(tenant.projectId);
    const reads = [
      await tenant.admin.get(`/v1/files/${upload.body.id}`),
      await tenant.admin.get('/v1/files'),
      await tenant.admin.get('/v1/api-keys'),
      await tenant.admin.get('/v1/audit-logs'),
      await tenant.admin.get('/v1/files/file_doesnotexist'),
    ];
    assert.deepEqual(
      reads.map((r) => r.status),
      [200, 200, 200, 200, 404],
    );
    assert.equal(await auditRowCount(tenant.projectId), before);
  });

  describe('GET /v1/audit-logs', () => {
    it('answers 403 missing_scope to a key without admin', async () => {
      for (const scopes of [['files:read'], ['files:read', 'files:write', 'analytics:read']] as Scope[][]) {
        const response = await (await tenant.keyWith(...scopes)).get('/v1/audit-logs');
        assert.equal(response.status, 403);
        assert.equal(response.body.error.code, 'missing_scope');
      }
    });

    it("lists only the caller's project", async () => {
      const other = await newTenant(api, 'audit other');
      const mine = await tenant.admin.upload({ file: { data: Buffer.from('mine'), filename: 'm.txt' }, purpose: 'context' });
      assert.equal(mine.status, 200);

      const theirs = await other.admin.get<{ data: AuditLogEntry[] }>(`/v1/audit-logs?target_id=${mine.body.id}`);
      assert.equal(theirs.status, 200);
      assert.deepEqual(theirs.body.data, []);
      const all = await other.admin.get<{ data: AuditLogEntry[] }>('/v1/audit-logs?limit=100');
      assert.ok(!all.body.data.some((e) => e.target.id === mine.body.id));
      assert.ok(!all.body.data.some((e) => e.actor.api_key_id === adminKeyId));
    });

    it('filters by action and target_id together', async () => {
      const upload = await tenant.admin.upload({ file: { data: Buffer.from('filter'), filename: 'f.txt' }, purpose: 'context' });
      await tenant.admin.delete(`/v1/files/${upload.body.id}`);
      const deletes = await tenant.admin.get<{ data: AuditLogEntry[] }>('/v1/audit-logs?limit=100&action=file.delete');
      assert.ok(deletes.body.data.length > 0);
      assert.ok(deletes.body.data.every((e) => e.action === 'file.delete'));
      const both = await tenant.admin.get<{ data: AuditLogEntry[] }>(`/v1/audit-logs?action=file.create&target_id=${upload.body.id}`);
      assert.equal(both.body.data.length, 1);
      assert.equal(both.body.data[0]!.action, 'file.create');
      assert.deepEqual((await tenant.admin.get(`/v1/audit-logs?action=no.such.action`)).body.data, []);
    });

    it('filters by the actor key and by a time range (Unix seconds, exclusive), with the other filters', async () => {
      const project = await newTenant(api, 'audit actor');
      const writer = await project.keyWith('files:write');
      const writerId = await keyIdOf(writer);
      const upload = await writer.upload({ file: { data: Buffer.from('by the writer'), filename: 'w.txt' }, purpose: 'context' });
      assert.equal(upload.status, 200);
      assert.equal((await project.admin.post('/v1/api-keys', { name: 'by the admin', scopes: ['files:read'] })).status, 201);

      const byWriter = await project.admin.get<{ data: AuditLogEntry[] }>(`/v1/audit-logs?actor_api_key_id=${writerId}`);
      assert.equal(byWriter.status, 200);
      assert.deepEqual(
        byWriter.body.data.map((e) => [e.action, e.target.id]),
        [['file.create', upload.body.id]],
      );
      const both = await project.admin.get<{ data: AuditLogEntry[] }>(`/v1/audit-logs?actor_api_key_id=${writerId}&action=api_key.create`);
      assert.deepEqual(both.body.data, []);
      assert.deepEqual((await project.admin.get(`/v1/audit-logs?actor_api_key_id=key_nobody`)).body.data, []);

      const entry = byWriter.body.data[0]!;
      const at = entry.created_at;
      const within = await project.admin.get<{ data: AuditLogEntry[] }>(
        `/v1/audit-logs?actor_api_key_id=${writerId}&created_after=${at - 1}&created_before=${at + 1}`,
      );
      assert.deepEqual(
        within.body.data.map((e) => e.id),
        [entry.id],
      );
      assert.deepEqual((await project.admin.get(`/v1/audit-logs?actor_api_key_id=${writerId}&created_after=${at + 1}`)).body.data, []);
      assert.deepEqual((await project.admin.get(`/v1/audit-logs?actor_api_key_id=${writerId}&created_before=${at}`)).body.data, []);
      for (const bad of ['created_after=-1', 'created_before=soon', 'created_after=1.5']) {
        const refused = await project.admin.get(`/v1/audit-logs?${bad}`);
        assert.equal(refused.status, 400, bad);
        assert.equal(refused.body.error.param, bad.split('=')[0]);
      }
    });

    it('pages with keyset cursors, newest first by default', async () => {
      const project = await newTenant(api, 'audit paging');
      for (let i = 0; i < 5; i++)
        assert.equal((await project.admin.post('/v1/api-keys', { name: `k${i}`, scopes: ['files:read'] })).status, 201);
      const all = await project.admin.get<{ data: AuditLogEntry[]; has_more: boolean }>('/v1/audit-logs?limit=100');
      // The five keys, and the project's admin key that the bootstrap key created for it.
      assert.equal(all.body.data.length, 6);
      assert.equal(all.body.has_more, false);
      const ids = all.body.data.map((e) => e.id);
      const times = all.body.data.map((e) => e.created_at);
      assert.deepEqual(
        times,
        [...times].sort((a, b) => b - a),
      );

      const walked: string[] = [];
      let after = '';
      for (;;) {
        const page = await project.admin.get<{ data: AuditLogEntry[]; has_more: boolean; last_id: string }>(
          `/v1/audit-logs?limit=2${after}`,
        );
        assert.equal(page.status, 200);
        assert.ok(page.body.data.length <= 2);
        walked.push(...page.body.data.map((e) => e.id));
        if (!page.body.has_more) break;
        after = `&after=${page.body.last_id}`;
      }
      assert.deepEqual(walked, ids);
      const ascending = await project.admin.get<{ data: AuditLogEntry[] }>('/v1/audit-logs?order=asc&limit=100');
      assert.deepEqual(
        ascending.body.data.map((e) => e.id),
        [...ids].reverse(),
      );
      const earlier = await project.admin.get<{ data: AuditLogEntry[] }>(`/v1/audit-logs?limit=2&before=${ids[3]}`);
      assert.deepEqual(
        earlier.body.data.map((e) => e.id),
        ids.slice(1, 3),
      );
    });
  });

  describe('the bootstrap key acting in another project', () => {
    it('records the key it creates there in that project, where its admins see it', async () => {
      const other = await newTenant(api, 'audit-cross-project');
      const created = await api.root.post('/v1/api-keys', {
        name: 'made by the platform',
        scopes: ['files:read'],
        project_id: other.projectId,
      });
      assert.equal(created.status, 201);
      const seen = await other.admin.get<{ data: AuditLogEntry[] }>(`/v1/audit-logs?target_id=${created.body.id}`);
      assert.equal(seen.body.data.length, 1);
      assert.equal(seen.body.data[0]!.action, 'api_key.create');
      assert.equal(seen.body.data[0]!.request_id, created.headers.get('x-request-id'));
    });

    it('records it in the bootstrap key’s own project as well: the operator’s one trail of keys made across projects', async () => {
      const other = await newTenant(api, 'audit-cross-project-trail');
      const created = await api.root.post('/v1/api-keys', { name: 'made by the platform', scopes: ['admin'], project_id: other.projectId });
      assert.equal(created.status, 201);
      const trail = await api.root.get<{ data: AuditLogEntry[] }>(`/v1/audit-logs?target_id=${created.body.id}`);
      assert.deepEqual(
        trail.body.data.map((e) => [e.action, e.outcome.status, e.request_id]),
        [['api_key.create', 201, created.headers.get('x-request-id')]],
      );
    });
  });

  describe('the table', () => {
    it('refuses UPDATE, DELETE and TRUNCATE', async () => {
      const upload = await tenant.admin.upload({ file: { data: Buffer.from('immutable'), filename: 'i.txt' }, purpose: 'context' });
      const { rows } = await api.services.db.query<{ id: string }>('SELECT id FROM audit_logs WHERE target_id = $1', [upload.body.id]);
      assert.equal(rows.length, 1);
      const id = rows[0]!.id;
      await assert.rejects(api.services.db.query('UPDATE audit_logs SET status = 500 WHERE id = $1', [id]), /append-only/);
      await assert.rejects(api.services.db.query('DELETE FROM audit_logs WHERE id = $1', [id]), /append-only/);
      await assert.rejects(api.services.db.query('DELETE FROM audit_logs WHERE project_id = $1', [tenant.projectId]), /append-only/);
      await assert.rejects(api.services.db.query('TRUNCATE audit_logs'), /append-only/);
      const after = await api.services.db.query('SELECT status FROM audit_logs WHERE id = $1', [id]);
      assert.deepEqual(after.rows, [{ status: 200 }]);
    });
  });
});
