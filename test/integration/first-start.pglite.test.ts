import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/postgres/database.js';
import { loadMigrations, migrate, versionRange } from '../../src/adapters/postgres/migrate.js';
import {
  BUNDLED_IMAGE_DIR,
  checkImage,
  IMAGE_FILE,
  installedPgliteVersion,
  MANIFEST_FILE,
  packImage,
  unpackImage,
} from '../../src/adapters/postgres/pglite-image.js';
import { childEnv, freePort, startCli } from '../helpers/process.js';
import { tempDirs } from '../helpers/temp-dirs.js';

/**
 * The embedded database's first start: made from the bundled image, not by initdb, saying what it
 * does; and made by initdb, with a warning, when the image is absent, made by another PGlite, or
 * cannot be opened. (PGlite only: *.pglite.test.ts files are left out of the postgres project.)
 */
describe('first start of the embedded database', () => {
  const tempDir = tempDirs('outdial-first-');
  const allMigrations = versionRange(loadMigrations().map((m) => m.version));

  it('the bundled image was made by the installed PGlite (else run npm run build:pgimage)', () => {
    const check = checkImage(BUNDLED_IMAGE_DIR);
    expect(check.usable ? check.manifest.pglite : check.reason).toBe(installedPgliteVersion());
  });

  it('`outdial serve` on a fresh data dir starts from the image, says so, migrates and answers; a restart reuses it', async () => {
    const dataDir = tempDir();
    const pgdata = path.join(dataDir, 'pgdata');
    const port = await freePort();
    const env = childEnv({ OUTDIAL_DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1' });
    const first = startCli(['serve'], env);
    let key: string;
    let agentId: string;
    try {
      key = (await first.waitFor(/API key:\s+(\S+)/, 90_000))[1] ?? '';
      agentId = (await first.waitFor(/agent:\s+(agt_\S+)/))[1] ?? '';
      const lines = first.output().split('\n');
      const at = (pattern: RegExp) => lines.findIndex((line) => pattern.test(line));
      const creating = at(
        new RegExp(
          `^Creating the embedded database in ${escapeRegExp(pgdata)} from the bundled image \\(PostgreSQL \\d+`,
        ),
      );
      const created = at(/^Created the embedded database from the image in \d+\.\d s$/);
      const applying = at(new RegExp(`^Applying migrations ${allMigrations}$`));
      const applied = at(new RegExp(`^Applied migrations ${allMigrations} in \\d+\\.\\d s$`));
      const listening = at(/listening on/);
      expect(
        [creating, created, applying, applied, listening].every((i) => i >= 0),
        first.output(),
      ).toBe(true);
      expect(creating < created && created < applying && applying < applied && applied < listening).toBe(
        true,
      );
      expect(first.output()).not.toMatch(/initdb/);
      expect(first.stderr()).toBe('');
      const agent = await fetch(`http://127.0.0.1:${port}/api/v1/agent?agentId=${agentId}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(agent.status).toBe(200);
      expect(((await agent.json()) as { id: string }).id).toBe(agentId);
    } finally {
      expect(await first.stop('SIGTERM')).toBe(0);
    }

    const second = startCli(['serve'], env);
    try {
      await second.waitFor(/listening on/, 90_000);
      expect(second.output()).not.toMatch(/Creating the embedded database|Applying migrations/);
      const agent = await fetch(`http://127.0.0.1:${port}/api/v1/agent?agentId=${agentId}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      expect(agent.status).toBe(200);
    } finally {
      expect(await second.stop('SIGTERM')).toBe(0);
    }
  }, 180_000);

  /** Opens a fresh data dir with `image`, migrates it and writes a row: the data dir works. */
  async function firstStart(image: string) {
    const dir = path.join(tempDir(), 'pgdata');
    const lines: Array<[string, 'info' | 'warn']> = [];
    const handle = await openDatabase({
      databaseUrl: undefined,
      pgliteDir: dir,
      pgliteImage: image,
      onProgress: (line, level) => lines.push([line, level]),
    });
    try {
      expect(await migrate(handle)).toEqual(loadMigrations().map((m) => m.version));
      await handle.db
        .insertInto('users')
        .values({ id: 'usr_first', name: 'First', webhook_secret: 'whsec_x' } as never)
        .execute();
      const count = await sql<{ n: number }>`select count(*)::int as n from users`.execute(handle.db);
      expect(count.rows[0]?.n).toBe(1);
    } finally {
      await handle.close();
    }
    return { dir, lines };
  }

  /** A copy of the bundled image with its manifest changed by `change`. */
  function imageCopy(change: (manifest: Record<string, unknown>) => void): string {
    const dir = tempDir();
    fs.copyFileSync(path.join(BUNDLED_IMAGE_DIR, IMAGE_FILE), path.join(dir, IMAGE_FILE));
    const manifest = JSON.parse(fs.readFileSync(path.join(BUNDLED_IMAGE_DIR, MANIFEST_FILE), 'utf8'));
    change(manifest);
    fs.writeFileSync(path.join(dir, MANIFEST_FILE), JSON.stringify(manifest));
    return dir;
  }

  it.each([
    ['absent', () => tempDir(), /there is no database image in/],
    [
      'made by another PGlite',
      () =>
        imageCopy((manifest) => {
          manifest.pglite = '0.4.0';
        }),
      /made by PGlite 0\.4\.0, but PGlite \d+\.\d+\.\d+ is installed/,
    ],
  ])(
    'when the image is %s, initdb makes the database instead, with a warning',
    async (_, image, reason) => {
      const { dir, lines } = await firstStart(image());
      const warnings = lines.filter(([, level]) => level === 'warn').map(([line]) => line);
      expect(warnings).toHaveLength(1);
      expect(warnings[0]).toMatch(reason);
      expect(warnings[0]).toMatch(/running initdb instead/);
      expect(lines.map(([line]) => line)).toContainEqual(
        expect.stringMatching(
          new RegExp(`^Creating the embedded database in ${escapeRegExp(dir)} with initdb`),
        ),
      );
      expect(lines.at(-1)?.[0]).toMatch(/^Created the embedded database with initdb in \d+\.\d s$/);
    },
    120_000,
  );

  it('a damaged image is refused before it is unpacked (the same initdb path follows)', () => {
    const altered = imageCopy(() => {});
    const file = path.join(altered, IMAGE_FILE);
    const bytes = fs.readFileSync(file);
    bytes[1000] = (bytes[1000] ?? 0) ^ 0xff;
    fs.writeFileSync(file, bytes);
    const cut = imageCopy(() => {});
    fs.truncateSync(path.join(cut, IMAGE_FILE), 1000);
    for (const image of [altered, cut]) {
      const check = checkImage(image);
      expect(check.usable ? 'usable' : check.reason).toMatch(/does not match its checksum/);
    }
  });

  it('an image that PGlite refuses to open is removed and initdb makes the database instead', async () => {
    // A well-formed image (its manifest and checksum agree) of a cluster of an unknown PostgreSQL.
    const cluster = tempDir();
    await unpackImage(fs.readFileSync(path.join(BUNDLED_IMAGE_DIR, IMAGE_FILE)), cluster);
    fs.writeFileSync(path.join(cluster, 'PG_VERSION'), '99\n');
    const image = tempDir();
    packImage(cluster, image, installedPgliteVersion(), 1);

    const { dir, lines } = await firstStart(image);
    expect(lines.map(([line]) => line)).toEqual([
      expect.stringMatching(/^Creating the embedded database in .* from the bundled image \(PostgreSQL 99,/),
      expect.stringMatching(/^Warning: the database image could not be opened .*running initdb instead$/),
      expect.stringMatching(/^Creating the embedded database in .* with initdb/),
      expect.stringMatching(/^Created the embedded database with initdb in/),
    ]);
    expect(fs.readFileSync(path.join(dir, 'PG_VERSION'), 'utf8').trim()).not.toBe('99');
  }, 120_000);

  it('a data dir left half unpacked by a killed first start is unpacked again, not run by initdb', async () => {
    const dir = path.join(tempDir(), 'pgdata');
    await unpackImage(fs.readFileSync(path.join(BUNDLED_IMAGE_DIR, IMAGE_FILE)), dir);
    // What a kill midway leaves: PG_VERSION (written last) missing, a file cut short.
    fs.rmSync(path.join(dir, 'PG_VERSION'));
    fs.truncateSync(path.join(dir, 'global', 'pg_control'), 100);
    const lines: string[] = [];
    const handle = await openDatabase({
      databaseUrl: undefined,
      pgliteDir: dir,
      onProgress: (line) => lines.push(line),
    });
    try {
      await migrate(handle);
      const tables = await sql<{ n: number }>`
        select count(*)::int as n from information_schema.tables where table_name = 'calls'`.execute(
        handle.db,
      );
      expect(tables.rows[0]?.n).toBe(1);
    } finally {
      await handle.close();
    }
    expect(lines).toEqual([
      expect.stringMatching(/from the bundled image/),
      expect.stringMatching(/^Created the embedded database from the image in/),
    ]);
  }, 60_000);
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
