import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('GET /api/v1/agent: security', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
  });
  afterAll(() => t.close());

  it('answers 401 without a key or with a bad one', async () => {
    for (const key of [undefined, 'garbage', `${alice.key}x`]) {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/agent?agentId=${alice.agentId}`,
        ...(key ? { key } : {}),
      });
      expect(res.statusCode).toBe(401);
      expect(res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing API key' });
    }
  });

  it('answers 403 for a userId that is not the key’s, and 404 for another user’s agent', async () => {
    const forbidden = await t.request({
      method: 'GET',
      url: `/api/v1/agent?agentId=${bob.agentId}&userId=${bob.userId}`,
      key: alice.key,
    });
    expect(forbidden.statusCode).toBe(403);
    expect(forbidden.json()).toEqual({ error: 'Forbidden', message: 'Access denied' });
    const hidden = await t.request({
      method: 'GET',
      url: `/api/v1/agent?agentId=${bob.agentId}`,
      key: alice.key,
    });
    expect(hidden.statusCode).toBe(404);
    expect(hidden.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
  });
});
