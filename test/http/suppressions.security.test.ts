import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('/api/v1/suppressions: security', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
  });
  afterAll(() => t.close());

  it('answers 401 without a key or with a malformed one, on every operation', async () => {
    for (const key of [undefined, 'not-a-jwt']) {
      const auth = key ? { key } : {};
      const results = await Promise.all([
        t.request({
          method: 'POST',
          url: '/api/v1/suppressions',
          payload: { phoneNumber: '+14155550123' },
          ...auth,
        }),
        t.request({ method: 'GET', url: '/api/v1/suppressions', ...auth }),
        t.request({ method: 'DELETE', url: '/api/v1/suppressions/%2B14155550123', ...auth }),
      ]);
      for (const res of results) {
        expect(res.statusCode).toBe(401);
        expect(res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing API key' });
      }
    }
    const listed = await t.request({ method: 'GET', url: '/api/v1/suppressions', key: alice.key });
    expect(listed.json()).toEqual([]);
  });

  it("keeps lists per user: another user's number is neither listed, removable nor refused at dial time", async () => {
    const added = await t.request({
      method: 'POST',
      url: '/api/v1/suppressions',
      key: alice.key,
      payload: { phoneNumber: '+14155550150', reason: 'alice only' },
    });
    expect(added.statusCode).toBe(201);

    const bobs = await t.request({ method: 'GET', url: '/api/v1/suppressions', key: bob.key });
    expect(bobs.json()).toEqual([]);
    const removed = await t.request({
      method: 'DELETE',
      url: '/api/v1/suppressions/%2B14155550150',
      key: bob.key,
    });
    expect(removed.statusCode).toBe(404);
    // Bob may call the number; Alice may not.
    const bobDial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: bob.key,
      payload: { to: '+14155550150', agentConfigId: bob.agentId },
    });
    expect(bobDial.statusCode).toBe(200);
    const aliceDial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+14155550150', agentConfigId: alice.agentId },
    });
    expect(aliceDial.statusCode).toBe(403);
    expect(aliceDial.json().code).toBe('NUMBER_SUPPRESSED');

    // Bob's own add of the same number is his own record (201, not Alice's).
    const bobAdd = await t.request({
      method: 'POST',
      url: '/api/v1/suppressions',
      key: bob.key,
      payload: { phoneNumber: '+14155550150' },
    });
    expect(bobAdd.statusCode).toBe(201);
    expect(bobAdd.json().reason).toBeNull();
  });

  it("does not page into another user's list with a cursor", async () => {
    for (const n of ['61', '62']) {
      await t.request({
        method: 'POST',
        url: '/api/v1/suppressions',
        key: bob.key,
        payload: { phoneNumber: `+141555501${n}` },
      });
    }
    const page = await t.request({ method: 'GET', url: '/api/v1/suppressions?limit=1', key: bob.key });
    const cursor = page.headers['x-next-cursor'];
    expect(cursor).toBeDefined();
    const alices = await t.request({
      method: 'GET',
      url: `/api/v1/suppressions?cursor=${cursor}`,
      key: alice.key,
    });
    expect(alices.statusCode).toBe(200);
    for (const item of alices.json<Array<{ reason: string | null }>>())
      expect(item.reason).toBe('alice only');
  });
});
