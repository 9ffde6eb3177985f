import assert from 'node:assert/strict';
import { listApiKeys, newSecret } from '../../records/api-keys.js';
import { createDb } from '../../records/db.js';
import { testLog } from '../support/services.js';
import { createHash } from 'node:crypto';
import { sharedApi, newTenant, type Tenant, type TestApi } from '../support/api.js';
import { ApiClient } from '../support/client.js';

interface ApiKeyRow {
  [column: string]: unknown;
  id: string;
  secret_hash: Buffer;
  prefix: string;
}

function assertError(response: { status: number; body: any }, status: number, code: string) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error.code, code);
}

describe('API keys and tenancy', () => {
  let api: TestApi;
  let tenant: Tenant;
  let other: Tenant;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    [tenant, other] = await Promise.all([newTenant(api, 'auth A'), newTenant(api, 'auth B')]);
  });

  async function createKey(client: ApiClient, body: Record<string, unknown>, headers?: Record<string, string>) {
    return client.post('/v1/api-keys', body, headers);
  }

  describe('authentication', () => {
    it('answers 401 invalid_api_key without an Authorization header', async () => {
      const response = await new ApiClient(api.url).get('/v1/files');
      assertError(response, 401, 'invalid_api_key');
      assert.equal(response.body.error.type, 'authentication_error');
    });

    for (const [what, header] of [
      ['a Basic scheme', 'Basic YWxhZGRpbjpvcGVuc2VzYW1l'],
      ['a Bearer without a key', 'Bearer '],
      ['a key without the ap_ prefix', 'Bearer sk_0123456789abcdef'],
      ['two tokens', 'Bearer ap_one ap_two'],
      ['an overlong key', `Bearer ap_${'x'.repeat(200)}`],
    ]) {
      it(`answers 401 to a malformed header: ${what}`, async () => {
        const response = await new ApiClient(api.url).get('/v1/files', { authorization: header! });
        assertError(response, 401, 'invalid_api_key');
      });
    }

    it('takes the scheme in any case, as HTTP reads it (bearer, BEARER), with the key after one or more spaces', async () => {
      for (const scheme of ['bearer', 'BEARER', 'bEaReR', 'Bearer  ']) {
        const response = await new ApiClient(api.url).get('/v1/files', { authorization: `${scheme} ${tenant.admin.key}` });
        assert.equal(response.status, 200, `${scheme}: ${JSON.stringify(response.body)}`);
      }
    });

    it('answers 401 to a well-formed key that was never issued', async () => {
      const response = await new ApiClient(api.url, 'ap_0123456789abcdefghijABCDEFGHIJ01').get('/v1/files');
      assertError(response, 401, 'invalid_api_key');
    });

    it('answers a wrong key sent again 401 without looking it up: a locked key table does not hold the answer up', async () => {
      const wrong = new ApiClient(api.url, newSecret());
      assertError(await wrong.get('/v1/files'), 401, 'invalid_api_key');
      const locker = createDb(api.services.db.connectionString, { max: 1, log: testLog });
      const lock = await locker.connect();
      try {
        await lock.query('BEGIN');
        await lock.query('LOCK TABLE api_keys IN ACCESS EXCLUSIVE MODE');
        assertError(await wrong.get('/v1/files'), 401, 'invalid_api_key');
      } finally {
        await lock.query('ROLLBACK');
        lock.release();
        await locker.end();
      }
    });

    it('answers 401 to a revoked key at once, even right after it was used', async () => {
      const reader = await tenant.keyWith('files:read');
      assert.equal((await reader.get('/v1/files')).status, 200);
      const id = await keyIdOf(reader);
      const revoked = await tenant.admin.delete(`/v1/api-keys/${id}`);
      assert.equal(revoked.status, 200);
      assertError(await reader.get('/v1/files'), 401, 'invalid_api_key');
    });

    it('answers 401 to a revoked key even when requests with it were in flight during the revocation', async function () {
      this.timeout(120_000);
      for (let round = 0; round < 25; round++) {
        const created = await createKey(tenant.admin, { name: `racing ${round}`, scopes: ['files:read'] });
        const racer = new ApiClient(api.url, created.body.key);
        const inflight = Array.from({ length: 20 }, () => racer.get('/v1/files?limit=1'));
        assert.equal((await tenant.admin.delete(`/v1/api-keys/${created.body.id}`)).status, 200);
        for (const response of await Promise.all(inflight)) assert.ok([200, 401].includes(response.status));
        assertError(await racer.get('/v1/files?limit=1'), 401, 'invalid_api_key');
      }
    });
  });

  describe('scopes', () => {
    it('answers 403 missing_scope when a files:read key creates a key', async () => {
      const reader = await tenant.keyWith('files:read');
      const response = await createKey(reader, { name: 'nope', scopes: ['files:read'] });
      assertError(response, 403, 'missing_scope');
      assert.equal(response.body.error.type, 'permission_error');
    });

    it('answers 403 missing_scope when a files:read key lists or revokes keys', async () => {
      const reader = await tenant.keyWith('files:read');
      assertError(await reader.get('/v1/api-keys'), 403, 'missing_scope');
      assertError(await reader.delete(`/v1/api-keys/${await keyIdOf(reader)}`), 403, 'missing_scope');
    });

    it('answers 403 missing_scope when a files:read key uploads', async () => {
      const reader = await tenant.keyWith('files:read');
      const response = await reader.upload({ file: { data: Buffer.from('hello'), filename: 'a.txt' }, purpose: 'context' });
      assertError(response, 403, 'missing_scope');
    });

    it('answers 403 bootstrap_key_required when a project admin creates a project', async () => {
      const response = await tenant.admin.post('/v1/projects', { name: 'not allowed' });
      assertError(response, 403, 'bootstrap_key_required');
      assert.equal(response.body.error.type, 'permission_error');
    });
  });

  describe('projects', () => {
    it('lets the bootstrap key create a project and keys in it through project_id', async () => {
      const project = await api.root.post('/v1/projects', { name: 'made by root' });
      assert.equal(project.status, 201);
      assert.match(project.body.id, /^proj_/);
      assert.equal(project.body.object, 'project');
      assert.equal(project.body.name, 'made by root');

      const key = await createKey(api.root, { name: 'writer', scopes: ['files:write', 'files:read'], project_id: project.body.id });
      assert.equal(key.status, 201);
      assert.equal(key.body.project_id, project.body.id);
      assert.deepEqual(key.body.scopes, ['files:write', 'files:read']);

      const writer = new ApiClient(api.url, key.body.key);
      const upload = await writer.upload({ file: { data: Buffer.from('in the new project'), filename: 'a.txt' }, purpose: 'attachment' });
      assert.equal(upload.status, 200);
      const { rows } = await api.services.db.query('SELECT project_id FROM files WHERE id = $1', [upload.body.id]);
      assert.equal(rows[0]?.project_id, project.body.id);
    });

    it('answers 404 when the bootstrap key names a project that does not exist', async () => {
      const response = await createKey(api.root, { name: 'x', scopes: ['admin'], project_id: 'proj_doesnotexist' });
      assertError(response, 404, 'resource_not_found');
    });

    it("answers 404 when a project admin names another project's id", async () => {
      const response = await createKey(tenant.admin, { name: 'reach', scopes: ['admin'], project_id: other.projectId });
      assertError(response, 404, 'resource_not_found');
      const keys = await other.admin.get('/v1/api-keys?limit=100');
      assert.ok(!keys.body.data.some((k: { name: string }) => k.name === 'reach'));
    });

    it('creates the key in the caller project when a project admin names its own project', async () => {
      const response = await createKey(tenant.admin, { name: 'own', scopes: ['files:read'], project_id: tenant.projectId });
      assert.equal(response.status, 201);
      assert.equal(response.body.project_id, tenant.projectId);
    });
  });

  describe('key lifecycle', () => {
    it('creates a key (201) whose secret ap_… is shown once and starts with its prefix', async () => {
      const response = await createKey(tenant.admin, { name: 'ci', scopes: ['files:read', 'files:write'] });
      assert.equal(response.status, 201);
      const key = response.body;
      assert.match(key.id, /^key_/);
      assert.equal(key.object, 'api_key');
      assert.equal(key.name, 'ci');
      assert.equal(key.project_id, tenant.projectId);
      assert.match(key.key, /^ap_[A-Za-z0-9]+$/);
      assert.ok(key.key.startsWith(key.prefix), `${key.prefix} is not the start of the secret`);
      assert.ok(key.prefix.length < key.key.length);
      assert.equal(key.revoked_at, null);
      assert.ok(Math.abs(key.created_at - Date.now() / 1000) < 60);

      assert.equal((await new ApiClient(api.url, key.key).get('/v1/files')).status, 200);
      const listed = await tenant.admin.get('/v1/api-keys?limit=100');
      const entry = listed.body.data.find((k: { id: string }) => k.id === key.id);
      assert.deepEqual(entry, withoutKey(key));
    });

    it('never lists a secret', async () => {
      const created = await createKey(tenant.admin, { name: 'secretive', scopes: ['files:read'] });
      const listed = await tenant.admin.get('/v1/api-keys?limit=100');
      assert.equal(listed.status, 200);
      assert.ok(listed.body.data.length > 0);
      for (const key of listed.body.data) assert.ok(!('key' in key), `key ${key.id} was listed with a secret`);
      assert.ok(!JSON.stringify(listed.body).includes(created.body.key));
    });

    it('pages the key list with keyset cursors in both directions', async () => {
      const project = await newTenant(api, 'paging');
      for (let i = 0; i < 6; i++) assert.equal((await createKey(project.admin, { name: `k${i}`, scopes: ['files:read'] })).status, 201);
      const all = (await project.admin.get('/v1/api-keys?limit=100')).body;
      assert.equal(all.data.length, 7);
      assert.equal(all.has_more, false);
      const ids: string[] = all.data.map((k: { id: string }) => k.id);
      assert.equal(all.first_id, ids[0]);
      assert.equal(all.last_id, ids[6]);
      const times = all.data.map((k: { created_at: number }) => k.created_at);
      assert.deepEqual(
        times,
        [...times].sort((a, b) => b - a),
        'newest first by default',
      );

      const forward: string[] = [];
      let after: string | undefined;
      for (;;) {
        const page = await project.admin.get(`/v1/api-keys?limit=3${after ? `&after=${after}` : ''}`);
        assert.equal(page.status, 200);
        forward.push(...page.body.data.map((k: { id: string }) => k.id));
        if (!page.body.has_more) break;
        after = page.body.last_id;
      }
      assert.deepEqual(forward, ids);

      const back = await project.admin.get(`/v1/api-keys?limit=2&before=${ids[4]}`);
      assert.deepEqual(
        back.body.data.map((k: { id: string }) => k.id),
        ids.slice(2, 4),
      );
      assert.equal(back.body.has_more, true);

      const ascending = await project.admin.get('/v1/api-keys?limit=100&order=asc');
      assert.deepEqual(
        ascending.body.data.map((k: { id: string }) => k.id),
        [...ids].reverse(),
      );

      assertError(await project.admin.get(`/v1/api-keys?after=${await keyIdOf(tenant.admin)}`), 400, 'invalid_cursor');
      assertError(await project.admin.get('/v1/api-keys?limit=0'), 400, 'invalid_parameter');
      assertError(await project.admin.get('/v1/api-keys?limit=101'), 400, 'invalid_parameter');
    });

    it('revokes a key: 200 {id, object, deleted}, then 404 on a second revocation', async () => {
      const created = await createKey(tenant.admin, { name: 'short-lived', scopes: ['files:read'] });
      const revoked = await tenant.admin.delete(`/v1/api-keys/${created.body.id}`);
      assert.equal(revoked.status, 200);
      assert.deepEqual(revoked.body, { id: created.body.id, object: 'api_key', deleted: true });
      assertError(await tenant.admin.delete(`/v1/api-keys/${created.body.id}`), 404, 'resource_not_found');

      const listed = await tenant.admin.get('/v1/api-keys?limit=100');
      const entry = listed.body.data.find((k: { id: string }) => k.id === created.body.id);
      assert.equal(typeof entry.revoked_at, 'number');
    });

    it("answers 404 to revoking another project's key, and leaves it working", async () => {
      const theirs = await other.keyWith('files:read');
      const response = await tenant.admin.delete(`/v1/api-keys/${await keyIdOf(theirs)}`);
      assertError(response, 404, 'resource_not_found');
      assert.equal((await theirs.get('/v1/files')).status, 200);
    });

    it('refuses to revoke the bootstrap key with 400', async () => {
      const { rows } = await api.services.db.query<{ id: string }>('SELECT id FROM api_keys WHERE bootstrap AND revoked_at IS NULL');
      assert.equal(rows.length, 1);
      const response = await api.root.delete(`/v1/api-keys/${rows[0]!.id}`);
      assertError(response, 400, 'bootstrap_key');
      assert.equal((await api.root.get('/v1/api-keys?limit=1')).status, 200);
    });

    it('reads key records for a list without the secret hash', async () => {
      await createKey(tenant.admin, { name: 'listed record', scopes: ['files:read'] });
      const page = await listApiKeys(api.services.db, tenant.projectId, { limit: 100, order: 'desc' });
      assert.ok(page.rows.length > 0);
      for (const record of page.rows) assert.ok(!('secret_hash' in record), `the record of ${record.id} carries secret_hash`);
    });

    it('stores only the SHA-256 of the secret', async () => {
      const created = await createKey(tenant.admin, { name: 'hashed', scopes: ['files:read'] });
      const secret: string = created.body.key;
      const { rows } = await api.services.db.query<ApiKeyRow>('SELECT * FROM api_keys WHERE id = $1', [created.body.id]);
      const row = rows[0]!;
      assert.deepEqual(row.secret_hash, createHash('sha256').update(secret).digest());
      for (const [column, value] of Object.entries(row)) {
        const text = Buffer.isBuffer(value) ? value.toString('latin1') : JSON.stringify(value);
        assert.ok(!text.includes(secret), `column ${column} holds the secret`);
        assert.ok(!text.includes(secret.slice(3)), `column ${column} holds the secret's random part`);
      }
      assert.equal(row.prefix, created.body.prefix);
    });
  });

  describe('tenant isolation', () => {
    it("answers 404, not 403, to another tenant's file on GET and DELETE, and leaves it out of their list", async () => {
      const upload = await tenant.admin.upload({ file: { data: Buffer.from('tenant A only'), filename: 'a.txt' }, purpose: 'context' });
      assert.equal(upload.status, 200);
      const id: string = upload.body.id;

      assertError(await other.admin.get(`/v1/files/${id}`), 404, 'resource_not_found');
      assertError(await other.admin.delete(`/v1/files/${id}`), 404, 'resource_not_found');
      const theirs = await other.admin.get('/v1/files?limit=100');
      assert.equal(theirs.status, 200);
      assert.ok(!theirs.body.data.some((f: { id: string }) => f.id === id));

      const mine = await tenant.admin.get(`/v1/files/${id}`);
      assert.equal(mine.status, 200);
      assert.ok((await tenant.admin.get('/v1/files?limit=100')).body.data.some((f: { id: string }) => f.id === id));
    });

    it("answers 404 to the bootstrap key for a tenant's file: its reach is keys and projects only", async () => {
      const upload = await tenant.admin.upload({ file: { data: Buffer.from('tenant A again'), filename: 'b.txt' }, purpose: 'attachment' });
      assertError(await api.root.get(`/v1/files/${upload.body.id}`), 404, 'resource_not_found');
    });
  });

  describe('Idempotency-Key on key creation', () => {
    it('replays the same key id without the secret, and answers 409 to another body', async () => {
      const headers = { 'idempotency-key': `create-key-${Date.now()}` };
      const first = await createKey(tenant.admin, { name: 'idem', scopes: ['files:read'] }, headers);
      assert.equal(first.status, 201);
      assert.match(first.body.key, /^ap_/);

      const replay = await createKey(tenant.admin, { name: 'idem', scopes: ['files:read'] }, headers);
      assert.equal(replay.status, 201);
      assert.equal(replay.body.id, first.body.id);
      assert.ok(!('key' in replay.body), 'a replay must not show the secret again');
      assert.deepEqual(replay.body, withoutKey(first.body));
      assert.equal(replay.headers.get('idempotent-replayed'), 'true');

      const conflict = await createKey(tenant.admin, { name: 'idem', scopes: ['files:write'] }, headers);
      assertError(conflict, 409, 'idempotency_key_reused');

      const { rows } = await api.services.db.query('SELECT count(*)::int AS n FROM api_keys WHERE project_id = $1 AND name = $2', [
        tenant.projectId,
        'idem',
      ]);
      assert.equal(rows[0]?.n, 1);
    });

    it('answers an empty Idempotency-Key with 400 naming the header, and creates nothing', async () => {
      const name = `empty idempotency key ${Date.now()}`;
      const response = await createKey(tenant.admin, { name, scopes: ['files:read'] }, { 'idempotency-key': '' });
      assertError(response, 400, 'invalid_parameter');
      assert.equal(response.body.error.param, 'Idempotency-Key');
      const { rows } = await api.services.db.query('SELECT 1 FROM api_keys WHERE name = $1', [name]);
      assert.equal(rows.length, 0);
    });

    it('keeps idempotency keys per project', async () => {
      const headers = { 'idempotency-key': `shared-${Date.now()}` };
      const mine = await createKey(tenant.admin, { name: 'per project', scopes: ['files:read'] }, headers);
      const theirs = await createKey(other.admin, { name: 'per project', scopes: ['files:read'] }, headers);
      assert.equal(mine.status, 201);
      assert.equal(theirs.status, 201);
      assert.notEqual(mine.body.id, theirs.body.id);
      assert.match(theirs.body.key, /^ap_/);
    });
  });

  /** The id of the key a client holds, found by the hash of its secret. */
  async function keyIdOf(client: ApiClient): Promise<string> {
    const { rows } = await api.services.db.query<{ id: string }>('SELECT id FROM api_keys WHERE secret_hash = $1', [
      createHash('sha256').update(client.key!).digest(),
    ]);
    assert.equal(rows.length, 1);
    return rows[0]!.id;
  }
});

function withoutKey<T extends { key?: string }>(created: T): Omit<T, 'key'> {
  const { key: _secret, ...rest } = created;
  return rest;
}
