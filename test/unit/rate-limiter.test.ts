import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { MemoryRateLimiter } from '../../src/adapters/memory/rate-limiter.js';
import { RedisRateLimiter } from '../../src/adapters/redis/rate-limiter.js';
import type { RateLimiter } from '../../src/ports.js';
import { redisTestUrl } from '../helpers/redis.js';

const REDIS_URL = redisTestUrl(1);

/**
 * The start log keeps one entry per member: a call admitted again (the SIP provider right before
 * its INVITE, after the dispatcher) moves its start instead of counting twice, on one process
 * (memory) as across processes (Redis).
 */
describe.each(['memory', 'redis'] as const)('the start log (%s)', (kind) => {
  const prefix = `test-rate-${process.pid}-${Date.now()}:`;
  const redis = kind === 'redis' ? new Redis(REDIS_URL, { keyPrefix: prefix }) : null;
  const limiter: RateLimiter = redis ? new RedisRateLimiter(redis) : new MemoryRateLimiter();
  afterAll(async () => {
    if (!redis) return;
    const plain = new Redis(REDIS_URL);
    const keys = await plain.keys(`${prefix}*`);
    if (keys.length > 0) await plain.del(...keys);
    await plain.quit();
    await redis.quit();
  });

  it('admits a member again without counting it twice, and still holds the rate for others', async () => {
    const key = `batch:${kind}-again`;
    expect((await limiter.admit(key, 2, 1000, 'call_a')).waitMs).toBe(0);
    const again = await limiter.admit(key, 2, 1000, 'call_a');
    expect(again.waitMs).toBe(0);
    expect(again.at).toBeInstanceOf(Date);
    // call_a's one entry and call_b's fill the second: a third call waits.
    expect((await limiter.admit(key, 2, 1000, 'call_b')).waitMs).toBe(0);
    const third = await limiter.admit(key, 2, 1000, 'call_c');
    expect(third.at).toBeNull();
    expect(third.waitMs).toBeGreaterThan(0);
    expect(third.waitMs).toBeLessThanOrEqual(1000);
  });

  it('at a rate of one a second, a member admitted again is not held back by its own start', async () => {
    const key = `batch:${kind}-one`;
    expect((await limiter.admit(key, 1, 1000, 'call_a')).waitMs).toBe(0);
    expect((await limiter.admit(key, 1, 1000, 'call_a')).waitMs).toBe(0);
    expect((await limiter.admit(key, 1, 1000, 'call_b')).at).toBeNull();
  });
});
