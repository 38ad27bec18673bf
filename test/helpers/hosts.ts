import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { DatabaseHandle } from '../../src/adapters/postgres/database.js';
import { ADMIN_TOKEN, createTestStorage, DATABASE_TEST_URL, JWT_SECRET, type TestStorage } from './app.js';
import { type Child, childEnv, freePort } from './process.js';
import { deleteKeysOf, keyIdsIn, redisTestUrl } from './redis.js';

/**
 * Hosts of one deployment, started as `outdial` processes: one PostgreSQL schema and one Redis
 * database shared, a data dir each, one HTTP port. `stop` kills every process and removes all.
 */
export interface SharedHosts {
  storage: TestStorage;
  handle: DatabaseHandle;
  /** The API's address (every host is given the same port; only API processes listen). */
  base: string;
  /** A host's environment: its own data dir, the shared database and Redis, and `extra`. */
  env(extra: Record<string, string>): NodeJS.ProcessEnv;
  /** Processes (and anything with a `kill`) to stop with the hosts. */
  children: Child[];
  /** A directory removed with the hosts. */
  tempDir(prefix: string): string;
  stop(): Promise<void>;
}

export async function sharedHosts(redisDb: number): Promise<SharedHosts> {
  const storage = await createTestStorage('postgres');
  const handle = await storage.open();
  const redisUrl = redisTestUrl(redisDb);
  const port = await freePort();
  const dirs: string[] = [];
  const children: Child[] = [];
  const tempDir = (prefix: string) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    dirs.push(dir);
    return dir;
  };
  return {
    storage,
    handle,
    base: `http://127.0.0.1:${port}`,
    children,
    tempDir,
    env: (extra) =>
      childEnv({
        HOST: '127.0.0.1',
        PORT: String(port),
        OUTDIAL_DATA_DIR: tempDir('outdial-host-'),
        DATABASE_URL: `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`,
        REDIS_URL: redisUrl,
        OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
        OUTDIAL_JWT_SECRET: JWT_SECRET,
        ...extra,
      }),
    async stop() {
      for (const child of children) await child.stop('SIGKILL');
      await deleteKeysOf(redisUrl, await keyIdsIn(handle.db));
      await handle.close();
      await storage.dispose();
      for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}
