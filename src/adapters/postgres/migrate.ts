import fs from 'node:fs';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import type { DatabaseHandle } from './database.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

const MIGRATIONS_DIR = fileURLToPath(new URL('./migrations/', import.meta.url));

/** Numbered files `NNN_name.sql`, read in order; a gap or a duplicate number is a packaging bug. */
export function loadMigrations(dir: string = MIGRATIONS_DIR): Migration[] {
  const migrations = fs
    .readdirSync(dir)
    .filter((file) => file.endsWith('.sql'))
    .map((file) => {
      const match = /^(\d+)_([\w-]+)\.sql$/.exec(file);
      if (!match?.[1] || !match[2])
        throw new Error(`Migration file name must look like 001_name.sql: ${file}`);
      return { version: Number(match[1]), name: match[2], sql: fs.readFileSync(`${dir}/${file}`, 'utf8') };
    })
    .sort((a, b) => a.version - b.version);
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new Error(`Migrations must be numbered 1, 2, 3, ... without gaps; found ${migration.version}`);
    }
  });
  return migrations;
}

/**
 * Applies the migrations not yet applied, each in its own transaction, forward only. On PostgreSQL a
 * session advisory lock (keyed by the schema) makes a second process that starts at the same
 * moment wait and then find nothing left to do. PGlite has a single connection, so it needs none.
 */
export async function migrate(
  handle: DatabaseHandle,
  migrations: Migration[] = loadMigrations(),
  /** Told the versions about to be applied, once, when there are any (a first start prints them). */
  onPending: (versions: number[]) => void = () => {},
): Promise<number[]> {
  return handle.db.connection().execute(async (conn) => {
    if (handle.kind === 'postgres') {
      await sql`select pg_advisory_lock(hashtext(current_schema() || '.outdial_migrations'))`.execute(conn);
    }
    try {
      await sql`
        create table if not exists schema_migrations (
          version integer primary key,
          name text not null,
          applied_at timestamptz not null default now()
        )`.execute(conn);
      const applied = new Set(
        (await conn.selectFrom('schema_migrations').select('version').execute()).map((row) => row.version),
      );
      const pending = migrations.filter((migration) => !applied.has(migration.version));
      if (pending.length > 0) onPending(pending.map((migration) => migration.version));
      const done: number[] = [];
      for (const migration of pending) {
        await conn.transaction().execute(async (trx) => {
          await sql.raw(migration.sql).execute(trx);
          await trx
            .insertInto('schema_migrations')
            .values({ version: migration.version, name: migration.name })
            .execute();
        });
        done.push(migration.version);
      }
      return done;
    } finally {
      if (handle.kind === 'postgres') {
        await sql`select pg_advisory_unlock(hashtext(current_schema() || '.outdial_migrations'))`.execute(
          conn,
        );
      }
    }
  });
}

/**
 * The versions not applied to this database yet (all of them on a database never migrated), read
 * without applying anything: `outdial doctor` reports them.
 */
export async function pendingMigrations(
  handle: DatabaseHandle,
  migrations: Migration[] = loadMigrations(),
): Promise<number[]> {
  const table = await sql<{
    name: string | null;
  }>`select to_regclass('schema_migrations')::text as name`.execute(handle.db);
  const applied = table.rows[0]?.name
    ? new Set(
        (await handle.db.selectFrom('schema_migrations').select('version').execute()).map(
          (row) => row.version,
        ),
      )
    : new Set<number>();
  return migrations
    .filter((migration) => !applied.has(migration.version))
    .map((migration) => migration.version);
}

/** `001..006`, or `007` for one: how a run of migration numbers is printed. */
export function versionRange(versions: number[]): string {
  const label = (version: number | undefined) => String(version ?? 0).padStart(3, '0');
  return versions.length > 1 ? `${label(versions[0])}..${label(versions.at(-1))}` : label(versions[0]);
}
