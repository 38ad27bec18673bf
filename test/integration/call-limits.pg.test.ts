import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { createRuntime, type Runtime } from '../../src/main.js';
import { ADMIN_TOKEN, createTestCache, createTestStorage, eventually, JWT_SECRET } from '../helpers/app.js';
import { maxOverlap } from '../helpers/rate.js';

/**
 * Two runtimes, each with its own connection pool, cache and dispatcher, on one PostgreSQL schema:
 * what several API and worker processes share. Only the database can keep them within a user's
 * places and minutes.
 */
describe("a user's places and minutes across processes on one PostgreSQL", () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  const admin = { authorization: `Bearer ${ADMIN_TOKEN}` };
  async function startTwo(env: Record<string, string>): Promise<Runtime[]> {
    const storage = await createTestStorage('postgres');
    cleanup.push(() => storage.dispose());
    const out: Runtime[] = [];
    for (let i = 0; i < 2; i++) {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-limits-'));
      const config = loadConfig({
        OUTDIAL_DATA_DIR: dataDir,
        OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
        OUTDIAL_JWT_SECRET: JWT_SECRET,
        LOG_LEVEL: 'silent',
        OUTDIAL_SIM_RING_MS: '30',
        ...env,
      });
      const testCache = await createTestCache('postgres');
      const runtime = await createRuntime(config, {
        logger: pino({ level: 'silent' }),
        database: await storage.open(),
        cache: testCache.cache,
        // The runtime's own simulator, as a deployment has it: it writes each call's dial record,
        // so a call's recorded start is the moment it went out (not the moment its claim planned).
        dispatchTickMs: 20,
      });
      cleanup.push(async () => {
        await runtime.close();
        await testCache.dispose();
        fs.rmSync(dataDir, { recursive: true, force: true });
      });
      out.push(runtime);
    }
    return out;
  }
  async function account(runtime: Runtime, body: Record<string, unknown>) {
    const post = (url: string, payload: Record<string, unknown>) =>
      runtime.app.inject({ method: 'POST', url, headers: admin, payload });
    const userId = (await post('/admin/v1/users', { name: 'U', ...body })).json().id as string;
    const agentId = (await post('/admin/v1/agents', { userId, name: 'A' })).json().id as string;
    const key = (await post('/admin/v1/keys', { userId })).json().key as string;
    return { userId, agentId, auth: { authorization: `Bearer ${key}` } };
  }

  it('lets through exactly the free places and unreserved minutes of simultaneous single dials sent to both', async () => {
    const runtimes = await startTwo({ OUTDIAL_SIM_TALK_MS: '2000' });
    const [a, b] = runtimes as [Runtime, Runtime];
    const dialAll = async (user: Awaited<ReturnType<typeof account>>, from: number) => {
      const replies = await Promise.all(
        Array.from({ length: 16 }, (_, i) =>
          (i % 2 === 0 ? a : b).app.inject({
            method: 'POST',
            url: '/api/v1/call/dial',
            headers: user.auth,
            payload: { to: `+1415555${from + i}`, agentConfigId: user.agentId },
          }),
        ),
      );
      return replies.map((r) => r.statusCode);
    };
    const placed = await dialAll(await account(a, { minutes: 1000, maxConcurrentCalls: 3 }), 5000);
    expect(placed.filter((c) => c === 200)).toHaveLength(3);
    expect(placed.filter((c) => c === 429)).toHaveLength(13);
    const paid = await dialAll(await account(b, { minutes: 5 }), 6000);
    expect(paid.filter((c) => c === 200)).toHaveLength(5);
    expect(paid.filter((c) => c === 402)).toHaveLength(11);
  });

  it("keeps one batch dialed by both dispatchers within its user's maxConcurrentCalls less the place kept for single calls, each contact called once", async () => {
    const runtimes = await startTwo({ OUTDIAL_SIM_TALK_MS: '300' });
    const [a, b] = runtimes as [Runtime, Runtime];
    // 3 places: the campaign may fill 2 of them, in both processes together.
    const user = await account(a, { minutes: 1000, maxConcurrentCalls: 3 });
    const accepted = await a.app.inject({
      method: 'POST',
      url: '/api/v1/batch',
      headers: user.auth,
      payload: {
        agentId: user.agentId,
        userId: user.userId,
        contacts: Array.from({ length: 10 }, (_, i) => ({ phoneNumber: `+1415555${7000 + i}` })),
        options: { maxCallsPerSecond: 30 },
      },
    });
    expect(accepted.statusCode, accepted.body).toBe(202);
    const batchId = accepted.json().batchId as string;
    a.startWorkers();
    b.startWorkers();
    await eventually(async () => {
      const res = await b.app.inject({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}`,
        headers: user.auth,
      });
      return res.json().status === 'completed' ? true : undefined;
    }, 30_000);
    const calls = await a.database.db
      .selectFrom('calls')
      .select(['contact_id', 'attempt', 'status', 'created_at', 'ended_at'])
      .where('batch_id', '=', batchId)
      .execute();
    expect(calls).toHaveLength(10);
    expect(new Set(calls.map((c) => c.contact_id)).size).toBe(10);
    for (const call of calls) expect(call).toMatchObject({ status: 'COMPLETED', attempt: 1 });
    expect(
      maxOverlap(
        calls.map((c) => ({
          start: c.created_at.getTime(),
          end: c.ended_at?.getTime() ?? Number.POSITIVE_INFINITY,
        })),
      ),
    ).toBeLessThanOrEqual(2);
  });
});
