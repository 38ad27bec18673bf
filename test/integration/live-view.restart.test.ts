import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryLiveCache } from '../../src/adapters/memory/live-cache.js';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import { loadConfig } from '../../src/config.js';
import { createRuntime, type Runtime } from '../../src/main.js';
import {
  ADMIN_TOKEN,
  createTestCache,
  createTestStorage,
  eventually,
  FAST_SIM,
  JWT_SECRET,
  STORE,
} from '../helpers/app.js';

describe(`the live batch view after a restart on ${STORE}`, () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it('still lists the calls of a batch when the restarted runtime has a fresh memory cache', async () => {
    const storage = await createTestStorage();
    cleanup.push(() => storage.dispose());
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-live-'));
    cleanup.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    const config = loadConfig({
      OUTDIAL_DATA_DIR: dataDir,
      OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
      OUTDIAL_JWT_SECRET: JWT_SECRET,
      OUTDIAL_PUBLIC_URL: 'http://outdial.test',
      LOG_LEVEL: 'silent',
      ...FAST_SIM,
    });
    const start = async (cache: Runtime['deps']['cache']) => {
      const database = await storage.open();
      const runtime = await createRuntime(config, {
        logger: pino({ level: 'silent' }),
        database,
        cache,
        provider: new SimulatedVoiceProvider({ ringMs: config.simRingMs, talkMs: config.simTalkMs }),
        dispatchTickMs: 20,
      });
      return { runtime, database };
    };
    const firstCache = await createTestCache();
    cleanup.push(() => firstCache.dispose());
    const first = await start(firstCache.cache);
    const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
    const post = (url: string, payload: Record<string, unknown>) =>
      first.runtime.app.inject({ method: 'POST', url, headers: admin, payload });
    const userId = (await post('/admin/v1/users', { name: 'U', minutes: 100 })).json().id;
    const agentId = (await post('/admin/v1/agents', { userId, name: 'A' })).json().id;
    const { key } = (await post('/admin/v1/keys', { userId })).json();
    const auth = { authorization: `Bearer ${key}` };
    const accepted = await first.runtime.app.inject({
      method: 'POST',
      url: '/api/v1/batch',
      headers: auth,
      payload: {
        agentId,
        userId,
        contacts: [0, 1, 2].map((i) => ({ phoneNumber: `+1415555012${i}`, name: `C${i}` })),
        options: { maxCallsPerSecond: 30 },
      },
    });
    expect(accepted.statusCode, accepted.body).toBe(202);
    const batchId = accepted.json().batchId as string;
    first.runtime.startWorkers();
    const live = (runtime: Runtime) =>
      runtime.app
        .inject({ method: 'GET', url: `/api/v1/status/batch?batchId=${batchId}`, headers: auth })
        .then((res) => {
          expect(res.statusCode, res.body).toBe(200);
          return res.json() as { batchId: string; calls: Array<{ callId: string; status: string }> };
        });
    const before = await eventually(async () => {
      const view = await live(first.runtime);
      return view.calls.length === 3 && view.calls.every((call) => call.status !== 'ONGOING')
        ? view
        : undefined;
    }, 15_000);
    await first.runtime.close();
    await first.database.close();

    const freshCache = new MemoryLiveCache();
    const second = await start(freshCache);
    cleanup.push(async () => {
      await second.runtime.close();
      await freshCache.close();
    });
    const after = await live(second.runtime);
    expect(after.batchId).toBe(batchId);
    expect(after.calls).toEqual(before.calls);
  });
});
