import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { loadMigrations } from '../../src/adapters/postgres/migrate.js';
import { createTestStorage, DATABASE_TEST_URL, STORE } from '../helpers/app.js';
import { childEnv, freePort, runCli, startCli } from '../helpers/process.js';
import { tempDirs } from '../helpers/temp-dirs.js';

describe(`process start and stop (${STORE})`, () => {
  const tempDir = tempDirs('outdial-start-');

  it.each([
    [{ PORT: 'abc' }, 'PORT'],
    [{ OUTDIAL_SIM_RING_MS: '-5' }, 'OUTDIAL_SIM_RING_MS'],
    [{ DATABASE_URL: 'mysql://localhost/x' }, 'DATABASE_URL'],
  ])('refuses to start with %o, naming the variable', async (bad, name) => {
    const result = await runCli(['serve'], childEnv({ OUTDIAL_DATA_DIR: tempDir(), ...bad }));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(name);
  });

  if (STORE === 'pglite') {
    it('refuses a second process on the same embedded database, and stops cleanly on SIGTERM', async () => {
      const dataDir = tempDir();
      const port = await freePort();
      const first = startCli(
        ['serve'],
        childEnv({ OUTDIAL_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' }),
      );
      try {
        await first.waitFor(/listening on/, 90_000);
        const second = await runCli(
          ['serve'],
          childEnv({ OUTDIAL_DATA_DIR: dataDir, PORT: String(await freePort()) }),
        );
        expect(second.code).not.toBe(0);
        expect(second.stderr).toMatch(/embedded database .* is in use by process \d+/);
        const health = await fetch(`http://127.0.0.1:${port}/livez`);
        expect(health.status).toBe(200);
      } finally {
        const started = Date.now();
        expect(await first.stop('SIGTERM')).toBe(0);
        expect(Date.now() - started).toBeLessThan(10_000);
      }
    }, 120_000);
  }

  if (STORE === 'postgres') {
    it('applies each migration once when several processes migrate one database at the same moment', async () => {
      const storage = await createTestStorage('postgres');
      try {
        const env = childEnv({
          OUTDIAL_DATA_DIR: tempDir(),
          DATABASE_URL: `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`,
        });
        const results = await Promise.all([
          runCli(['migrate'], env),
          runCli(['migrate'], env),
          runCli(['migrate'], env),
        ]);
        for (const result of results) expect(result.code, result.stderr).toBe(0);
        expect(results.filter((r) => r.stdout.startsWith('Applied migrations'))).toHaveLength(1);
        const handle = await storage.open();
        const rows = await sql<{
          version: number;
        }>`select version from schema_migrations order by version`.execute(handle.db);
        expect(rows.rows.map((r) => r.version)).toEqual(loadMigrations().map((m) => m.version));
      } finally {
        await storage.dispose();
      }
    }, 60_000);
  }
});
