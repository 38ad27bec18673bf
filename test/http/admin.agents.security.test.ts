import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('admin agents: security and effect on the public API', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
  });
  afterAll(() => t.close());

  it("lists only the named user's agents", async () => {
    const agents = (await t.admin('GET', `/admin/v1/agents?userId=${alice.userId}`)).json().agents;
    expect(agents.map((a: { id: string }) => a.id)).toEqual([alice.agentId]);
  });

  it('a deactivated agent is still readable but can no longer dial', async () => {
    const off = await t.admin('PATCH', `/admin/v1/agents/${alice.agentId}`, { isActive: false });
    expect(off.json().isActive).toBe(false);
    const read = await t.request({
      method: 'GET',
      url: `/api/v1/agent?agentId=${alice.agentId}`,
      key: alice.key,
    });
    expect(read.statusCode).toBe(200);
    expect(read.json().isActive).toBe(false);
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+14155550123', agentConfigId: alice.agentId },
    });
    expect(dial.statusCode).toBe(404);
    expect(dial.json().code).toBe('AGENT_NOT_FOUND');
    const bobDial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: bob.key,
      payload: { to: '+14155550123', agentConfigId: bob.agentId },
    });
    expect(bobDial.statusCode).toBe(200);
  });
});
