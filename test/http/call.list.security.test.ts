import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import { callEnded, completedBatch, dialCall } from '../helpers/calls.js';

describe('GET /api/v1/calls: security', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  let aliceCall: string;
  let batchId: string;
  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
    alice = await t.createAccount();
    bob = await t.createAccount();
    aliceCall = await dialCall(t, alice, '+14155550123');
    ({ batchId } = await completedBatch(t, alice, [{ phoneNumber: '+14155557001' }]));
    await callEnded(t, alice, aliceCall);
  });
  afterAll(() => t.close());

  const list = (query: string, key?: string) =>
    t.request({ method: 'GET', url: `/api/v1/calls${query}`, ...(key ? { key } : {}) });

  it("never lists another user's calls, whatever the filter", async () => {
    expect((await list('', alice.key)).json()).toHaveLength(2);
    for (const query of [
      '',
      `?batchId=${batchId}`,
      `?phoneNumber=${encodeURIComponent('+14155550123')}`,
      '?status=COMPLETED',
      '?from=2000-01-01T00:00:00Z',
    ]) {
      const res = await list(query, bob.key);
      expect(res.statusCode, query).toBe(200);
      expect(res.json(), query).toEqual([]);
    }
  });

  it("refuses another user's call as a cursor, as it refuses one that does not exist", async () => {
    const res = await list(`?cursor=${aliceCall}`, bob.key);
    expect(res.statusCode).toBe(400);
    expect(res.json().details.fieldErrors).toHaveProperty('cursor');
    expect((await list(`?cursor=call_unknown`, bob.key)).json().message).toBe(res.json().message);
  });

  it('answers 401 without a key, with a malformed one and with a revoked one', async () => {
    expect((await list('')).statusCode).toBe(401);
    expect((await list('', 'not-a-key')).statusCode).toBe(401);
    expect((await list('', `${alice.key}x`)).statusCode).toBe(401);
    const spare = await t.admin('POST', '/admin/v1/keys', { userId: alice.userId, name: 'spare' });
    const { id, key } = spare.json<{ id: string; key: string }>();
    expect((await list('', key)).statusCode).toBe(200);
    expect((await t.admin('DELETE', `/admin/v1/keys/${id}`)).statusCode).toBeLessThan(300);
    expect((await list('', key)).statusCode).toBe(401);
  });
});
