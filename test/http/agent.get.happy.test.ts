import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('GET /api/v1/agent: happy path', () => {
  let t: TestApp;
  let account: Account;
  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount();
  });
  afterAll(() => t.close());

  it("returns the agent in the spec's shape, with or without the owner's userId", async () => {
    for (const url of [
      `/api/v1/agent?agentId=${account.agentId}`,
      `/api/v1/agent?agentId=${account.agentId}&userId=${account.userId}`,
    ]) {
      const res = await t.request({ method: 'GET', url, key: account.key });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toEqual({
        id: account.agentId,
        name: 'Sales agent',
        createdAt: expect.any(String),
        updatedAt: expect.any(String),
        type: 'OUTBOUND',
        isActive: true,
        basicDetails: { agent_name: 'Ava', agentLanguage: 'en' },
        metricConfig: { enabled: false, customMetrics: [] },
        sipTrunkId: null,
      });
    }
  });
});
