import assert from 'node:assert/strict';
import { createServer, request, type Server } from 'node:http';
import { connect, createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { temporalConnection } from '../../workflows/temporal-connection.js';
import { pino } from 'pino';
import { createApp } from '../../api/app.js';
import type { ApiDeps } from '../../api/context.js';
import { openapiDocument } from '../../api/openapi-document.js';
import { MAX_JSON_DEPTH } from '../../records/json-depth.js';
import { servedDocument } from '../../api/served-document.js';
import { createDb } from '../../records/db.js';
import { apiDepsOf, sharedApi, newTenant, startTestApi, type Tenant, type TestApi } from '../support/api.js';
import { ApiClient, type ApiResponse } from '../support/client.js';

/** An API built from `deps` on a random loopback port, for readiness with a dependency down. */
async function serve(services: Pick<ApiDeps, 'db' | 'blobs' | 'temporal' | 'log'>): Promise<{ client: ApiClient; server: Server }> {
  const server = createServer(createApp(await apiDepsOf(services)).app.callback());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { client: new ApiClient(`http://127.0.0.1:${port}`), server };
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

/** A request with any method, including those fetch refuses to send (TRACE, CONNECT). */
function rawRequest(url: string, method: string, key?: string): Promise<ApiResponse> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, headers: key ? { authorization: `Bearer ${key}` } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const body = (res.headers['content-type'] ?? '').startsWith('application/json') ? JSON.parse(text) : text;
        resolve({ status: res.statusCode!, headers: new Headers(res.headers as Record<string, string>), body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** What the server wrote back to `bytes` sent as they are on a fresh connection, read until it closed. */
function exchange(url: string, bytes: string): Promise<{ status: number; headers: Headers; body: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const [statusLine = '', ...fields] = head.split('\r\n');
      const headers = new Headers(
        fields.map((field) => [field.slice(0, field.indexOf(':')), field.slice(field.indexOf(':') + 1).trim()] as [string, string]),
      );
      resolve({ status: Number(statusLine.split(' ')[1]), headers, body });
    });
  });
}

function assertError(response: ApiResponse, status: number, code: string, param?: string | null) {
  assert.equal(response.status, status, JSON.stringify(response.body));
  assert.equal(response.body.error.code, code);
  if (param !== undefined) assert.equal(response.body.error.param, param);
}

