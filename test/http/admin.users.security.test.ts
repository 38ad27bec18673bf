import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_MAX_CONCURRENT_CALLS } from '../../src/domain/allowance.js';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

/** Every admin route refuses a missing token, a wrong token and a user's API key. */
const ADMIN_ROUTES = (ids: { userId: string; agentId: string; keyId: string }) =>
  [
    ['POST', '/admin/v1/users', { name: 'x' }],
    ['GET', '/admin/v1/users', undefined],
    ['GET', `/admin/v1/users/${ids.userId}`, undefined],
    ['PATCH', `/admin/v1/users/${ids.userId}`, { maxConcurrentCalls: 500 }],
    ['POST', `/admin/v1/users/${ids.userId}/credits`, { minutes: 5 }],
    ['GET', `/admin/v1/users/${ids.userId}/webhook-secret`, undefined],
    ['POST', `/admin/v1/users/${ids.userId}/webhook-secret/rotate`, undefined],
    ['POST', '/admin/v1/agents', { userId: ids.userId, name: 'x' }],
    ['PATCH', `/admin/v1/agents/${ids.agentId}`, { isActive: false }],
    ['GET', `/admin/v1/agents?userId=${ids.userId}`, undefined],
    ['POST', '/admin/v1/keys', { userId: ids.userId }],
    ['GET', `/admin/v1/keys?userId=${ids.userId}`, undefined],
    ['DELETE', `/admin/v1/keys/${ids.keyId}`, undefined],
  ] as const;

describe('admin interface: security', () => {
  let t: TestApp;
  let account: Account;
  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount({ minutes: 7 });
  });
  afterAll(() => t.close());

  it('refuses every admin route without the admin token, with a wrong one and with an API key, changing nothing', async () => {
    const routes = ADMIN_ROUTES({ userId: account.userId, agentId: account.agentId, keyId: account.keyId });
    for (const [method, url, payload] of routes) {
      for (const authorization of [
        undefined,
        'Bearer wrong-token-wrong-token',
        `Bearer ${account.key}`,
        'test-admin-token-0123456789',
      ]) {
        const res = await t.runtime.app.inject({
          method,
          url,
          headers: authorization ? { authorization } : {},
          ...(payload ? { payload } : {}),
        });
        expect(res.statusCode, `${method} ${url} with ${authorization}`).toBe(401);
        expect(res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing admin token' });
      }
    }
    const user = (await t.admin('GET', `/admin/v1/users/${account.userId}`)).json();
    expect(user.availableMinutes).toBe(7);
    expect(user.maxConcurrentCalls).toBe(DEFAULT_MAX_CONCURRENT_CALLS); // the default, unchanged
    const agents = (await t.admin('GET', `/admin/v1/agents?userId=${account.userId}`)).json().agents;
    expect(agents).toHaveLength(1);
    expect(agents[0].isActive).toBe(true);
    const keys = (await t.admin('GET', `/admin/v1/keys?userId=${account.userId}`)).json().keys;
    expect(keys.map((k: { status: string }) => k.status)).toEqual(['active']);
  });

  it('keeps the admin token out of the public API: it is not an API key', async () => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/agent?agentId=${account.agentId}`,
      key: 'test-admin-token-0123456789',
    });
    expect(res.statusCode).toBe(401);
  });
});
