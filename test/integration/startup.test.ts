import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadMigrations } from '../../src/adapters/postgres/migrate.js';
import { ADMIN_TOKEN, createTestStorage, STORE } from '../helpers/app.js';
import {
  type Child,
  childEnv,
  createProcessStore,
  DEMO_CURL_PRINTED,
  freePort,
  type ProcessStore,
  parseBanner,
  runCli,
  schemaDatabaseUrl,
  startCli,
} from '../helpers/process.js';

describe(`outdial refuses a bad configuration (${STORE})`, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-config-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  // The check happens before any storage is opened, so no DATABASE_URL is needed on either project.
  it.concurrent.for([
    [{ PORT: 'abc' }, /^outdial: PORT must be a whole number, got "abc"/],
    [{ OUTDIAL_SIM_RING_MS: '-5' }, /^outdial: OUTDIAL_SIM_RING_MS must be between 0 and \d+, got -5/],
    [{ DATABASE_URL: 'mysql://localhost/x' }, /^outdial: DATABASE_URL must use postgres: or postgresql:/],
  ] as const)('serve with %o exits 1 naming the variable', async ([bad, message], { expect }) => {
    const result = await runCli(['serve'], childEnv({ OUTDIAL_DATA_DIR: dir, PORT: '1', ...bad }));
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(result.stdout).not.toContain('listening');
  });
});

describe(`a running serve: the embedded database's lock, and SIGTERM (${STORE})`, () => {
  let store: ProcessStore;
  let server: Child;
  let base: string;
  let env: NodeJS.ProcessEnv;

  beforeAll(async () => {
    store = await createProcessStore('start');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = childEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      OUTDIAL_DATA_DIR: store.dataDir,
      DATABASE_URL: store.databaseUrl,
      OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
      // A call that is still talking when SIGTERM comes.
      OUTDIAL_SIM_RING_MS: '100',
      OUTDIAL_SIM_TALK_MS: '60000',
    });
    server = startCli(['serve'], env);
    await server.waitFor(DEMO_CURL_PRINTED, 90_000);
  }, 120_000);

  afterAll(async () => {
    await server?.stop('SIGKILL');
    await store?.dispose();
  });

  if (STORE === 'pglite') {
    it('refuses a second serve on the same data dir, naming the process that holds the database', async () => {
      const second = await runCli(['serve'], { ...env, PORT: String(await freePort()) });
      expect(second.code).not.toBe(0);
      expect(second.stderr).toContain(
        `The embedded database in ${path.join(store.dataDir, 'pgdata')} is in use by process ${server.process.pid}`,
      );
      expect(second.stdout).not.toContain('listening');
      // The first one is untouched.
      expect((await fetch(`${base}/livez`)).status).toBe(200);
    }, 60_000);
  }

  it('exits 0 promptly on SIGTERM, with a call in progress', async () => {
    const demo = parseBanner(server.output()).demo;
    if (!demo) throw new Error(`no demo account in:\n${server.output()}`);
    const dial = await fetch(`${base}/api/v1/call/dial`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demo.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ to: '+14155550123', agentConfigId: demo.agentId }),
    });
    expect(dial.status).toBe(200);
    expect(await dial.json()).toMatchObject({ status: 'ONGOING' });

    const started = Date.now();
    const code = await server.stop('SIGTERM', 20_000);
    const tookMs = Date.now() - started;
    expect(code).toBe(0);
    expect(tookMs).toBeLessThan(5_000);
    await expect(fetch(`${base}/livez`)).rejects.toThrow();
    if (STORE === 'pglite') {
      // It let go of the embedded database: another process may open it now.
      expect(fs.existsSync(path.join(store.dataDir, 'pgdata', 'outdial.lock'))).toBe(false);
    }
  }, 60_000);
});

if (STORE === 'postgres') {
  describe('outdial migrate (postgres)', () => {
    it('applies each migration once when two processes migrate one fresh schema at the same moment', async () => {
      const storage = await createTestStorage('postgres');
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-migrate-'));
      try {
        const env = childEnv({
          OUTDIAL_DATA_DIR: dataDir,
          DATABASE_URL: schemaDatabaseUrl(storage.schema ?? ''),
        });
        const results = await Promise.all([runCli(['migrate'], env), runCli(['migrate'], env)]);
        for (const result of results) expect(result.code, result.stderr).toBe(0);
        const versions = loadMigrations().map((m) => m.version);
        // One of them applied everything; the other waited for it and found nothing left to do.
        expect(results.map((r) => r.stdout).sort()).toEqual([
          `Applied migrations ${versions.join(', ')} (postgres)\n`,
          'Database is up to date (postgres)\n',
        ]);

        const handle = await storage.open();
        const rows = await sql<{ version: number; n: number }>`
          select version, count(*)::int as n from schema_migrations group by version order by version
        `.execute(handle.db);
        expect(rows.rows).toEqual(versions.map((version) => ({ version, n: 1 })));
        // In the schema DATABASE_URL's options named, not in public.
        const tables = await sql<{ table_name: string }>`
          select table_name from information_schema.tables where table_schema = ${storage.schema}
        `.execute(handle.db);
        expect(tables.rows.map((row) => row.table_name)).toEqual(
          expect.arrayContaining(['schema_migrations', 'users', 'calls', 'batches']),
        );

        const again = await runCli(['migrate'], env);
        expect(again.code).toBe(0);
        expect(again.stdout).toBe('Database is up to date (postgres)\n');
      } finally {
        await storage.dispose();
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    }, 90_000);
  });
}
