import assert from 'node:assert/strict';
import { cp, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../cli/embedded.js';
import { migrationFiles } from '../../records/migrate.js';
import { createDb } from '../../records/db.js';
import { ApiClient } from '../support/client.js';
import { eventually } from '../support/eventually.js';
import { runCli } from '../support/processes.js';
import { postgres, temporal, testLog } from '../support/services.js';

const root = fileURLToPath(new URL('../../../', import.meta.url));

describe('the build output on its own (what a container image holds: dist/, package.json, node_modules)', function () {
  this.timeout(120_000);
  let image: string;
  let databaseUrl: string;

  before(async () => {
    image = await mkdtemp(join(tmpdir(), 'agentplane-image-'));
    await cp(join(root, 'dist'), join(image, 'dist'), { recursive: true });
    await cp(join(root, 'package.json'), join(image, 'package.json'));
    await symlink(join(root, 'node_modules'), join(image, 'node_modules'));
    const pg = await postgres();
    await pg.db.query('CREATE DATABASE agentplane_image');
    databaseUrl = pg.url.replace(/\/agentplane$/, '/agentplane_image');
  });

  after(async () => {
    await rm(image, { recursive: true, force: true });
    await (await postgres()).db.query('DROP DATABASE IF EXISTS agentplane_image WITH (FORCE)');
  });

  it('migrates with the SQL copied into dist/', async () => {
    const migrate = runCli('migrate', { DATABASE_URL: databaseUrl }, { cli: join(image, 'dist/cli/agentplane.js') });
    assert.equal((await migrate.exited).code, 0, migrate.output());
    const db = createDb(databaseUrl, { max: 1, log: testLog });
    try {
      const { rows } = await db.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
      assert.deepEqual(
        rows.map((r) => r.name),
        await migrationFiles(),
      );
    } finally {
      await db.end();
    }
  });

  it('serves the OpenAPI document copied into dist/', async () => {
    const port = await freePort();
    const api = runCli(
      'api',
      {
        DATABASE_URL: databaseUrl,
        TEMPORAL_ADDRESS: (await temporal()).address,
        AGENTPLANE_BLOB_DIR: join(image, 'blobs'),
        PORT: String(port),
        HOST: '127.0.0.1',
      },
      { cli: join(image, 'dist/cli/agentplane.js') },
    );
    try {
      const document = await eventually(
        async () => {
          assert.equal(api.child.exitCode, null, api.output());
          const response = await new ApiClient(`http://127.0.0.1:${port}`).get('/v1/openapi.json');
          assert.equal(response.status, 200);
          return response.body;
        },
        { timeoutMs: 60_000, message: 'the api from the image did not serve its document' },
      );
      assert.ok(document.paths['/v1/files'], 'the document lists the files API');
    } finally {
      api.child.kill('SIGTERM');
      assert.equal((await api.exited).code, 0, api.output());
    }
  });
});
