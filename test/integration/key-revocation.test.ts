import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createRuntime, type Runtime } from '../../src/main.js';
import { KEY_CACHE_MS } from '../../src/services/keys.js';
import {
  ADMIN_TOKEN,
  createTestCache,
  createTestStorage,
  JWT_SECRET,
  STORE,
  TestClock,
} from '../helpers/app.js';

describe(`key revocation across processes on ${STORE}`, () => {
  const cleanup: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it('is refused at once by the revoking process and within 60 s by every other', async () => {
    const storage = await createTestStorage();
    cleanup.push(() => storage.dispose());
    const first = await storage.open();
    // PGlite is one process's database: both runtimes share its handle. PostgreSQL: one pool each.
    const second = STORE === 'pglite' ? first : await storage.open();
    const runtimes: Runtime[] = [];
    const clocks = [new TestClock(), new TestClock()];
    for (const [index, database] of [first, second].entries()) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-rev-'));
      const { cache, dispose } = await createTestCache();
      const runtime = await createRuntime(
        loadConfig({
          OUTDIAL_DATA_DIR: dataDir,
          OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
          OUTDIAL_JWT_SECRET: JWT_SECRET,
          LOG_LEVEL: 'silent',
        }),
        {
          logger: pino({ level: 'silent' }),
          database,
          cache,
          ...(clocks[index] ? { clock: clocks[index] } : {}),
        },
      );
      runtimes.push(runtime);
      cleanup.push(async () => {
        await runtime.close();
        await dispose();
        fs.rmSync(dataDir, { recursive: true, force: true });
      });
    }
    const [a, b] = runtimes as [Runtime, Runtime];
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const userId = (
      await a.app.inject({ method: 'POST', url: '/admin/v1/users', headers: admin, payload: { name: 'U' } })
    ).json().id;
    const agentId = (
      await a.app.inject({
        method: 'POST',
        url: '/admin/v1/agents',
        headers: admin,
        payload: { userId, name: 'A' },
      })
    ).json().id;
    const { id: keyId, key } = (
      await a.app.inject({ method: 'POST', url: '/admin/v1/keys', headers: admin, payload: { userId } })
    ).json();
    const read = (runtime: Runtime) =>
      runtime.app.inject({
        method: 'GET',
        url: `/api/v1/agent?agentId=${agentId}`,
        headers: { authorization: `Bearer ${key}` },
      });

    expect((await read(a)).statusCode).toBe(200);
    expect((await read(b)).statusCode).toBe(200);
    expect(
      (await a.app.inject({ method: 'DELETE', url: `/admin/v1/keys/${keyId}`, headers: admin })).statusCode,
    ).toBe(200);
    expect((await read(a)).statusCode).toBe(401);
    // The other process trusts what it read a moment ago, for at most KEY_CACHE_MS (30 s, within the 60 s promised).
    expect(KEY_CACHE_MS).toBeLessThanOrEqual(60_000);
    clocks[1]?.advance(KEY_CACHE_MS + 1000);
    expect((await read(b)).statusCode).toBe(401);
  });
});
