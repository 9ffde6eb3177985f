import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import Router from '@koa/router';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { Client, Connection } from '@temporalio/client';
import { pino } from 'pino';
import { createApp } from '../../api/app.js';
import type { ApiDeps, ApiState } from '../../api/context.js';
import { createMetrics } from '../../api/metrics.js';
import { KeyCache } from '../../api/middleware/auth.js';
import { openapiDocument } from '../../api/openapi-document.js';
import { systemRoutes } from '../../api/routes/system.js';
import { signInRoute } from '../../api/routes/sessions/sessions.js';
import { FilesystemBlobStore } from '../../records/blobs/filesystem.js';
import { createDb } from '../../records/db.js';
import { apiDepsOf } from '../support/api.js';

const root = fileURLToPath(new URL(import.meta.url.includes('/dist/') ? '../../../' : '../../', import.meta.url));
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** `METHOD /path/{param}` for every route on a router; HEAD is implied by GET and left out. */
function operationsOf(router: Router<ApiState>): string[] {
  return router.stack.flatMap((layer) =>
    layer.methods
      .filter((method) => method !== 'HEAD')
      .map((method) => `${method} ${String(layer.path).replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`),
  );
}

function documentedOperations(): string[] {
  return Object.entries(openapiDocument.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => HTTP_METHODS.has(key))
      .map((method) => `${method.toUpperCase()} ${path}`),
  );
}

describe('the code and api/openapi.yaml agree', () => {
  let deps: ApiDeps;
  let connection: Connection;

  before(async () => {
    // Nothing here is reached: building the routers needs the dependencies, not their services.
    connection = Connection.lazy({ address: '127.0.0.1:1' });
    deps = await apiDepsOf({
      db: createDb('postgres://agentplane@127.0.0.1:1/unused', { log: pino({ level: 'silent' }) }),
      blobs: new FilesystemBlobStore(join(tmpdir(), 'agentplane-contract-unused')),
      temporal: new Client({ connection }),
      log: pino({ level: 'silent' }),
    });
  });

  after(async () => {
    await connection.close();
    await deps.db.end();
  });

  function routedOperations(): string[] {
    // The routes that need no key, as createApp mounts them ahead of the authenticated ones.
    const system = new Router<ApiState>();
    systemRoutes(system, deps, createMetrics(), new KeyCache());
    signInRoute(system, deps);
    return [...operationsOf(system), ...operationsOf(createApp(deps).router)];
  }

  it('registers each route once', () => {
    const routed = routedOperations();
    assert.ok(routed.length > 0);
    assert.deepEqual(
      routed.filter((op, i) => routed.indexOf(op) !== i),
      [],
    );
  });

  it('documents every route the app registers, with the same method', () => {
    const documented = new Set(documentedOperations());
    const undocumented = routedOperations().filter((op) => !documented.has(op));
    assert.deepEqual(undocumented, [], 'routes missing from api/openapi.yaml');
  });

  it('serves every operation the document describes', () => {
    const routed = new Set(routedOperations());
    const unrouted = documentedOperations().filter((op) => !routed.has(op));
    assert.deepEqual(unrouted, [], 'operations in api/openapi.yaml without a route');
  });

  it('keeps every schema of the document a valid JSON Schema (2020-12)', () => {
    // The meta-schema does not look into `components` or `paths`: each schema is checked on its own.
    const ajv = new Ajv2020({ strict: false });
    const invalid = (schemas: [string, unknown][]) =>
      schemas.filter(([, schema]) => !ajv.validateSchema(schema as object)).map(([name]) => name);
    const parameters = Object.entries(openapiDocument.paths).flatMap(([path, item]) =>
      Object.entries(item as Record<string, { parameters?: { name: string; schema?: unknown }[] }>).flatMap(([method, operation]) =>
        (operation.parameters ?? []).map((p): [string, unknown] => [`${method} ${path} ${p.name}`, p.schema ?? {}]),
      ),
    );
    const schemas = [...Object.entries(openapiDocument.components.schemas), ...parameters];
    assert.ok(schemas.length > 100, `${schemas.length} schemas found`);
    assert.deepEqual(invalid(schemas), []);
    assert.deepEqual(invalid([['Broken', { type: 'text' }]]), ['Broken'], 'a schema of an unknown type is found');
  });

  it('gives every operation a unique operationId', () => {
    const ids = Object.values(openapiDocument.paths).flatMap((item) =>
      Object.entries(item)
        .filter(([key]) => HTTP_METHODS.has(key))
        .map(([, operation]) => operation.operationId),
    );
    assert.ok(ids.every((id) => typeof id === 'string' && id.length > 0));
    assert.equal(new Set(ids).size, ids.length);
  });

  it('states in the upload schema what the upload handler refuses: an empty file, unknown fields, metadata in both forms', () => {
    const ajv = new Ajv2020({ strict: false });
    ajv.addSchema({ ...openapiDocument, $id: 'agentplane-openapi' });
    const upload = ajv.compile({ $ref: 'agentplane-openapi#/paths/~1v1~1files/post/requestBody/content/multipart~1form-data/schema' });
    const fields = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`metadata[k${i}]`, 'v']));
    assert.ok(upload({ file: 'x', purpose: 'context', metadata: { team: 'search' } }));
    assert.ok(upload({ file: 'x', purpose: 'context', ...fields(16) }));
    for (const [what, body] of [
      ['an empty file', { file: '', purpose: 'context' }],
      ['an unknown field', { file: 'x', purpose: 'context', colour: 'blue' }],
      ['metadata in both forms', { file: 'x', purpose: 'context', metadata: { a: '1' }, 'metadata[b]': '2' }],
      ['17 metadata[key] fields', { file: 'x', purpose: 'context', ...fields(17) }],
      ['a metadata[key] value holding NUL', { file: 'x', purpose: 'context', 'metadata[a]': '\u0000' }],
    ] as const) {
      assert.equal(upload(body), false, `the document allows ${what}`);
    }
  });

  it('commits the types openapi-typescript generates from the document now (npm run generate)', async function () {
    this.timeout(60_000);
    const dir = await mkdtemp(join(tmpdir(), 'agentplane-openapi-'));
    try {
      const output = join(dir, 'openapi.ts');
      const cli = join(root, 'node_modules', '.bin', 'openapi-typescript');
      await promisify(execFile)(cli, ['api/openapi.yaml', '-o', output], { cwd: root });
      const [generated, committed] = await Promise.all([
        readFile(output, 'utf8'),
        readFile(join(root, 'api', 'generated', 'openapi.ts'), 'utf8'),
      ]);
      assert.ok(generated.includes('export interface paths'), 'openapi-typescript produced no types');
      assert.ok(generated === committed, 'api/generated/openapi.ts is out of date with api/openapi.yaml: run `npm run generate`');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
