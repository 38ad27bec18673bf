import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { submitBatch } from '../helpers/calls.js';

/** check-status (and its other addresses), live batch status, list and cancel: happy, error and security cases. */
describe('batch reads and cancel', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
    alice = await t.createAccount({ minutes: 10_000 });
    bob = await t.createAccount({ minutes: 10_000 });
  });
  afterAll(() => t.close());

  const numbers = (n: number, from: number) =>
    Array.from({ length: n }, (_, i) => ({ phoneNumber: `+1415555${from + i}`, name: `N${i}` }));
  const create = (account: Account, body: Record<string, unknown>) => submitBatch(t, account, body);
  const get = (account: Account, url: string) => t.request({ method: 'GET', url, key: account.key });

  it('reports statistics with the default 10 recent calls, a limit, or all of them, at every address', async () => {
    const batchId = await create(alice, {
      contacts: numbers(12, 1000),
      options: { maxCallsPerSecond: 30 },
      name: 'Q4 renewals',
    });
    const done = await eventually(async () => {
      const s = (await get(alice, `/api/v1/batch/check-status?batchId=${batchId}`)).json();
      return s.status === 'completed' ? s : undefined;
    }, 15_000);
    expect(done).toMatchObject({
      batchId,
      name: 'Q4 renewals',
      priority: 5,
      agentId: alice.agentId,
      userId: alice.userId,
      webhooks: null,
      statistics: { total: 12, processed: 12, pending: 0, percentComplete: 100 },
      performance: {
        callsPerSecond: expect.any(Number),
        estimatedTimeRemaining: 0,
        elapsedTime: expect.any(Number),
      },
    });
    expect(done.recentCalls).toHaveLength(10);
    expect(done.recentCalls[0]).toEqual({
      id: expect.stringMatching(/^call_/),
      callSid: expect.any(String),
      status: expect.any(String),
      duration: expect.any(Number),
      createdAt: expect.any(String),
      phoneNumber: expect.stringMatching(/^\+1415555/),
      contactName: expect.stringMatching(/^N\d+$/),
    });
    expect(
      (await get(alice, `/api/v1/batch/check-status?batchId=${batchId}&limit=3`)).json().recentCalls,
    ).toHaveLength(3);
    expect(
      (await get(alice, `/api/v1/batch/check-status?batchId=${batchId}&limit=all`)).json().recentCalls,
    ).toHaveLength(12);
    expect(
      (await get(alice, `/api/v1/batch/check-status?batchId=${batchId}&limit=-1`)).json().recentCalls,
    ).toHaveLength(12);
    expect((await get(alice, `/api/v1/batch/${batchId}/status?limit=all`)).json().recentCalls).toHaveLength(
      12,
    );
    const legacy = await get(alice, `/api/v1/batch?batchId=${batchId}`);
    expect(legacy.json().batchId).toBe(batchId);
    expect(legacy.headers.deprecation).toMatch(/^@\d+$/);
    const live = (await get(alice, `/api/v1/status/batch?batchId=${batchId}`)).json();
    expect(live.batchId).toBe(batchId);
    expect(live.calls).toHaveLength(12);
    expect(Object.keys(live.calls[0]).sort()).toEqual([
      'callId',
      'duration',
      'error',
      'phoneNumber',
      'recordingUrl',
      'startTime',
      'status',
    ]);
  });

  it('answers missing, malformed and unknown batch ids with the spec bodies, and hides other users’ batches', async () => {
    const mine = await create(alice, { contacts: numbers(1, 3000) });
    for (const url of ['/api/v1/batch/check-status', '/api/v1/status/batch', '/api/v1/batch']) {
      const missing = await get(alice, url);
      expect(missing.statusCode, url).toBe(400);
      expect(missing.json()).toMatchObject({ error: 'Bad Request', message: 'Missing required parameter' });
      const unknown = await get(alice, `${url}?batchId=bat_unknown`);
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
      expect((await get(bob, `${url}?batchId=${mine}`)).statusCode).toBe(404);
      expect((await t.request({ method: 'GET', url: `${url}?batchId=${mine}` })).statusCode).toBe(401);
    }
    expect((await get(alice, `/api/v1/batch/check-status?batchId=${mine}&limit=abc`)).statusCode).toBe(400);
    expect((await get(bob, `/api/v1/batch/${mine}/status`)).statusCode).toBe(404);
  });

  it('lists only the user’s batches, newest first, with filters and cursor pages', async () => {
    const carol = await t.createAccount({ minutes: 1000 });
    const ids = [];
    for (let i = 0; i < 3; i++)
      ids.push(
        await create(carol, {
          contacts: numbers(1, 4000 + i),
          options: { tags: i === 1 ? ['vip'] : ['std'] },
        }),
      );
    const all = (await get(carol, '/api/v1/batch/list')).json();
    expect(all.map((b: { batchId: string }) => b.batchId)).toEqual([...ids].reverse());
    expect(all[0]).toMatchObject({
      status: expect.any(String),
      total: 1,
      agentId: carol.agentId,
      priority: 5,
      percentComplete: expect.any(Number),
    });
    expect(
      (await get(carol, '/api/v1/batch/list?tag=vip')).json().map((b: { batchId: string }) => b.batchId),
    ).toEqual([ids[1]]);
    const page1 = await get(carol, '/api/v1/batch/list?limit=2');
    expect(page1.json()).toHaveLength(2);
    expect(page1.headers['x-next-cursor']).toBe(ids[1]);
    expect(page1.headers.link).toContain('rel="next"');
    const page2 = await get(carol, `/api/v1/batch/list?limit=2&cursor=${page1.headers['x-next-cursor']}`);
    expect(page2.json().map((b: { batchId: string }) => b.batchId)).toEqual([ids[0]]);
    expect(page2.headers['x-next-cursor']).toBeUndefined();
    expect((await get(carol, '/api/v1/batch/list?status=completed&limit=100')).statusCode).toBe(200);
    for (const bad of ['status=bogus', 'cursor=bat_unknown', 'limit=0', 'page=2']) {
      expect((await get(carol, `/api/v1/batch/list?${bad}`)).statusCode, bad).toBe(400);
    }
    expect((await get(bob, `/api/v1/batch/list?cursor=${ids[0]}`)).statusCode).toBe(400);
    expect((await t.request({ method: 'GET', url: '/api/v1/batch/list' })).statusCode).toBe(401);
  });

  it('cancels a running batch: queued contacts leave the queue and no call starts after', async () => {
    const batchId = await create(alice, { contacts: numbers(30, 5000), options: { maxCallsPerSecond: 2 } });
    await eventually(async () =>
      (await get(alice, `/api/v1/batch/check-status?batchId=${batchId}`)).json().status === 'processing'
        ? true
        : undefined,
    );
    expect(
      (await t.request({ method: 'POST', url: `/api/v1/batch/cancel?batchId=${batchId}`, key: bob.key }))
        .statusCode,
    ).toBe(404);
    expect(
      (await t.request({ method: 'POST', url: `/api/v1/batch/cancel?batchId=${batchId}` })).statusCode,
    ).toBe(401);
    const res = await t.request({
      method: 'POST',
      url: `/api/v1/batch/cancel?batchId=${batchId}`,
      key: alice.key,
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ success: true, batchId, status: 'cancelled', message: expect.any(String) });
    expect(body.cancelledJobs).toBeGreaterThan(20);
    const calls = () =>
      get(alice, `/api/v1/batch/check-status?batchId=${batchId}&limit=all`).then((r) => r.json());
    const right = await calls();
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const later = await calls();
    expect(later.status).toBe('cancelled');
    expect(later.recentCalls).toHaveLength(right.recentCalls.length);
    expect(later.recentCalls.length + body.cancelledJobs).toBe(30);

    const again = await t.request({
      method: 'POST',
      url: `/api/v1/batch/cancel?batchId=${batchId}`,
      key: alice.key,
    });
    expect(again.statusCode).toBe(400);
    expect(again.json()).toMatchObject({ error: 'Bad Request', code: 'BATCH_NOT_CANCELLABLE' });
    expect(
      (await t.request({ method: 'POST', url: '/api/v1/batch/cancel', key: alice.key })).statusCode,
    ).toBe(400);
    expect(
      (await t.request({ method: 'POST', url: '/api/v1/batch/cancel?batchId=bat_unknown', key: alice.key }))
        .statusCode,
    ).toBe(404);
  });

  it('cancels a scheduled batch before it dials anyone', async () => {
    const start = new Date(Date.now() + 3_600_000).toISOString();
    const batchId = await create(alice, {
      contacts: numbers(4, 6000),
      options: { scheduledStartTime: start },
    });
    await eventually(async () =>
      (await get(alice, `/api/v1/batch/check-status?batchId=${batchId}`)).json().status === 'scheduled'
        ? true
        : undefined,
    );
    const res = await t.request({
      method: 'POST',
      url: `/api/v1/batch/cancel?batchId=${batchId}`,
      key: alice.key,
    });
    expect(res.json()).toMatchObject({ status: 'cancelled', cancelledJobs: 4 });
    expect((await get(alice, `/api/v1/batch/check-status?batchId=${batchId}`)).json().recentCalls).toEqual(
      [],
    );
  });
});
