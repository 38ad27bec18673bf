import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createTestCache } from '../helpers/app.js';
import { deleteKeysOf, redisTestUrl } from '../helpers/redis.js';

/**
 * Which Redis database the tests use: the one REDIS_TEST_URL names, else their own defaults (never
 * 0). Against the real server, as a developer who was given database 7 would run them.
 */
describe('REDIS_TEST_URL', () => {
  const given = process.env.REDIS_TEST_URL;
  const base = (given ?? 'redis://127.0.0.1:6379').replace(/\/\d*\/?$/, '');
  afterEach(() => {
    if (given === undefined) delete process.env.REDIS_TEST_URL;
    else process.env.REDIS_TEST_URL = given;
  });

  it('names the database every test uses; without one each test keeps its default', () => {
    process.env.REDIS_TEST_URL = `${base}/7`;
    expect([redisTestUrl(1), redisTestUrl(3)]).toEqual([`${base}/7`, `${base}/7`]);
    process.env.REDIS_TEST_URL = base;
    expect([redisTestUrl(1), redisTestUrl(3)]).toEqual([`${base}/1`, `${base}/3`]);
    process.env.REDIS_TEST_URL = `${base}/`;
    expect(redisTestUrl(2)).toBe(`${base}/2`);
    delete process.env.REDIS_TEST_URL;
    expect(redisTestUrl(1)).toBe('redis://127.0.0.1:6379/1');
  });

  it('says what is wrong with a database that is not a number', () => {
    process.env.REDIS_TEST_URL = `${base}/seven`;
    expect(() => redisTestUrl(1)).toThrow('REDIS_TEST_URL names database "seven": give a number');
    process.env.REDIS_TEST_URL = 'not a url';
    expect(() => redisTestUrl(1)).toThrow('REDIS_TEST_URL is not a URL: not a url');
  });

  it("puts a test app's live view in the named database, and nothing in database 1", async () => {
    process.env.REDIS_TEST_URL = `${base}/7`;
    const { cache, prefix, redisUrl, dispose } = await createTestCache('postgres');
    const named = new Redis(`${base}/7`);
    const other = new Redis(`${base}/1`);
    try {
      expect(redisUrl).toBe(`${base}/7`);
      await cache.putCall({
        callId: 'call_in_seven',
        userId: 'usr_1',
        status: 'ONGOING',
        startTime: new Date().toISOString(),
        phoneNumber: '+14155550123',
        contactId: 'cnt_1',
        batchId: null,
        error: null,
        duration: null,
        recordingUrl: null,
      });
      expect(await named.exists(`${prefix}call:call_in_seven`)).toBe(1);
      expect(await other.exists(`${prefix}call:call_in_seven`)).toBe(0);
    } finally {
      await dispose();
    }
    // Its keys are gone when the file is done.
    expect(await named.keys(`${prefix}*`)).toEqual([]);
    await named.quit();
    await other.quit();
  });

  it("tidies only its own processes' keys in a shared database, never another file's", async () => {
    const url = `${base}/7`;
    const redis = new Redis(url);
    const mine = `call_${randomBytes(6).toString('hex')}`;
    const theirs = `call_${randomBytes(6).toString('hex')}`;
    const myBatch = `bat_${randomBytes(6).toString('hex')}`;
    const keys = [`outdial:call:${mine}`, `outdial:ratelimit:batch:${myBatch}`, `outdial:call:${theirs}`];
    try {
      for (const key of keys) await redis.set(key, '1', 'EX', 60);
      await deleteKeysOf(url, [mine, myBatch]);
      expect(await Promise.all(keys.map((key) => redis.exists(key)))).toEqual([0, 0, 1]);
    } finally {
      await redis.del(...keys);
      await redis.quit();
    }
  });
});
