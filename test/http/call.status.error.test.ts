import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('call status reads: errors', () => {
  let t: TestApp;
  let account: Account;
  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount();
  });
  afterAll(() => t.close());

  it.each(['/api/v1/status/call', '/api/v1/call/check-status'])(
    '%s: missing callId, unknown parameter, unknown call',
    async (path) => {
      const missing = await t.request({ method: 'GET', url: path, key: account.key });
      expect(missing.statusCode).toBe(400);
      expect(missing.json()).toMatchObject({ error: 'Bad Request', message: 'Missing required parameter' });
      expect(
        (await t.request({ method: 'GET', url: `${path}?callId=call_x&extra=1`, key: account.key }))
          .statusCode,
      ).toBe(400);
      const unknown = await t.request({
        method: 'GET',
        url: `${path}?callId=call_missing`,
        key: account.key,
      });
      expect(unknown.statusCode).toBe(404);
      expect(unknown.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
    },
  );
});
