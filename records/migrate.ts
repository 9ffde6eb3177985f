/** Applies the ordered SQL files in records/migrations once each, under an advisory lock. */
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { transaction, type Db, type Queryable } from './db.js';

// Beside this module: the build copies the SQL into dist/ (scripts/copy-assets.mjs).
const migrationsDir = fileURLToPath(new URL('./migrations/', import.meta.url));
const LOCK_ID = 0x61676e74; // any constant shared by every process that migrates

export async function migrationFiles(): Promise<string[]> {
  return (await readdir(migrationsDir)).filter((f) => f.endsWith('.sql')).sort();
}

export async function migrate(db: Db): Promise<string[]> {
  const files = await migrationFiles();
  return transaction(db, async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [LOCK_ID]);
    await tx.query('CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())');
    const done = new Set((await tx.query<{ name: string }>('SELECT name FROM schema_migrations')).rows.map((r) => r.name));
    const applied: string[] = [];
    for (const file of files) {
      if (done.has(file)) continue;
      await tx.query(await readFile(migrationsDir + file, 'utf8'));
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [file]);
      applied.push(file);
    }
    return applied;
  });
}

/**
 * The migrations this code has that the database lacks (none applied: all). A database ahead of the code,
 * as during a rolling update after `migrate` ran, is not behind.
 */
export async function pendingMigrations(db: Queryable): Promise<string[]> {
  const {
    rows: [table],
  } = await db.query<{ found: boolean }>(`SELECT to_regclass('schema_migrations') IS NOT NULL AS found`);
  const { rows } = table!.found ? await db.query<{ name: string }>('SELECT name FROM schema_migrations') : { rows: [] };
  const applied = new Set(rows.map((r) => r.name));
  return (await migrationFiles()).filter((file) => !applied.has(file));
}
