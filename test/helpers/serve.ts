import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestStorage, DATABASE_TEST_URL, STORE, type TestStorage } from './app.js';
import { type Child, childEnv, freePort, startCli } from './process.js';

/** What `outdial serve` printed of its demo account at its first start. */
export interface DemoAccount {
  adminToken: string;
  userId: string;
  agentId: string;
  key: string;
}

export interface Served {
  server: Child;
  /** http://127.0.0.1:<port> */
  base: string;
  dataDir: string;
  env: NodeJS.ProcessEnv;
  demo: DemoAccount;
  /** Stops the server and removes its data dir and schema. */
  close(): Promise<void>;
}

/**
 * `outdial serve` as `npm start` runs it, on the test's store (a schema of its own on PostgreSQL,
 * the embedded database in a fresh data dir otherwise), with `extra` in its environment; resolves
 * once the demo account is printed.
 */
export async function serveApp(
  extra: Record<string, string | undefined>,
  prefix = 'outdial-serve-',
): Promise<Served> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const port = await freePort();
  let storage: TestStorage | null = null;
  let databaseUrl: string | undefined;
  if (STORE === 'postgres') {
    storage = await createTestStorage('postgres');
    databaseUrl = `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`;
  }
  const env = childEnv({
    PORT: String(port),
    HOST: '127.0.0.1',
    OUTDIAL_DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    ...extra,
  });
  const server = startCli(['serve'], env);
  const close = async () => {
    await server.stop();
    await storage?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await server.waitFor(/API key:\s+\S+\n/, 90_000);
  } catch (error) {
    await close();
    throw error;
  }
  const out = server.output();
  const demo = {
    adminToken: out.match(/Admin token[^\n]*\n\s+(\S+)/)?.[1] ?? '',
    userId: out.match(/user:\s+(usr_\S+)/)?.[1] ?? '',
    agentId: out.match(/agent:\s+(agt_\S+)/)?.[1] ?? '',
    key: out.match(/API key:\s+(\S+)/)?.[1] ?? '',
  };
  return { server, base: `http://127.0.0.1:${port}`, dataDir, env, demo, close };
}
