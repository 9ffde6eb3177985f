import assert from 'node:assert/strict';
import { createDb, type Db } from '../../records/db.js';
import { migrate, migrationFiles } from '../../records/migrate.js';
import { postgres, testLog } from '../support/services.js';

async function appliedNames(db: Db): Promise<string[]> {
  const { rows } = await db.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY name');
  return rows.map((r) => r.name);
}

/** The schema's tables; the day partitions the maintenance schedule (and tests) make as days come are data, not schema. */
async function tablesOf(db: Db): Promise<string[]> {
  const { rows } = await db.query<{ table_name: string }>(
    "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name",
  );
  return rows.map((r) => r.table_name).filter((name) => !/_p\d{8}$/.test(name));
}

describe('migrations', () => {
  let db: Db;

  before(async function () {
    this.timeout(120_000);
    ({ db } = await postgres());
  });

  it('names its files so that they sort in the order they apply: NNN_name.sql', async () => {
    const files = await migrationFiles();
    assert.ok(files.length > 0);
    for (const file of files) assert.match(file, /^\d{3}_[a-z0-9_]+\.sql$/);
    assert.equal(new Set(files.map((f) => f.slice(0, 3))).size, files.length, 'two migrations share a number');
  });

  it('lists every file in records/migrations in schema_migrations', async () => {
    assert.deepEqual(await appliedNames(db), await migrationFiles());
  });

  it('applies nothing when run again, and changes no table', async () => {
    const tables = await tablesOf(db);
    assert.deepEqual(await migrate(db), []);
    assert.deepEqual(await migrate(db), []);
    assert.deepEqual(await tablesOf(db), tables);
    assert.deepEqual(await appliedNames(db), await migrationFiles());
  });

  describe('on an empty database', () => {
    const name = `migrations_${process.pid}_${Date.now()}`;
    let fresh: Db;

    before(async () => {
      await db.query(`CREATE DATABASE ${name}`);
      const url = new URL((await postgres()).url);
      url.pathname = `/${name}`;
      fresh = createDb(url.toString(), { log: testLog });
    });

    after(async () => {
      await fresh.end();
      await db.query(`DROP DATABASE ${name}`);
    });

    it('applies every file once, in order, even when several processes migrate at the same time', async () => {
      const results = await Promise.all([migrate(fresh), migrate(fresh), migrate(fresh)]);
      const files = await migrationFiles();
      assert.deepEqual(results.flat(), files, 'each file is applied by exactly one of the migrators');
      assert.ok(
        results.some((applied) => applied.length === files.length),
        'one migrator applies them all, in order',
      );
      assert.deepEqual(await appliedNames(fresh), files);
      assert.deepEqual(await tablesOf(fresh), await tablesOf(db));
      // Today's day partitions and the next week's exist from the start, so that no write waits for the schedule.
      const { rows } = await fresh.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_inherits WHERE inhparent = 'run_events'::regclass
           AND inhrelid::regclass::text BETWEEN to_char(now() AT TIME ZONE 'UTC', '"run_events_p"YYYYMMDD')
                                            AND to_char(now() AT TIME ZONE 'UTC' + interval '7 days', '"run_events_p"YYYYMMDD')`,
      );
      assert.equal(rows[0]!.n, 8);
      assert.deepEqual(await migrate(fresh), []);
    });
  });
});