describe('system endpoints and request handling', () => {
  let api: TestApi;
  let anonymous: ApiClient;
  let tenant: Tenant;

  before(async function () {
    this.timeout(120_000);
    api = await sharedApi();
    anonymous = new ApiClient(api.url);
    tenant = await newTenant(api, 'system');
  });

  describe('health', () => {
    it('answers /healthz with 200 and no key', async () => {
      const response = await anonymous.get('/healthz');
      assert.equal(response.status, 200);
      assert.deepEqual(response.body, { status: 'ok' });
    });

    it('answers /readyz with 200 when PostgreSQL, Temporal and the blob store answer', async () => {
      const response = await anonymous.get('/readyz');
      assert.equal(response.status, 200);
      assert.deepEqual(response.body, { status: 'ok', checks: { postgres: 'ok', temporal: 'ok', blobs: 'ok' } });
      assert.equal(response.headers.get('retry-after'), null);
    });

    // The client's own retries are left out: they would outlive the connection closed at the end.
    const unreachableTemporal = (address: string) => Connection.lazy({ address, interceptors: [] });

    async function readinessWith(connection: Connection): Promise<{ response: ApiResponse; seconds: number }> {
      const { client, server } = await serve({
        db: api.services.db,
        blobs: api.services.blobs,
        temporal: new Client({ connection }),
        log: pino({ level: 'silent' }),
      });
      try {
        const started = Date.now();
        const response = await client.get('/readyz');
        const seconds = (Date.now() - started) / 1000;
        assert.equal((await client.get('/healthz')).status, 200, 'liveness does not depend on the dependencies');
        return { response, seconds };
      } finally {
        await close(server);
        await connection.close();
      }
    }

    it('answers /readyz with 503, Retry-After and the failing check named when Temporal refuses connections', async function () {
      this.timeout(30_000);
      const { response } = await readinessWith(unreachableTemporal('127.0.0.1:1'));
      assert.equal(response.status, 503);
      assert.ok(Number(response.headers.get('retry-after')) > 0, 'Retry-After is missing');
      assert.deepEqual(response.body, { status: 'unavailable', checks: { postgres: 'ok', temporal: 'unavailable', blobs: 'ok' } });
    });

    it('answers /readyz with 503 within a few seconds when Temporal accepts connections but never answers', async function () {
      this.timeout(30_000);
      const sockets = new Set<Socket>();
      const silent = createNetServer((socket) => sockets.add(socket));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = silent.address() as AddressInfo;
        const { response, seconds } = await readinessWith(unreachableTemporal(`127.0.0.1:${port}`));
        assert.equal(response.status, 503);
        assert.equal(response.body.checks.temporal, 'unavailable');
        assert.ok(seconds < 5, `readiness took ${seconds} s`);
      } finally {
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    });

    it('answers /readyz with 503 naming postgres when the database is unreachable', async function () {
      this.timeout(30_000);
      const db = createDb('postgres://agentplane@127.0.0.1:1/agentplane', { log: pino({ level: 'silent' }) });
      const { client, server } = await serve({
        db,
        blobs: api.services.blobs,
        temporal: api.services.temporal,
        log: pino({ level: 'silent' }),
      });
      try {
        const response = await client.get('/readyz');
        assert.equal(response.status, 503);
        assert.ok(Number(response.headers.get('retry-after')) > 0, 'Retry-After is missing');
        assert.deepEqual(response.body, { status: 'unavailable', checks: { postgres: 'unavailable', temporal: 'ok', blobs: 'ok' } });
      } finally {
        await close(server);
        await db.end();
      }
    });
  });

  describe('a dependency outage', () => {
    it('answers API requests with 503 dependency_unavailable and Retry-After, not 500, while the database is unreachable', async function () {
      this.timeout(30_000);
      const db = createDb('postgres://agentplane@127.0.0.1:1/agentplane', { log: pino({ level: 'silent' }) });
      const { client, server } = await serve({
        db,
        blobs: api.services.blobs,
        temporal: api.services.temporal,
        log: pino({ level: 'silent' }),
      });
      try {
        const response = await client.withKey(`ap_${'x'.repeat(32)}`).get('/v1/files');
        assertError(response, 503, 'dependency_unavailable', null);
        assert.equal(response.body.error.type, 'service_unavailable_error');
        assert.ok(Number(response.headers.get('retry-after')) > 0, 'Retry-After is missing');
      } finally {
        await close(server);
        await db.end();
      }
    });

    it('deletes a file without waiting out the Temporal client when Temporal is unreachable', async function () {
      this.timeout(60_000);
      // The API's own connection, retries included: they are what a request must not wait for.
      const connection = temporalConnection('127.0.0.1:1');
      const { client, server } = await serve({
        db: api.services.db,
        blobs: api.services.blobs,
        temporal: new Client({ connection }),
        log: pino({ level: 'silent' }),
      });
      try {
        const keyed = client.withKey(tenant.admin.key);
        const upload = await keyed.upload({ file: { data: Buffer.from('soon gone'), filename: 'gone.txt' }, purpose: 'attachment' });
        assert.equal(upload.status, 200);
        // Well under the Temporal client's own 20 s of retries, well over the API's bound.
        const removal = await fetch(`${keyed.baseUrl}/v1/files/${upload.body.id}`, {
          method: 'DELETE',
          headers: { authorization: `Bearer ${tenant.admin.key}` },
          signal: AbortSignal.timeout(10_000),
        });
        assert.equal(removal.status, 200);
        assert.equal((await keyed.get(`/v1/files/${upload.body.id}`)).status, 404);
      } finally {
        await close(server);
        await connection.close();
      }
    });
  });

  describe('a database that accepts connections but never answers', () => {
    it('answers API requests with 503 dependency_unavailable and Retry-After instead of waiting forever', async function () {
      this.timeout(30_000);
      const sockets = new Set<Socket>();
      const silent = createNetServer((socket) => sockets.add(socket));
      await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
      const { port } = silent.address() as AddressInfo;
      const db = createDb(`postgres://agentplane@127.0.0.1:${port}/agentplane`, { log: pino({ level: 'silent' }) });
      const { client, server } = await serve({
        db,
        blobs: api.services.blobs,
        temporal: api.services.temporal,
        log: pino({ level: 'silent' }),
      });
      try {
        const response = await client.withKey(`ap_${'x'.repeat(32)}`).get('/v1/files');
        assertError(response, 503, 'dependency_unavailable', null);
        assert.ok(Number(response.headers.get('retry-after')) > 0, 'Retry-After is missing');
      } finally {
        await close(server);
        await db.end();
        for (const socket of sockets) socket.destroy();
        await new Promise((resolve) => silent.close(resolve));
      }
    });
  });

  describe('metrics and the document', () => {
    it('serves Prometheus text with the request-duration histogram by route template', async () => {
      const file = await tenant.admin.upload({ file: { data: Buffer.from('measured'), filename: 'm.txt' }, purpose: 'attachment' });
      assert.equal((await tenant.admin.get(`/v1/files/${file.body.id}`)).status, 200);
      const response = await api.root.get<string>('/metrics');
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
      const text = response.body;
      assert.match(text, /^# HELP agentplane_http_request_duration_seconds /m);
      assert.match(text, /^# TYPE agentplane_http_request_duration_seconds histogram$/m);
      const counts = text.split('\n').filter((line) => line.startsWith('agentplane_http_request_duration_seconds_count{'));
      assert.ok(
        counts.some((l) => l.includes('method="GET"') && l.includes('route="/v1/files/:id"') && l.includes('status="200"')),
        counts.join('\n'),
      );
      assert.ok(!counts.some((l) => l.includes(file.body.id)), 'ids must not become label values');
      assert.match(text, /^agentplane_process_cpu_seconds_total \d/m);
    });

    it('keeps /metrics on the API port from anyone but the bootstrap key: 401 without a key, 403 bootstrap_key_required with another', async () => {
      assertError(await anonymous.get('/metrics'), 401, 'invalid_api_key');
      assertError(await tenant.admin.get('/metrics'), 403, 'bootstrap_key_required');
    });

    it('serves /metrics without a key on AGENTPLANE_METRICS_PORT, and none on the API port then', async () => {
      const separate = await startTestApi({ worker: false, metricsPort: 0 });
      try {
        assert.ok(separate.metricsUrl);
        assert.notEqual(new URL(separate.metricsUrl).port, new URL(separate.url).port);
        const scraped = await fetch(separate.metricsUrl);
        assert.equal(scraped.status, 200);
        assert.match(await scraped.text(), /^# TYPE agentplane_http_request_duration_seconds histogram$/m);
        for (const client of [new ApiClient(separate.url), separate.root])
          assertError(await client.get('/metrics'), 404, 'route_not_found');
      } finally {
        await separate.stop();
      }
    });

    it('serves the OpenAPI document at /v1/openapi.json without a key, with the target rules of its deployment', async () => {
      const response = await anonymous.get('/v1/openapi.json');
      assert.equal(response.status, 200);
      assert.match(response.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(response.body.openapi, '3.1.0');
      // The test deployment lets tools and webhooks reach loopback.
      assert.deepEqual(response.body, JSON.parse(JSON.stringify(servedDocument({ toolsAllowPrivate: true, webhooksAllowPrivate: true }))));
      assert.deepEqual(response.body.paths, JSON.parse(JSON.stringify(openapiDocument.paths)));
    });
  });

  describe('x-request-id', () => {
    const cases: [string, (headers: Record<string, string>) => Promise<ApiResponse>, number][] = [
      ['a success', (headers) => anonymous.get('/healthz', headers), 200],
      ['an authenticated success', (headers) => tenant.admin.get('/v1/files', headers), 200],
      ['a 401', (headers) => anonymous.get('/v1/files', headers), 401],
      ['a 403', async (headers) => (await tenant.keyWith('files:read')).get('/v1/api-keys', headers), 403],
      ['a 404 for an unknown route', (headers) => anonymous.get('/v1/no-such-thing', headers), 404],
      ['a 405', (headers) => anonymous.request('PUT', '/healthz', { headers }), 405],
      ['a 400', (headers) => tenant.admin.post('/v1/api-keys', {}, headers), 400],
    ];
    for (const [what, send, status] of cases) {
      it(`is on ${what}, and a caller's own id is echoed`, async () => {
        const generated = await send({});
        assert.equal(generated.status, status);
        assert.match(generated.headers.get('x-request-id') ?? '', /^req_[A-Za-z0-9]+$/);
        const mine = `trace-${what.replace(/\W+/g, '-')}-${Date.now()}`;
        const echoed = await send({ 'x-request-id': mine });
        assert.equal(echoed.status, status);
        assert.equal(echoed.headers.get('x-request-id'), mine);
      });
    }

    it('replaces a caller id that is too long or carries odd characters', async () => {
      for (const bad of ['x'.repeat(129), 'has spaces in it', 'semi;colon']) {
        const response = await anonymous.get('/healthz', { 'x-request-id': bad });
        assert.match(response.headers.get('x-request-id') ?? '', /^req_/);
      }
    });

    it('differs between requests', async () => {
      const [a, b] = await Promise.all([anonymous.get('/healthz'), anonymous.get('/healthz')]);
      assert.notEqual(a.headers.get('x-request-id'), b.headers.get('x-request-id'));
    });
  });

  describe('unknown routes and methods', () => {
    it('answers an unknown route with 404 route_not_found, with or without a key', async () => {
      assertError(await anonymous.get('/v1/no-such-thing'), 404, 'route_not_found');
      assertError(await anonymous.get('/nowhere'), 404, 'route_not_found');
      assertError(await tenant.admin.get('/v1/no-such-thing'), 404, 'route_not_found');
      assertError(await tenant.admin.post('/v1/no-such-thing', { a: 1 }), 404, 'route_not_found');
    });

    it('answers a known route with a method it lacks with 405 and Allow', async () => {
      const put = await tenant.admin.request('PUT', '/v1/files', { json: {} });
      assertError(put, 405, 'method_not_allowed');
      assert.deepEqual(put.headers.get('allow')?.split(/,\s*/).sort(), ['GET', 'HEAD', 'POST']);
      const post = await anonymous.request('POST', '/healthz');
      assertError(post, 405, 'method_not_allowed');
      assert.deepEqual(post.headers.get('allow')?.split(/,\s*/).sort(), ['GET', 'HEAD']);
    });

    for (const method of ['TRACE', 'PROPFIND', 'LOCK', 'QUERY']) {
      it(`answers ${method}, a method the API never uses, on a known route with 405 and Allow`, async () => {
        for (const [path, allowed] of [
          ['/healthz', ['GET', 'HEAD']],
          ['/v1/files', ['GET', 'HEAD', 'POST']],
          ['/v1/files/file_x', ['DELETE', 'GET', 'HEAD']],
        ] as const) {
          const response = await rawRequest(api.url + path, method, tenant.admin.key);
          assertError(response, 405, 'method_not_allowed');
          assert.deepEqual(response.headers.get('allow')?.split(/,\s*/).sort(), allowed, path);
        }
        assertError(await rawRequest(`${api.url}/v1/no-such-thing`, method, tenant.admin.key), 404, 'route_not_found');
      });
    }

    it('answers OPTIONS on a known route with 200 and Allow, with or without a key', async () => {
      for (const key of [tenant.admin.key, undefined]) {
        const response = await rawRequest(`${api.url}/v1/files`, 'OPTIONS', key);
        assert.equal(response.status, 200);
        assert.deepEqual(response.headers.get('allow')?.split(/,\s*/).sort(), ['GET', 'HEAD', 'POST']);
      }
    });
  });

  describe('requests refused before any route sees them', () => {
    it('answers a URL over the header limit (a 20,000-character query) with 431 request_header_too_large in the one error body', async () => {
      const answer = await exchange(
        api.url,
        `GET /v1/files?after=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ${tenant.admin.key}\r\n\r\n`,
      );
      assert.equal(answer.status, 431, answer.body);
      assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(answer.headers.get('content-length'), String(Buffer.byteLength(answer.body)));
      const { error } = JSON.parse(answer.body);
      assert.deepEqual(
        { type: error.type, code: error.code, param: error.param },
        { type: 'invalid_request_error', code: 'request_header_too_large', param: null },
      );
      assert.match(error.message, /16384 bytes/);
      assert.equal((await anonymous.get('/healthz')).status, 200);
    });

    it('answers bytes that are not HTTP/1.1 with 400 malformed_request in the one error body', async () => {
      const answer = await exchange(api.url, 'HELLO THERE\r\n\r\n');
      assert.equal(answer.status, 400, answer.body);
      assert.equal(answer.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(JSON.parse(answer.body).error.code, 'malformed_request');
    });
  });

  describe('list cursors', () => {
    it('reads an empty after= or before= as no cursor, and answers the first page', async () => {
      const first = await tenant.admin.get('/v1/api-keys?limit=1');
      assert.equal(first.status, 200, JSON.stringify(first.body));
      for (const query of ['after=', 'before=', 'after=&before=']) {
        const response = await tenant.admin.get(`/v1/api-keys?limit=1&${query}`);
        assert.equal(response.status, 200, `${query}: ${JSON.stringify(response.body)}`);
        assert.deepEqual(
          response.body.data.map((key: { id: string }) => key.id),
          first.body.data.map((key: { id: string }) => key.id),
          query,
        );
      }
    });
  });

  describe('the NUL character in a URL', () => {
    for (const [method, path, param] of [
      ['GET', '/v1/files/file_%00', null],
      ['DELETE', '/v1/files/file_%00', null],
      ['DELETE', '/v1/api-keys/key_%00', null],
      ['GET', '/v1/files?after=file_%00', 'after'],
      ['GET', '/v1/api-keys?before=%00', 'before'],
      ['GET', '/v1/audit-logs?action=file.%00create', 'action'],
      ['GET', '/v1/audit-logs?target_id=%00', 'target_id'],
    ] as const) {
      it(`answers ${method} ${path} with 400 invalid_parameter`, async () => {
        assertError(await tenant.admin.request(method, path), 400, 'invalid_parameter', param);
      });
    }
  });

  describe('JSON bodies', () => {
    for (const [what, body] of [
      ['a truncated object', '{"name": "x", "scopes": ['],
      ['a trailing comma', '{"name": "x",}'],
      ['a bare string', '"just a string"'],
    ]) {
      it(`answers ${what} with 400 invalid_json`, async () => {
        const response = await tenant.admin.request('POST', '/v1/api-keys', {
          body: body!,
          headers: { 'content-type': 'application/json' },
        });
        assertError(response, 400, 'invalid_json');
        assert.equal(response.body.error.type, 'invalid_request_error');
      });
    }

    it('answers a body holding a __proto__ key with 400 invalid_json that names the key, as valid JSON is not', async () => {
      const response = await tenant.admin.request('POST', '/v1/agents', {
        body: '{"name": "x", "model": "gpt-4.1-mini", "tools": [{"type": "builtin", "name": "read_file", "policy": {"deny_when": {"__proto__": {}}}}]}',
        headers: { 'content-type': 'application/json' },
      });
      assertError(response, 400, 'invalid_json');
      assert.match(response.body.error.message, /__proto__/);
    });

    it(`answers a body nested deeper than ${MAX_JSON_DEPTH} levels with 400 invalid_json, never 500, and takes one at the limit`, async () => {
      // A hundred thousand levels within a megabyte: what walked it by recursion ran out of stack.
      const far = `{"name": "deep", "model": "gpt-4.1-mini", "metadata": ${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
      const refused = await tenant.admin.request('POST', '/v1/agents', { body: far, headers: { 'content-type': 'application/json' } });
      assertError(refused, 400, 'invalid_json');
      assert.equal(refused.body.error.message, `The body nests objects and arrays deeper than ${MAX_JSON_DEPTH} levels, the most allowed.`);
      // An item's expected answer is any JSON: the body, its `items` and the item take three levels of it.
      const dataset = (await tenant.admin.post('/v1/datasets', { name: 'deep answers' })).body;
      const nested = (levels: number): unknown => (levels === 0 ? 'Paris' : [nested(levels - 1)]);
      const atLimit = await tenant.admin.post(`/v1/datasets/${dataset.id}/items`, {
        items: [{ input: 'Hi', expected: nested(MAX_JSON_DEPTH - 3) }],
      });
      assert.equal(atLimit.status, 201, JSON.stringify(atLimit.body));
      const past = await tenant.admin.post(`/v1/datasets/${dataset.id}/items`, {
        items: [{ input: 'Hi', expected: nested(MAX_JSON_DEPTH - 2) }],
      });
      assertError(past, 400, 'invalid_json');
      assert.equal((await tenant.admin.get(`/v1/datasets/${dataset.id}/items`)).body.data.length, 1);
      assert.equal((await tenant.admin.get('/v1/agents?limit=100')).body.data.filter((a: { name: string }) => a.name === 'deep').length, 0);
    });

    it("answers an id in the body that names nothing of the project with 404 whose param is the id's field", async () => {
      const agent = (await tenant.admin.post('/v1/agents', { name: 'referee', model: 'gpt-4.1-mini' })).body;
      const dataset = (await tenant.admin.post('/v1/datasets', { name: 'references' })).body;
      const run = `/v1/agents/${agent.id}/run`;
      for (const [path, body, param] of [
        [run, { input: 'Hi', thread_id: 'thread_none' }, 'thread_id'],
        [run, { input: 'Hi', previous_run_id: 'run_none' }, 'previous_run_id'],
        [run, { input: 'Hi', file_ids: ['file_none'] }, 'file_ids.0'],
        ['/v1/agents/agent_none/run', { input: 'Hi' }, 'id'],
        ['/v1/schedules', { agent_id: 'agent_none', interval_seconds: 60, run: { input: 'Hi' } }, 'agent_id'],
        ['/v1/schedules', { network_id: 'net_none', interval_seconds: 60, run: { input: 'Hi' } }, 'network_id'],
        ['/v1/schedules', { agent_id: agent.id, interval_seconds: 60, run: { input: 'Hi', file_ids: ['file_none'] } }, 'run.file_ids.0'],
        ['/v1/experiments', { dataset_id: 'ds_none', agent_id: agent.id }, 'dataset_id'],
        ['/v1/experiments', { dataset_id: dataset.id, agent_id: 'agent_none' }, 'agent_id'],
        ['/v1/budgets', { limit_usd: '5', period: 'day', scope: { type: 'agent', id: 'agent_none' } }, 'scope.id'],
        ['/v1/api-keys', { name: 'k', scopes: ['files:read'], project_id: 'proj_none' }, 'project_id'],
      ] as const) {
        const answer = await (path === '/v1/api-keys' ? api.root : tenant.admin).post(path, body);
        assertError(answer, 404, 'resource_not_found', param);
      }
      // A model a schedule's run names is its field under `run`.
      const schedule = { agent_id: agent.id, interval_seconds: 60 };
      assertError(
        await tenant.admin.post('/v1/schedules', { ...schedule, run: { input: 'Hi', model: 'no-such-model' } }),
        400,
        'model_not_found',
        'run.model',
      );
    });

    it('answers an unknown field with 400 unknown_parameter naming it', async () => {
      const response = await tenant.admin.post('/v1/api-keys', { name: 'x', scopes: ['files:read'], expires: 'never' });
      assertError(response, 400, 'unknown_parameter', 'expires');
      assertError(await api.root.post('/v1/projects', { name: 'x', region: 'eu' }), 400, 'unknown_parameter', 'region');
    });

    it('answers a string holding the NUL character (U+0000) with 400 naming it, and creates nothing', async () => {
      const name = `nul ${Date.now()}\u0000`;
      assertError(await api.root.post('/v1/projects', { name }), 400, 'invalid_parameter', 'name');
      assertError(await tenant.admin.post('/v1/api-keys', { name, scopes: ['files:read'] }), 400, 'invalid_parameter', 'name');
      assertError(
        await tenant.admin.post('/v1/api-keys', { name: 'x', scopes: ['files:read'], project_id: 'proj_\u0000' }),
        400,
        'invalid_parameter',
        'project_id',
      );
      const { rows } = await api.services.db.query(
        "SELECT 1 FROM projects WHERE name LIKE 'nul %' UNION ALL SELECT 1 FROM api_keys WHERE name LIKE 'nul %'",
      );
      assert.equal(rows.length, 0);
    });

    it('answers a string holding half of a surrogate pair (a lone JSON `\\ud83d`) with 400 naming it, and creates nothing', async () => {
      // What a client sends when it cuts a text between the two halves of an emoji; jsonb cannot hold it.
      const agent = (await tenant.admin.post('/v1/agents', { name: 'halves', model: 'gpt-4.1-mini' })).body;
      for (const [method, path, body, param] of [
        ['POST', '/v1/agents', { name: 'cut \ud83d', model: 'gpt-4.1-mini' }, 'name'],
        ['POST', '/v1/agents', { name: 'cut', model: 'gpt-4.1-mini', metadata: { note: 'tail \ude00' } }, 'metadata.note'],
        ['PATCH', `/v1/agents/${agent.id}`, { metadata: { ['key \ud800']: 'v' } }, 'metadata.key \ud800'],
        ['POST', `/v1/agents/${agent.id}/run`, { input: 'Smile \ud83d' }, 'input'],
      ] as const) {
        const answer = await tenant.admin.request(method, path, { json: body });
        assertError(answer, 400, 'invalid_parameter', param);
        assert.match(answer.body.error.message, /half of a surrogate pair/);
      }
      const agents = (await tenant.admin.get('/v1/agents?limit=100')).body.data as { name: string }[];
      assert.deepEqual(
        agents.filter((a) => a.name.startsWith('cut')),
        [],
      );
      assert.deepEqual((await tenant.admin.get(`/v1/agents/${agent.id}/runs`)).body.data, []);
      assert.deepEqual((await tenant.admin.get(`/v1/agents/${agent.id}`)).body.metadata, {});
    });

    it('answers a missing or mistyped field with 400 naming it', async () => {
      assertError(await tenant.admin.post('/v1/api-keys', { name: 'x' }), 400, 'missing_parameter', 'scopes');
      assertError(await tenant.admin.post('/v1/api-keys', { name: 'x', scopes: ['root'] }), 400, 'invalid_parameter', 'scopes.0');
      assertError(await api.root.post('/v1/projects', { name: 7 }), 400, 'invalid_parameter', 'name');
    });

    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      it(`answers a JSON POST sent as ${type.split(';')[0]} with 415`, async () => {
        const response = await tenant.admin.request('POST', '/v1/api-keys', {
          body: JSON.stringify({ name: 'x', scopes: ['files:read'] }),
          headers: { 'content-type': type },
        });
        assertError(response, 415, 'unsupported_content_type');
      });
    }

    it('answers a JSON POST without a content type with 415', async () => {
      const response = await api.root.request('POST', '/v1/projects', { body: new Blob([JSON.stringify({ name: 'x' })]) });
      assertError(response, 415, 'unsupported_content_type');
    });

    it('answers a JSON body over 1 MB with 413 and creates nothing', async () => {
      const name = `too big ${Date.now()}`;
      const response = await api.root.post('/v1/projects', { name, padding: 'x'.repeat(1024 * 1024) });
      assertError(response, 413, 'body_too_large');
      const { rows } = await api.services.db.query('SELECT 1 FROM projects WHERE name = $1', [name]);
      assert.equal(rows.length, 0);
    });

    it('accepts a JSON body just under 1 MB and judges it by its content', async () => {
      const response = await api.root.post('/v1/projects', { name: 'x', padding: 'x'.repeat(1000 * 1000) });
      assertError(response, 400, 'unknown_parameter', 'padding');
    });
  });
});
