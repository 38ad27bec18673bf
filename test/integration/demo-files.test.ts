import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createTestStorage, DATABASE_TEST_URL, STORE, type TestStorage } from '../helpers/app.js';
import { type Child, childEnv, freePort, startCli } from '../helpers/process.js';

/**
 * A data dir that holds another database's demo files (the embedded database's, before
 * DATABASE_URL was set, or one since deleted): a first start on a new database seeds its own demo
 * and writes it beside them, never over them.
 */
describe(`demo files of another database in the data dir (${STORE})`, () => {
  let storage: TestStorage | null = null;
  let server: Child | undefined;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-demo-files-'));
  afterAll(async () => {
    await server?.stop();
    await storage?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('keeps them as they were, saves the new demo beside them and says so', async () => {
    const otherKey = 'odk_the_other_databases_demo_key\n';
    const otherInfo = `${JSON.stringify({ userId: 'usr_other', agentId: 'agt_other', keyId: 'key_other' })}\n`;
    fs.writeFileSync(path.join(dataDir, 'demo-api-key'), otherKey, { mode: 0o600 });
    fs.writeFileSync(path.join(dataDir, 'demo.json'), otherInfo, { mode: 0o600 });

    const port = await freePort();
    let databaseUrl: string | undefined;
    if (STORE === 'postgres') {
      storage = await createTestStorage('postgres');
      databaseUrl = `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`;
    }
    server = startCli(
      ['serve'],
      childEnv({
        PORT: String(port),
        HOST: '127.0.0.1',
        OUTDIAL_DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
      }),
    );
    await server.waitFor(/Place a simulated call/, 90_000);
    const out = server.output();
    const userId = out.match(/user:\s+(usr_\S+)/)?.[1] ?? '';
    const agentId = out.match(/agent:\s+(agt_\S+)/)?.[1] ?? '';
    const key = out.match(/API key:\s+(\S+)/)?.[1] ?? '';

    // The other database's files, byte for byte.
    expect(fs.readFileSync(path.join(dataDir, 'demo-api-key'), 'utf8')).toBe(otherKey);
    expect(fs.readFileSync(path.join(dataDir, 'demo.json'), 'utf8')).toBe(otherInfo);
    // This database's demo beside them, named by its user, and the start says where.
    const keyFile = path.join(dataDir, `demo-api-key-${userId}`);
    expect(out).toContain(`(the key is also in ${keyFile})`);
    expect(out).toContain(
      `(${path.join(dataDir, 'demo-api-key')} holds the demo key of another database: left as it was)`,
    );
    expect(fs.readFileSync(keyFile, 'utf8')).toBe(`${key}\n`);
    expect((fs.statSync(keyFile).mode & 0o777).toString(8)).toBe('600');
    const info = JSON.parse(fs.readFileSync(path.join(dataDir, `demo-${userId}.json`), 'utf8'));
    expect(info).toMatchObject({ userId, agentId });
    // The saved key is this database's: it reads the demo agent.
    const agent = await fetch(`http://127.0.0.1:${port}/api/v1/agent?agentId=${agentId}`, {
      headers: { authorization: `Bearer ${fs.readFileSync(keyFile, 'utf8').trim()}` },
    });
    expect(agent.status).toBe(200);
  }, 120_000);
});
