import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLeases } from '../../src/adapters/redis/leases.js';
import { RedisRateLimiter } from '../../src/adapters/redis/rate-limiter.js';
import { redisTestUrl } from '../helpers/redis.js';
import {
  dialRequest,
  type TestSipProvider,
  testDialRecords,
  testSipProvider,
} from '../helpers/sip-provider.js';
import { carrierLoad, startSipp } from '../helpers/sipp.js';

const REDIS_URL = redisTestUrl(1);

/**
 * Two processes' SIP providers (two workers) sharing one Redis and one trunk: the trunk's caps
 * hold across both, as the carrier (sipp) sees them.
 */
describe('trunk caps shared by several workers through Redis', () => {
  const prefix = `test-sip-shared-${process.pid}-${Date.now()}:`;
  const redis = new Redis(REDIS_URL, { keyPrefix: prefix });
  const workers: TestSipProvider[] = [];
  const connections: Redis[] = [];
  let shared: Awaited<ReturnType<typeof testDialRecords>>;
  beforeAll(async () => {
    shared = await testDialRecords();
  });
  afterAll(async () => {
    for (const connection of connections) connection.disconnect();
    const plain = new Redis(REDIS_URL);
    const keys = await plain.keys(`${prefix}*`);
    if (keys.length > 0) await plain.del(...keys);
    await plain.quit();
    await redis.quit();
    for (const made of workers) await made.dispose();
    await shared?.dispose();
  });

  /** A worker: its own dial records owner, its own data dir, and (by default) the shared Redis. */
  async function worker(
    trunkPort: number,
    caps: { maxCallsPerSecond: number | null; maxConcurrentCalls: number | null } = {
      maxCallsPerSecond: 4,
      maxConcurrentCalls: 2,
    },
    connection: Redis = redis,
    ringTimeoutMs = 5000,
  ) {
    const made = testSipProvider({ port: trunkPort, ...caps }, await shared.another(), {
      leases: new RedisLeases(connection),
      limiter: new RedisRateLimiter(connection),
      ringTimeoutMs,
    });
    workers.push(made);
    return made;
  }

  const request = (callId: string) => dialRequest(callId, 'trk_shared');

  it('never has more calls up, or more INVITEs a second, than the trunk allows in all', async () => {
    const log = path.join(os.tmpdir(), `sipp-shared-${process.pid}-${Date.now()}.log`);
    const far = await startSipp('batch', { calls: 8, messageLog: log, timeoutSeconds: 60 });
    const a = await worker(far.port);
    const b = await worker(far.port);
    for (let i = 0; i < 4; i++) {
      await a.sip.dial(request(`call_a${i}`));
      await b.sip.dial(request(`call_b${i}`));
    }
    await expect.poll(() => a.ended.length + b.ended.length, { timeout: 30_000, interval: 200 }).toBe(8);
    expect([...a.ended, ...b.ended].every((event) => event.status === 'COMPLETED')).toBe(true);
    expect(await far.done).toBe(0);
    const load = carrierLoad(log);
    fs.rmSync(log, { force: true });
    expect(load.calls).toBe(8);
    // Each worker alone would allow 2 up and 4 a second: together they still do.
    expect(load.peak).toBeLessThanOrEqual(2);
    expect(load.peak).toBe(2);
    expect(load.invitesPerSecond).toBeLessThanOrEqual(4);
  }, 60_000);

  it("gives a dead worker's trunk places back within seconds, not after 30 s", async () => {
    // The dead worker: its call rings on and on, and its Redis connection is gone with it (as
    // when its process is killed), so the place it holds is never renewed nor given back.
    const ringing = await startSipp('ring', { timeoutSeconds: 40 });
    const deadRedis = new Redis(REDIS_URL, { keyPrefix: prefix });
    connections.push(deadRedis);
    const caps = { maxCallsPerSecond: null, maxConcurrentCalls: 1 };
    const dead = await worker(ringing.port, caps, deadRedis, 30_000);
    await dead.sip.dial(request('call_held'));
    await expect.poll(async () => redis.zcard('leases:trunk:trk_shared:calls'), { timeout: 3000 }).toBe(1);
    deadRedis.disconnect();
    // The live worker's call waits for the one place, then goes through as soon as it is free.
    const busy = await startSipp('busy', { timeoutSeconds: 30 });
    const live = await worker(busy.port, caps);
    const asked = Date.now();
    await live.sip.dial(request('call_next'));
    await expect.poll(() => live.ended.length, { timeout: 12_000, interval: 100 }).toBe(1);
    expect(live.ended[0]).toMatchObject({ status: 'BUSY', sipCode: 486 });
    expect(Date.now() - asked).toBeLessThan(9000);
    ringing.child.kill('SIGKILL');
  }, 30_000);
});
