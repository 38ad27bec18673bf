import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('POST /api/v1/call/dial: security', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
  });
  afterAll(() => t.close());

  const dial = (key: string | undefined, payload: Record<string, unknown>) =>
    t.request({ method: 'POST', url: '/api/v1/call/dial', ...(key ? { key } : {}), payload });

  it('answers 401 without a key, with a malformed key and with a key signed by someone else', async () => {
    const forged =
      'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJvdXRkaWFsIiwic3ViIjoidXNyX3giLCJqdGkiOiJrZXlfeCJ9.c2lnbmF0dXJl';
    for (const key of [undefined, 'not-a-jwt', forged]) {
      const res = await dial(key, { to: '+14155550123', agentConfigId: alice.agentId });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing API key' });
    }
    expect(t.provider.dials).toHaveLength(0);
  });

  it('answers 401 for an alg:none token carrying a real key id', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const claims = Buffer.from(
      JSON.stringify({ iss: 'outdial', sub: alice.userId, jti: alice.keyId }),
    ).toString('base64url');
    const res = await dial(`${header}.${claims}.`, { to: '+14155550123', agentConfigId: alice.agentId });
    expect(res.statusCode).toBe(401);
  });

  it('answers 403 when the body names another user', async () => {
    const res = await dial(alice.key, {
      to: '+14155550123',
      agentConfigId: alice.agentId,
      userId: bob.userId,
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({ error: 'Forbidden', message: 'Access denied' });
  });

  it("refuses another user's agent and contact as if they did not exist", async () => {
    const agent = await dial(alice.key, { to: '+14155550123', agentConfigId: bob.agentId });
    expect(agent.statusCode).toBe(404);
    expect(agent.json().code).toBe('AGENT_NOT_FOUND');

    const bobs = await dial(bob.key, { to: '+14155550199', agentConfigId: bob.agentId });
    const contact = await dial(alice.key, { contactId: bobs.json().contactId, agentConfigId: alice.agentId });
    expect(contact.statusCode).toBe(404);
  });

  it('keeps contacts per user: the same number dialed by two users is two contacts', async () => {
    const a = await dial(alice.key, { to: '+14155550177', agentConfigId: alice.agentId });
    const b = await dial(bob.key, { to: '+14155550177', agentConfigId: bob.agentId });
    expect(a.statusCode).toBe(200);
    expect(b.statusCode).toBe(200);
    expect(a.json().contactId).not.toBe(b.json().contactId);
  });

  it('answers 401 on the legacy path without a key', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/api/private/call/dial',
      payload: { to: '+14155550123' },
    });
    expect(res.statusCode).toBe(401);
  });
});
