import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import {
  ADMIN_TOKEN,
  createTestStorage,
  DATABASE_TEST_URL,
  deletePrefix,
  JWT_SECRET,
  REDIS_TEST_URL,
  type TestStorage,
} from '../helpers/app.js';
import { type Child, childEnv, freePort, startCli } from '../helpers/process.js';
import { maxInWindow } from '../helpers/rate.js';

/**
 * The start time recorded on each call (startTime in check-status, the live view and the export)
 * is the moment the call went out, and no one-second window of those times holds more than the
 * batch's rate, with two workers dialing the same batches.
 */
describe('recorded call start times of fast batches, two workers on one PostgreSQL and Redis', () => {
  const children: Child[] = [];
  let storage: TestStorage;
  let dataDir: string;
  const redisUrl = `${REDIS_TEST_URL}/4`;
  afterAll(async () => {
    for (const child of children) await child.stop('SIGKILL');
    await storage?.dispose();
    await deletePrefix(redisUrl, 'outdial:');
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('never records more than maxCallsPerSecond starts of a batch in any second', async () => {
    storage = await createTestStorage('postgres');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-start-times-'));
    const dialsDir = path.join(dataDir, 'dials');
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = (extra: Record<string, string>) =>
      childEnv({
        HOST: '127.0.0.1',
        PORT: String(port),
        OUTDIAL_DATA_DIR: dataDir,
        DATABASE_URL: `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`,
        REDIS_URL: redisUrl,
        OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
        OUTDIAL_JWT_SECRET: JWT_SECRET,
        OUTDIAL_DEMO_MINUTES: '100000',
        OUTDIAL_SIM_RING_MS: '20',
        OUTDIAL_SIM_TALK_MS: '100',
        OUTDIAL_SIM_DIALS_DIR: dialsDir,
        ...extra,
      });
    const api = startCli(['api'], env({}));
    children.push(api);
    await api.waitFor(/API key:\s+(\S+)/, 60_000);
    const key = api.output().match(/API key:\s+(\S+)/)?.[1] ?? '';
    const agentId = api.output().match(/agent:\s+(agt_\S+)/)?.[1] ?? '';
    const userId = api.output().match(/user:\s+(usr_\S+)/)?.[1] ?? '';
    for (let i = 0; i < 2; i++) {
      const worker = startCli(['worker'], env({}));
      children.push(worker);
      await worker.waitFor(/worker running/, 60_000);
    }

    const rates = [30, 30, 30];
    const batchIds: string[] = [];
    for (const [index, rate] of rates.entries()) {
      const res = await fetch(`${base}/api/v1/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          agentId,
          userId,
          contacts: Array.from({ length: 90 }, (_, i) => ({
            phoneNumber: `+1${300 + index}555${String(1000 + i).padStart(4, '0')}`,
          })),
          options: { maxCallsPerSecond: rate },
        }),
      });
      expect(res.status).toBe(202);
      batchIds.push(((await res.json()) as { batchId: string }).batchId);
    }

    const statuses = new Map<string, { status: string; recentCalls: Array<{ id: string }> }>();
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      for (const id of batchIds) {
        const res = await fetch(`${base}/api/v1/batch/check-status?batchId=${id}&limit=all`, {
          headers: { authorization: `Bearer ${key}` },
        });
        statuses.set(id, (await res.json()) as { status: string; recentCalls: Array<{ id: string }> });
      }
      if ([...statuses.values()].every((s) => s.status === 'completed')) break;
      await new Promise((resolve) => setTimeout(resolve, 300));
    }
    const handle = await storage.open();
    const dials = SimulatedVoiceProvider.readRecord(dialsDir);
    const dialedAt = new Map(dials.map((dial) => [dial.callId, dial.at.getTime()]));
    for (const [index, id] of batchIds.entries()) {
      expect(statuses.get(id)?.status).toBe('completed');
      const calls = await handle.db
        .selectFrom('calls')
        .select(['id', 'created_at'])
        .where('batch_id', '=', id)
        .execute();
      expect(calls).toHaveLength(90);
      const starts = calls.map((call) => call.created_at.getTime());
      // Each recorded start is the moment the network took the call, not a planned slot.
      for (const call of calls) expect(call.created_at.getTime()).toBe(dialedAt.get(call.id));
      expect(maxInWindow(starts, 1000), `batch ${index} at ${rates[index]}/s`).toBeLessThanOrEqual(
        rates[index] ?? 0,
      );
    }
  }, 120_000);
});
