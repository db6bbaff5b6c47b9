// Applies the numbered SQL files in migrations/ that the database has not seen, in order, in one
// transaction. An advisory lock makes concurrent starts of several instances take turns, so each file runs
// exactly once.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database } from './index.ts';

export const migrationsDir = join(dirname(fileURLToPath(import.meta.url)), '../../../migrations');
const MIGRATION_LOCK = 727_001;

function migrationFiles(dir: string): string[] {
  return readdirSync(dir)
    .filter((name) => /^\d+_[\w-]+\.sql$/.test(name))
    .sort();
}

/**
 * The migrations of this code the database has not applied (readiness: an instance must not serve a schema
 * older than its code). The files are listed once per process: they do not change under a running server.
 */
export async function pendingMigrations(db: Database, dir = migrationsDir): Promise<string[]> {
  let files = knownFiles.get(dir);
  if (!files) {
    files = migrationFiles(dir);
    knownFiles.set(dir, files);
  }
  const applied = new Set(
    (await db.query<{ name: string }>('SELECT name FROM schema_migrations')).map((row) => row.name),
  );
  return files.filter((name) => !applied.has(name));
}
const knownFiles = new Map<string, string[]>();

export async function migrate(db: Database, dir = migrationsDir): Promise<string[]> {
  const files = migrationFiles(dir);
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.exec(
      'CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())',
    );
    const done = new Set(
      (await tx.query<{ name: string }>('SELECT name FROM schema_migrations')).map((r) => r.name),
    );
    const applied: string[] = [];
    for (const name of files) {
      if (done.has(name)) continue;
      await tx.exec(readFileSync(join(dir, name), 'utf8'));
      await tx.query('INSERT INTO schema_migrations (name) VALUES ($1)', [name]);
      applied.push(name);
    }
    return applied;
  });
}
