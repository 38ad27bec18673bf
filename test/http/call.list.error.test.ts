import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import { callEnded, dialCall } from '../helpers/calls.js';

describe('GET /api/v1/calls: errors', () => {
  let t: TestApp;
  let alice: Account;
  let callId: string;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    callId = await dialCall(t, alice, '+14155550123');
    await callEnded(t, alice, callId);
  });
  afterAll(() => t.close());

  it('refuses a bad filter with 400 naming the field', async () => {
    const cases: Array<[string, string]> = [
      ['status=bogus', 'status'],
      ['status=completed', 'status'],
      [`batchId=${'b'.repeat(65)}`, 'batchId'],
      ['phoneNumber=555', 'phoneNumber'],
      ['phoneNumber=%2B1000000000', 'phoneNumber'],
      ['phoneNumber=call-me', 'phoneNumber'],
      ['phoneNumber=', 'phoneNumber'],
      ['from=yesterday', 'from'],
      ['from=2025-01-01', 'from'],
      ['from=2025-01-01T10:00:00', 'from'],
      ['from=2025-13-01T00:00:00Z', 'from'],
      ['to=2025-02-30T00:00:00Z', 'to'],
      ['from=2025-06-01T00:00:00Z&to=2025-05-01T00:00:00Z', 'to'],
      ['from=2025-06-01T00:00:00Z&to=2025-06-01T00:00:00Z', 'to'],
      ['limit=0', 'limit'],
      ['limit=1001', 'limit'],
      ['limit=ten', 'limit'],
      ['cursor=call_unknown', 'cursor'],
      ['page=2', 'page'],
    ];
    for (const [query, field] of cases) {
      const res = await t.request({ method: 'GET', url: `/api/v1/calls?${query}`, key: alice.key });
      expect(res.statusCode, query).toBe(400);
      expect(Object.keys(res.json().details?.fieldErrors ?? {}), query).toContain(field);
    }
  });

  it('names the field in the message of the filters checked beyond the schema', async () => {
    const phone = await t.request({ method: 'GET', url: '/api/v1/calls?phoneNumber=12', key: alice.key });
    // The one phone-number rule's sentence (a national number is read in the default country, US).
    expect(phone.json().message).toMatch(/^phoneNumber: 12 is not a /);
    const window = await t.request({
      method: 'GET',
      url: '/api/v1/calls?from=2025-06-01T00:00:00Z&to=2025-05-01T00:00:00Z',
      key: alice.key,
    });
    expect(window.json().message).toBe('to must be later than from');
    const cursor = await t.request({ method: 'GET', url: '/api/v1/calls?cursor=call_nope', key: alice.key });
    expect(cursor.json().message).toBe('cursor is not the X-Next-Cursor of a previous page');
  });

  it('takes the cursor of the last call: an empty last page, not an error', async () => {
    const res = await t.request({ method: 'GET', url: `/api/v1/calls?cursor=${callId}`, key: alice.key });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual([]);
    expect(res.headers['x-next-cursor']).toBeUndefined();
  });
});
