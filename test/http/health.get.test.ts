import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLiveCache } from '../../src/adapters/redis/live-cache.js';
import { type Account, STORE, startTestApp, type TestApp } from '../helpers/app.js';

describe('GET /api/v1/health, /livez, /readyz', () => {
  let t: TestApp;
  let account: Account;
  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount();
  });
  afterAll(() => t.close());

  it('reports the database and the cache with their latency', async () => {
    const res = await t.request({ method: 'GET', url: '/api/v1/health', key: account.key });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      status: 'ok',
      database: { status: 'up', kind: STORE, latencyMs: expect.any(Number) },
      cache: { status: 'up', kind: STORE === 'postgres' ? 'redis' : 'memory', latencyMs: expect.any(Number) },
      // The scripted engine with the offline speech tools and no trunk: no outside dependency.
      dependencies: [],
      uptimeSeconds: expect.any(Number),
      version: expect.stringMatching(/^\d+\.\d+\.\d+/),
    });
  });

  it('needs a key for details; the probes need none and say nothing more', async () => {
    expect((await t.request({ method: 'GET', url: '/api/v1/health' })).statusCode).toBe(401);
    expect((await t.request({ method: 'GET', url: '/api/v1/health?x=1', key: account.key })).statusCode).toBe(
      400,
    );
    const live = await t.request({ method: 'GET', url: '/livez' });
    expect(live.statusCode).toBe(200);
    expect(live.json()).toEqual({ status: 'ok' });
    const ready = await t.request({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready' });
  });

  it('answers 503 quickly, naming the dependency, when the cache is down', async () => {
    const down = new RedisLiveCache({ url: 'redis://127.0.0.1:1/0' });
    const broken = await startTestApp({ overrides: { cache: down } });
    try {
      const user = await broken.createAccount();
      const started = Date.now();
      const res = await broken.request({ method: 'GET', url: '/api/v1/health', key: user.key });
      expect(Date.now() - started).toBeLessThan(5000);
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({
        status: 'degraded',
        database: { status: 'up' },
        cache: { status: 'down', error: expect.any(String) },
      });
      const ready = await broken.request({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json()).toEqual({ status: 'unavailable' });
      // A call still goes through with the cache down: the live view is a view, the database the record.
      const dial = await broken.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: user.key,
        payload: { to: '+14155550123', agentConfigId: user.agentId },
      });
      expect(dial.statusCode).toBe(200);
      const status = await broken.request({
        method: 'GET',
        url: `/api/v1/status/call?callId=${dial.json().callId}`,
        key: user.key,
      });
      expect(status.statusCode).toBe(200);
    } finally {
      await broken.close();
      await down.close();
    }
  });
});
