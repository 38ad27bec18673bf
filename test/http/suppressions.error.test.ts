import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('/api/v1/suppressions: errors', () => {
  let t: TestApp;
  let alice: Account;

  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
  });
  afterAll(() => t.close());

  const stored = async () =>
    (await sql<{ n: number }>`select count(*)::int as n from suppressions`.execute(t.runtime.database.db))
      .rows[0]?.n;

  it('refuses a body that is not a suppression with 400 naming the field, and stores nothing', async () => {
    const cases: Array<[unknown, string]> = [
      [{}, 'phoneNumber'],
      [{ phoneNumber: '555-0123' }, 'phoneNumber'],
      [{ phoneNumber: '+1000000000' }, 'phoneNumber'],
      [{ phoneNumber: 14155550123 }, 'phoneNumber'],
      [{ phoneNumber: '+14155550123', reason: '' }, 'reason'],
      [{ phoneNumber: '+14155550123', reason: 'x'.repeat(501) }, 'reason'],
      [{ phoneNumber: '+14155550123', source: 'api' }, 'source'],
    ];
    for (const [payload, field] of cases) {
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/suppressions',
        key: alice.key,
        payload: payload as Record<string, unknown>,
      });
      expect(res.statusCode, JSON.stringify(payload)).toBe(400);
      expect(res.json().error).toBe('Validation failed');
      expect(Object.keys(res.json().details.fieldErrors), JSON.stringify(payload)).toContain(field);
    }
    expect(await stored()).toBe(0);
  });

  it('refuses a bad limit or cursor with 400', async () => {
    for (const query of ['limit=0', 'limit=1001', 'limit=x', 'cursor=bm90IGEgY3Vyc29y', 'other=1']) {
      const res = await t.request({ method: 'GET', url: `/api/v1/suppressions?${query}`, key: alice.key });
      expect(res.statusCode, query).toBe(400);
    }
  });

  it('answers 400 for a DELETE of something that is not a number, 404 for a number not on the list', async () => {
    const bad = await t.request({ method: 'DELETE', url: '/api/v1/suppressions/hello', key: alice.key });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details.fieldErrors.phoneNumber).toBeDefined();
    const missing = await t.request({
      method: 'DELETE',
      url: '/api/v1/suppressions/%2B14155550199',
      key: alice.key,
    });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
  });
});
