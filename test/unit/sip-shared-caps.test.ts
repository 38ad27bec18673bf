import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { RedisLeases } from '../../src/adapters/redis/leases.js';
import { RedisRateLimiter } from '../../src/adapters/redis/rate-limiter.js';
import { dialRequest, type TestSipProvider, testSipProvider } from '../helpers/sip-provider.js';
import { carrierLoad, startSipp } from '../helpers/sipp.js';

const REDIS_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';

/**
 * Two processes' SIP providers (two workers) sharing one Redis and one trunk: the trunk's caps
 * hold across both, as the carrier (sipp) sees them.
 */
describe('trunk caps shared by several workers through Redis', () => {
  const prefix = `test-sip-shared-${process.pid}-${Date.now()}:`;
  const redis = new Redis(REDIS_URL, { keyPrefix: prefix });
  const workers: TestSipProvider[] = [];
  afterAll(async () => {
    const plain = new Redis(REDIS_URL);
    const keys = await plain.keys(`${prefix}*`);
    if (keys.length > 0) await plain.del(...keys);
    await plain.quit();
    await redis.quit();
    for (const made of workers) await made.dispose();
  });

  function worker(trunkPort: number) {
    const made = testSipProvider(
      { port: trunkPort, maxCallsPerSecond: 4, maxConcurrentCalls: 2 },
      { shared: { leases: new RedisLeases(redis), limiter: new RedisRateLimiter(redis) } },
    );
    workers.push(made);
    return made;
  }

  const request = (callId: string) => dialRequest(callId, 'trk_shared');

  it('never has more calls up, or more INVITEs a second, than the trunk allows in all', async () => {
    const log = path.join(os.tmpdir(), `sipp-shared-${process.pid}-${Date.now()}.log`);
    const far = await startSipp('batch', { calls: 8, messageLog: log, timeoutSeconds: 60 });
    const a = worker(far.port);
    const b = worker(far.port);
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
});
