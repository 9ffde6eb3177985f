import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { migrationFiles } from '../../records/migrate.js';
import { FIRST_CHECKED_MIGRATION, findingsOf } from '../../records/migration-rules.js';

const migrationsDir = fileURLToPath(new URL('../../records/migrations/', import.meta.url));

describe('migrations, expand then contract', () => {
  it('leave the schema usable by the release before them: every migration since the rule only expands, or says it contracts', async () => {
    const checked = (await migrationFiles()).filter((file) => file >= FIRST_CHECKED_MIGRATION);
    assert.ok(checked.length > 0);
    for (const file of checked) {
      const findings = findingsOf(await readFile(migrationsDir + file, 'utf8'));
      assert.deepEqual(findings, [], `${file} would break the release before it`);
    }
  });

  const breaking: [string, string][] = [
    ['ALTER TABLE runs DROP COLUMN metadata;', 'drops a column'],
    ['DROP TABLE usage_rollups;', 'drops what'],
    ['DROP INDEX runs_key_active;', 'drops an index'],
    ['ALTER TABLE runs RENAME COLUMN input TO prompt;', 'renames'],
    ['ALTER TABLE runs RENAME TO agent_runs;', 'renames'],
    ['ALTER TABLE runs ALTER COLUMN input TYPE jsonb USING to_jsonb(input);', "changes a column's type"],
    ['ALTER TABLE runs ALTER COLUMN thread_id SET NOT NULL;', 'forbids the nulls'],
    ['ALTER TABLE runs ADD COLUMN thread_id text NOT NULL;', 'NOT NULL column without a default'],
    ['ALTER TABLE runs ADD CONSTRAINT input_short CHECK (length(input) < 100);', 'refuses writes'],
    ['CREATE UNIQUE INDEX runs_one_per_key ON runs (api_key_id);', 'refuses duplicates'],
  ];
  for (const [sql, rule] of breaking) {
    it(`finds what breaks the release before: ${sql}`, () => {
      const findings = findingsOf(sql);
      assert.equal(findings.length, 1, JSON.stringify(findings));
      assert.ok(findings[0]!.rule.includes(rule), findings[0]!.rule);
      assert.deepEqual(findingsOf(`-- contract: nothing running reads it since 0.9\n${sql}`), []);
    });
  }

  it('lets an expanding migration through: new tables and what is on them, nullable or defaulted columns, indexes, functions', () => {
    const sql = `
      -- A thread per conversation.
      CREATE TABLE threads (id text PRIMARY KEY, project_id text NOT NULL, CONSTRAINT named CHECK (id <> ''));
      CREATE UNIQUE INDEX threads_project ON threads (project_id, id);
      ALTER TABLE threads ADD COLUMN title text NOT NULL;
      ALTER TABLE runs ADD COLUMN thread_id text;
      ALTER TABLE runs ADD COLUMN turns integer NOT NULL DEFAULT 0;
      ALTER TABLE runs ALTER COLUMN agent_id DROP NOT NULL;
      CREATE INDEX runs_thread ON runs (thread_id);
      CREATE OR REPLACE FUNCTION f() RETURNS void LANGUAGE sql AS $$ DROP TABLE x; $$;`;
    assert.deepEqual(findingsOf(sql), []);
  });
});
