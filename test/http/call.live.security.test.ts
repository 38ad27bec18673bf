import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, STORE, startTestApp, type TestApp } from '../helpers/app.js';

/** Live call control is for the call's own user, with a working API key. */
describe(`live call control security (${STORE})`, () => {
  let t: TestApp;
  let owner: Account;
  let other: Account;
  let callId: string;
  beforeAll(async () => {
    t = await startTestApp({ env: { OUTDIAL_SIM_RING_MS: '30', OUTDIAL_SIM_TALK_MS: '60000' } });
    owner = await t.createAccount();
    other = await t.createAccount();
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: owner.key,
      payload: { to: '+14155550123', agentConfigId: owner.agentId },
    });
    callId = res.json().callId;
  });
  afterAll(() => t.close());

  const routes = () =>
    [
      ['POST', `/api/v1/call/hangup?callId=${callId}`, undefined],
      ['POST', `/api/v1/call/transfer?callId=${callId}`, { to: '+14155550199' }],
      ['POST', `/api/v1/call/say?callId=${callId}`, { text: 'Hello.' }],
      ['GET', `/api/v1/call/events?callId=${callId}`, undefined],
    ] as const;

  it('answers 401 without a key, with a malformed one, and with a revoked one', async () => {
    const revoke = await t.admin('DELETE', `/admin/v1/keys/${other.keyId}`);
    expect(revoke.statusCode).toBeLessThan(300);
    for (const [method, url, payload] of routes()) {
      for (const key of [undefined, 'not-a-key', other.key]) {
        const res = await t.request({
          method,
          url,
          ...(key ? { key } : {}),
          ...(payload ? { payload } : {}),
        });
        expect(res.statusCode, `${method} ${url} ${key}`).toBe(401);
        expect(res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing API key' });
      }
    }
  });

  it("answers 404 for another user's call, as the other call reads do", async () => {
    const third = await t.createAccount();
    for (const [method, url, payload] of routes()) {
      const res = await t.request({ method, url, key: third.key, ...(payload ? { payload } : {}) });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
      expect(res.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
    }
    // The call was left alone: still up for its owner, who is told it has no agent session.
    const status = await t.request({
      method: 'GET',
      url: `/api/v1/call/check-status?callId=${callId}`,
      key: owner.key,
    });
    expect(status.json().data.status).toBe('ONGOING');
    const own = await t.request({
      method: 'POST',
      url: `/api/v1/call/say?callId=${callId}`,
      key: owner.key,
      payload: { text: 'Hello.' },
    });
    expect(own.statusCode).toBe(409);
  });
});
