import assert from 'node:assert/strict';
import { request } from 'node:http';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { newTenant, startTestApi, type TestApi } from '../support/api.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  bytes: Buffer;
}

/** A request with its path exactly as given: fetch would resolve `..` and `%2e%2e` before sending. */
function raw(api: TestApi, method: string, path: string, headers: Record<string, string> = {}, body?: string): Promise<Answer> {
  const { hostname, port } = new URL(api.url);
  return new Promise((resolve, reject) => {
    const sent = body === undefined ? headers : { ...headers, 'content-length': String(Buffer.byteLength(body)) };
    const req = request({ host: hostname, port, method, path, headers: sent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const bytes = Buffer.concat(chunks);
        resolve({ status: res.statusCode!, headers: res.headers, body: bytes.toString('utf8'), bytes });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; font-src 'self'; connect-src 'self'; " +
  "manifest-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'";

function assertSecurityHeaders(answer: Answer) {
  assert.equal(answer.headers['content-security-policy'], CSP);
  assert.equal(answer.headers['x-content-type-options'], 'nosniff');
  assert.equal(answer.headers['referrer-policy'], 'no-referrer');
  assert.equal(answer.headers['x-frame-options'], 'DENY');
}

function assertNotFound(answer: Answer) {
  assert.equal(answer.status, 404, answer.body);
  assert.equal(JSON.parse(answer.body).error.type, 'not_found_error');
}

const INDEX =
  '<!doctype html>\n<html lang="en">\n  <head>\n    <meta charset="utf-8">\n    <script type="module" src="./assets/app-3f9a.js"></script>\n  </head>\n  <body><div id="app"></div></body>\n</html>\n';
const SCRIPT = 'console.log("console");\n';
// The console's sources, which the build copies as they are (console/public) or rewrites (index.html).
const CONSOLE_SOURCES = fileURLToPath(
  new URL(import.meta.url.includes('/dist/') ? '../../../console/' : '../../console/', import.meta.url),
);

describe('serving the web console', () => {
  let root: string;
  let consoleDir: string;
  let api: TestApi;
  let prefixed: TestApi;
  let unbuilt: TestApi;

  before(async function () {
    this.timeout(120_000);
    root = await mkdtemp(join(tmpdir(), 'agentplane-console-'));
    consoleDir = join(root, 'console');
    await mkdir(join(consoleDir, 'assets'), { recursive: true });
    await writeFile(join(consoleDir, 'index.html'), INDEX);
    await writeFile(join(consoleDir, 'assets', 'app-3f9a.js'), SCRIPT);
    await writeFile(join(consoleDir, 'assets', 'app-3f9a.css'), 'body { margin: 0 }\n');
    await writeFile(join(consoleDir, 'assets', 'inter-1a2b.woff2'), Buffer.from([0x77, 0x4f, 0x46, 0x32]));
    await writeFile(join(consoleDir, 'assets', 'logo-77aa.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    await copyFile(join(CONSOLE_SOURCES, 'public', 'favicon.ico'), join(consoleDir, 'favicon.ico'));
    await writeFile(join(consoleDir, 'manifest.json'), '{"name":"Agentplane"}');
    await writeFile(join(consoleDir, '.env'), 'SECRET=1');
    // Beside the console's folder, where a path climbing out of it would land.
    await writeFile(join(root, 'secret.txt'), 'not for the web');
    [api, prefixed, unbuilt] = await Promise.all([
      startTestApi({ worker: false, consoleDir }),
      startTestApi({ worker: false, consoleDir, basePath: '/agentplane' }),
      startTestApi({ worker: false, consoleDir: join(root, 'absent') }),
    ]);
  });

  after(async () => {
    await Promise.all([api, prefixed, unbuilt].map((a) => a?.stop()));
    await rm(root, { recursive: true, force: true });
  });

  describe('the app', () => {
    it('redirects /console to /console/ (308), keeping the query', async () => {
      const answer = await raw(api, 'GET', '/console?tab=runs');
      assert.equal(answer.status, 308);
      assert.equal(answer.headers.location, '/console/?tab=runs');
      assertSecurityHeaders(answer);
    });

    it('serves index.html at /console/ with <base href> first in <head>, not cached, under a strict CSP', async () => {
      const answer = await raw(api, 'GET', '/console/');
      assert.equal(answer.status, 200);
      assert.equal(answer.headers['content-type'], 'text/html; charset=utf-8');
      assert.equal(answer.headers['cache-control'], 'no-store');
      assert.equal(answer.body, INDEX.replace('<head>', '<head><base href="/console/">'));
      assertSecurityHeaders(answer);
    });

    it("answers the app's own routes (paths without an extension) with index.html", async () => {
      for (const path of ['/console/runs', '/console/runs/run_123', '/console/agents/agent_1/versions?x=1', '/console/a.b/c']) {
        const answer = await raw(api, 'GET', path);
        assert.equal(answer.status, 200, path);
        assert.equal(answer.headers['cache-control'], 'no-store');
        assert.ok(answer.body.startsWith('<!doctype html>'), path);
      }
    });

    it('answers HEAD as GET, without the body', async () => {
      const get = await raw(api, 'GET', '/console/runs/run_1');
      const head = await raw(api, 'HEAD', '/console/runs/run_1');
      assert.equal(head.status, 200);
      assert.equal(head.body, '');
      assert.equal(head.headers['content-length'], get.headers['content-length']);
      assert.equal(head.headers['content-type'], get.headers['content-type']);
      assertSecurityHeaders(head);
      const asset = await raw(api, 'HEAD', '/console/assets/app-3f9a.js');
      assert.equal(asset.status, 200);
      assert.equal(asset.body, '');
      assert.equal(asset.headers['content-length'], String(Buffer.byteLength(SCRIPT)));
    });

    it('answers other methods 405 with Allow: GET, HEAD', async () => {
      for (const method of ['POST', 'PUT', 'DELETE', 'PATCH']) {
        const answer = await raw(api, method, '/console/runs', { 'content-type': 'application/json' }, '{}');
        assert.equal(answer.status, 405, method);
        assert.equal(answer.headers.allow, 'GET, HEAD');
        assert.equal(JSON.parse(answer.body).error.code, 'method_not_allowed');
        assertSecurityHeaders(answer);
      }
    });
  });

  describe('files', () => {
    it('serves assets with their type, cached for a year as immutable', async () => {
      const expected: [string, string][] = [
        ['app-3f9a.js', 'text/javascript; charset=utf-8'],
        ['app-3f9a.css', 'text/css; charset=utf-8'],
        ['inter-1a2b.woff2', 'font/woff2'],
        ['logo-77aa.svg', 'image/svg+xml'],
      ];
      for (const [file, type] of expected) {
        const answer = await raw(api, 'GET', `/console/assets/${file}`);
        assert.equal(answer.status, 200, file);
        assert.equal(answer.headers['content-type'], type, file);
        assert.equal(answer.headers['cache-control'], 'public, max-age=31536000, immutable');
        assertSecurityHeaders(answer);
      }
      assert.equal((await raw(api, 'GET', '/console/assets/app-3f9a.js')).body, SCRIPT);
    });

    it('serves other files with an extension, revalidated rather than cached for good', async () => {
      const icon = await raw(api, 'GET', '/console/favicon.ico');
      assert.equal(icon.status, 200);
      assert.equal(icon.headers['content-type'], 'image/vnd.microsoft.icon');
      assert.equal(icon.headers['cache-control'], 'no-cache');
      const manifest = await raw(api, 'GET', '/console/manifest.json');
      assert.equal(manifest.headers['content-type'], 'application/json; charset=utf-8');
      assert.equal(manifest.body, '{"name":"Agentplane"}');
    });

    it("answers /favicon.ico at the root with the console's icon, which its page links, with or without a base path", async () => {
      const icon = await readFile(join(CONSOLE_SOURCES, 'public', 'favicon.ico'));
      assert.deepEqual([...icon.subarray(0, 4)], [0, 0, 1, 0], 'an ICO file');
      for (const [server, path] of [
        [api, '/favicon.ico'],
        [prefixed, '/agentplane/favicon.ico'],
        [prefixed, '/favicon.ico'],
      ] as const) {
        const answer = await raw(server, 'GET', path);
        assert.equal(answer.status, 200, path);
        assert.equal(answer.headers['content-type'], 'image/vnd.microsoft.icon');
        assert.ok(answer.bytes.equals(icon), path);
      }
      const page = await readFile(join(CONSOLE_SOURCES, 'index.html'), 'utf8');
      assert.match(page, /<link rel="icon" href="\/favicon\.ico"/);
      assert.match(page, /<link rel="icon" href="\/favicon\.svg" type="image\/svg\+xml"/);
      assertNotFound(await raw(unbuilt, 'GET', '/favicon.ico'));
    });

    it('answers 404 for a missing file with an extension, and for anything missing under assets/, never index.html', async () => {
      for (const path of [
        '/console/x.js',
        '/console/runs/run_1/logo.png',
        '/console/assets/missing.js',
        '/console/assets/nested',
        '/console/assets/',
        '/console/assets',
      ]) {
        const answer = await raw(api, 'GET', path);
        assertNotFound(answer);
        assertSecurityHeaders(answer);
      }
    });

    it('lists no directory and serves no hidden file', async () => {
      for (const path of ['/console/assets/', '/console/.env', '/console/assets/.', '/console/%2eenv'])
        assertNotFound(await raw(api, 'GET', path));
    });

    it('refuses paths that would climb out of its folder, however they are spelled', async () => {
      for (const path of [
        '/console/../secret.txt',
        '/console/assets/../../secret.txt',
        '/console/%2e%2e/secret.txt',
        '/console/assets/%2e%2e/%2e%2e/secret.txt',
        '/console/..%2fsecret.txt',
        '/console/assets/..%2F..%2Fsecret.txt',
        '/console/..%5csecret.txt',
        '/console/assets/..\\..\\secret.txt',
        '/console/%2e%2e%2fsecret.txt',
        '/console/assets/%252e%252e/secret.txt',
        '/console/assets/%00.js',
        '/console/%ZZ.js',
      ]) {
        const answer = await raw(api, 'GET', path);
        assert.ok([400, 404].includes(answer.status), `${path} answered ${answer.status}`);
        assert.ok(!answer.body.includes('not for the web'), path);
      }
    });
  });

  describe('under a base path (AGENTPLANE_BASE_PATH=/agentplane)', () => {
    it('answers with and without the prefix, as an ingress may or may not strip it', async () => {
      for (const path of ['/agentplane/console/runs/run_1', '/console/runs/run_1']) {
        const answer = await raw(prefixed, 'GET', path);
        assert.equal(answer.status, 200, path);
        assert.ok(answer.body.includes('<head><base href="/agentplane/console/">'), answer.body);
      }
      assert.equal((await raw(prefixed, 'GET', '/agentplane/console/assets/app-3f9a.js')).body, SCRIPT);
      assert.equal((await raw(prefixed, 'GET', '/agentplane/healthz')).status, 200);
      assert.equal((await raw(prefixed, 'GET', '/agentplane/v1/openapi.json')).status, 200);
    });

    it('redirects /console to the prefixed /console/', async () => {
      for (const path of ['/agentplane/console', '/console']) {
        const answer = await raw(prefixed, 'GET', path);
        assert.equal(answer.status, 308);
        assert.equal(answer.headers.location, '/agentplane/console/');
      }
    });

    it('strips only a whole leading segment', async () => {
      assertNotFound(await raw(prefixed, 'GET', '/agentplanex/healthz'));
      assertNotFound(await raw(prefixed, 'GET', '/x/agentplane/healthz'));
    });

    it('scopes the session cookie to the prefix', async () => {
      const tenant = await newTenant(prefixed, 'console prefix');
      const origin = prefixed.url;
      const signIn = await raw(
        prefixed,
        'POST',
        '/agentplane/v1/sessions',
        { origin, 'content-type': 'application/json' },
        JSON.stringify({ api_key: tenant.admin.key }),
      );
      assert.equal(signIn.status, 201, signIn.body);
      const [cookie] = signIn.headers['set-cookie'] as string[];
      assert.match(cookie!, /^agentplane_session=[A-Za-z0-9]{32}; Path=\/agentplane\/; HttpOnly; SameSite=Strict; Max-Age=28800$/);
      const agents = await raw(prefixed, 'GET', '/agentplane/v1/agents', { cookie: cookie!.split(';')[0]! });
      assert.equal(agents.status, 200, agents.body);
    });
  });

  it('answers 404 console_not_built when the console was not built, and keeps serving the API', async () => {
    for (const path of ['/console/', '/console/runs']) {
      const answer = await raw(unbuilt, 'GET', path);
      assertNotFound(answer);
      assert.equal(JSON.parse(answer.body).error.code, 'console_not_built');
      assertSecurityHeaders(answer);
    }
    assertNotFound(await raw(unbuilt, 'GET', '/console/assets/app-3f9a.js'));
    assert.equal((await raw(unbuilt, 'GET', '/healthz')).status, 200);
  });
});
