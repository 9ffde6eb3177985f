import assert from 'node:assert/strict';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { createServer } from 'node:http';
import { pino } from 'pino';
import { createApp } from '../../api/app.js';
import { audited, respond } from '../../api/audit.js';
import { createOnce } from '../../api/idempotency.js';
import { apiDepsOf, sharedApi, newTenant, type Tenant, type TestApi } from '../support/api.js';
import { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { createAgent } from '../support/agents.js';

describe('Idempotency-Key', () => {
  let api: TestApi;
  let tenant: Tenant;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    tenant = await newTenant(api, 'idempotency');
  });

  it('treats a JSON body with its keys in another order as the same request, and replays it', async () => {
    const key = { 'Idempotency-Key': 'reordered-1' };
    const first = await tenant.admin.request('POST', '/v1/api-keys', {
      body: '{"name":"ordered","scopes":["files:read"]}',
      headers: { ...key, 'content-type': 'application/json' },
    });
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const second = await tenant.admin.request('POST', '/v1/api-keys', {
      body: '{"scopes":["files:read"],"name":"ordered"}',
      headers: { ...key, 'content-type': 'application/json' },
    });
    assert.equal(second.status, 201, JSON.stringify(second.body));
    assert.equal(second.body.id, first.body.id);
    assert.equal(second.headers.get('idempotent-replayed'), 'true');
  });

  it('keeps a key for the hours the API is set to (AGENTPLANE_IDEMPOTENCY_KEY_HOURS, 24 by default), then creates anew', async () => {
    const key = { 'Idempotency-Key': `hours-${Date.now()}` };
    const first = await tenant.admin.post('/v1/api-keys', { name: 'kept', scopes: ['files:read'] }, key);
    assert.equal(first.status, 201, JSON.stringify(first.body));
    const { rows } = await api.services.db.query<{ hours: number }>(
      `SELECT extract(epoch FROM expires_at - created_at) / 3600 AS hours FROM idempotency_keys WHERE project_id = $1 AND key = $2`,
      [tenant.projectId, key['Idempotency-Key']],
    );
    assert.equal(Number(rows[0]!.hours), 24);
    await api.services.db.query(`UPDATE idempotency_keys SET expires_at = now() WHERE project_id = $1 AND key = $2`, [
      tenant.projectId,
      key['Idempotency-Key'],
    ]);
    const again = await tenant.admin.post('/v1/api-keys', { name: 'kept', scopes: ['files:read'] }, key);
    assert.equal(again.status, 201, JSON.stringify(again.body));
    assert.notEqual(again.body.id, first.body.id);
    assert.equal(again.headers.get('idempotent-replayed'), null);
  });

  describe('the same key sent to two endpoints with the same body', () => {
    let server: Server;
    let client: ApiClient;

    before(async () => {
      // Two creating endpoints that take the same body, as agents and networks both take `{name}`.
      const { app, router } = createApp(await apiDepsOf({ ...api.services, log: pino({ level: 'silent' }) }));
      for (const kind of ['alpha', 'beta']) {
        router.post(`/v1/test-${kind}`, audited(api.services.db, `${kind}.create`, kind), async (ctx) => {
          const { created } = await createOnce(ctx, api.services, { name: 'same' }, async () => ({
            status: 201,
            body: { id: `${kind}_1`, kind },
          }));
          respond(ctx, created);
        });
      }
      server = createServer(app.callback());
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      client = new ApiClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, tenant.admin.key);
    });

    after(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("answers 409 on the second endpoint instead of replaying the first endpoint's object", async () => {
      const post = (path: string) =>
        fetch(client.baseUrl + path, {
          method: 'POST',
          headers: { authorization: `Bearer ${client.key}`, 'idempotency-key': 'two-endpoints' },
        });
      const alpha = await post('/v1/test-alpha');
      assert.equal(alpha.status, 201);
      const beta = await post('/v1/test-beta');
      const body = (await beta.json()) as { error?: { code: string }; kind?: string };
      assert.equal(beta.status, 409, JSON.stringify(body));
      assert.equal(body.error?.code, 'idempotency_key_reused');
    });
  });

  it("answers 409 when a key that ran one agent is sent to run another, and leaves the other's history empty", async () => {
    const [a, b] = [await createAgent(tenant.admin, { name: 'idem-a' }), await createAgent(tenant.admin, { name: 'idem-b' })];
    const run = (agent: { id: string }) =>
      tenant.admin.request('POST', `/v1/agents/${agent.id}/run`, {
        body: JSON.stringify({ input: 'same words', wait: false }),
        headers: { 'idempotency-key': 'one-key-two-agents', 'content-type': 'application/json' },
      });
    const first = await run(a);
    assert.equal(first.status, 202, JSON.stringify(first.body));
    assert.equal(first.body.agent_id, a.id);
    const second = await run(b);
    assert.equal(second.status, 409, JSON.stringify(second.body));
    assert.equal(second.body.error.code, 'idempotency_key_reused');
    assert.deepEqual((await tenant.admin.get(`/v1/agents/${b.id}/runs`)).body.data, []);
    assert.deepEqual((await run(a)).body.id, first.body.id, 'the first agent still replays its run');
  });

  it('creates the object when the key that blocked it expires before it could be read, instead of failing with 500', async function () {
    this.timeout(30_000);
    const db = api.services.db;
    const key = `expiring-${Date.now()}`;
    // Another request's claim on the key, committed only once this request waits on it, and a second
    // from the end of its 24 hours: alive when this request claims, expired when it reads.
    const other = await db.connect();
    try {
      await other.query('BEGIN');
      const { rows } = await other.query<{ expires: Date }>(
        `INSERT INTO idempotency_keys (project_id, key, fingerprint, response_status, response_body, created_at, expires_at)
         VALUES ($1, $2, 'other', 201, '{"id":"key_other"}', now() - interval '24 hours' + interval '3 seconds', now() + interval '3 seconds')
         RETURNING expires_at AS expires`,
        [tenant.projectId, key],
      );
      const pending = tenant.admin.post('/v1/api-keys', { name: 'after expiry', scopes: ['files:read'] }, { 'Idempotency-Key': key });
      await eventually(
        async () => {
          const waiting = await db.query(
            `SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO idempotency_keys%'`,
          );
          assert.equal(waiting.rowCount, 1, 'the request is not waiting on the key yet');
        },
        { timeoutMs: 10_000, intervalMs: 20 },
      );
      await eventually(
        async () => {
          const now = await db.query<{ passed: boolean }>('SELECT clock_timestamp() > $1 AS passed', [rows[0]!.expires]);
          assert.ok(now.rows[0]!.passed, 'the blocking claim has not expired yet');
        },
        { timeoutMs: 10_000, intervalMs: 50 },
      );
      await other.query('COMMIT');

      const created = await pending;
      assert.equal(created.status, 201, JSON.stringify(created.body));
      assert.equal(created.body.name, 'after expiry');
      assert.ok(created.body.key, 'a new key, with its secret, not a replay');
    } finally {
      other.release();
    }
  });

  describe('validation of the header', () => {
    it('answers 400 naming Idempotency-Key when it is empty', async () => {
      const { response, error } = await tenant.admin.typed.POST('/v1/api-keys', {
        body: { name: 'empty key', scopes: ['files:read'] },
        params: { header: { 'Idempotency-Key': '' } },
      });
      assert.equal(response.status, 400, JSON.stringify(error));
      assert.equal(error?.error.param, 'Idempotency-Key');
    });

    it('refuses an over-long key on an upload before reading the upload', async function () {
      this.timeout(20_000);
      const url = new URL('/v1/files', api.url);
      const boundary = 'agentplane-boundary';
      const declared = 50 * 1024 * 1024;
      const answered = new Promise<IncomingMessage>((resolve, reject) => {
        const req = httpRequest(url, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${tenant.admin.key}`,
            'idempotency-key': 'k'.repeat(256),
            'content-type': `multipart/form-data; boundary=${boundary}`,
            'content-length': String(declared),
          },
        });
        req.on('response', resolve);
        req.on('error', reject);
        // Only the start of a 50 MB body is ever sent: an answer proves the server did not wait for the rest.
        req.write(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.txt"\r\n\r\n${'x'.repeat(64 * 1024)}`);
      });
      const response = await answered;
      const body = JSON.parse(
        await new Promise<string>((resolve) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString()));
          response.on('end', () => resolve(text));
        }),
      ) as { error: { param: string } };
      response.socket.destroy();
      assert.equal(response.statusCode, 400);
      assert.equal(body.error.param, 'Idempotency-Key');
    });
  });
});
