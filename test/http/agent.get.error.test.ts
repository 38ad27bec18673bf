import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('GET /api/v1/agent: errors', () => {
  let t: TestApp;
  let account: Account;
  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount();
  });
  afterAll(() => t.close());

  it('answers a missing agentId with the spec’s Bad Request body', async () => {
    const res = await t.request({ method: 'GET', url: '/api/v1/agent', key: account.key });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: 'Bad Request',
      message: 'Missing required parameter',
      details: { fieldErrors: { agentId: ['is required'] } },
    });
  });

  it('refuses unknown parameters and over-long ids, and answers 404 for an unknown agent', async () => {
    expect(
      (
        await t.request({
          method: 'GET',
          url: `/api/v1/agent?agentId=${account.agentId}&verbose=1`,
          key: account.key,
        })
      ).statusCode,
    ).toBe(400);
    expect(
      (await t.request({ method: 'GET', url: `/api/v1/agent?agentId=${'a'.repeat(65)}`, key: account.key }))
        .statusCode,
    ).toBe(400);
    const missing = await t.request({
      method: 'GET',
      url: '/api/v1/agent?agentId=agt_missing',
      key: account.key,
    });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
  });
});
