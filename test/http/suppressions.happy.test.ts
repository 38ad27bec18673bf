import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp, TestClock } from '../helpers/app.js';

describe('/api/v1/suppressions: happy path', () => {
  let t: TestApp;
  let alice: Account;
  const clock = new TestClock();

  beforeAll(async () => {
    t = await startTestApp({ overrides: { clock } });
    alice = await t.createAccount({ minutes: 10 });
  });
  afterAll(() => t.close());

  const add = (payload: Record<string, unknown>) =>
    t.request({ method: 'POST', url: '/api/v1/suppressions', key: alice.key, payload });
  const list = (query = '') =>
    t.request({ method: 'GET', url: `/api/v1/suppressions${query}`, key: alice.key });

  it('adds a number (201), answers the stored record again when it is added twice (200), and lists it', async () => {
    const created = await add({ phoneNumber: '+14155550100', reason: 'asked by email' });
    expect(created.statusCode).toBe(201);
    const record = created.json();
    expect(record).toEqual({
      phoneNumber: '+14155550100',
      reason: 'asked by email',
      sourceCallId: null,
      createdAt: expect.any(String),
    });

    const again = await add({ phoneNumber: '+14155550100', reason: 'another reason' });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toEqual(record);

    const listed = await list();
    expect(listed.statusCode).toBe(200);
    expect(listed.json()).toEqual([record]);
    expect(listed.headers['x-next-cursor']).toBeUndefined();
  });

  it('lists newest first, in pages that together hold every number once', async () => {
    for (const suffix of ['11', '12', '13', '14', '15']) {
      clock.advance(1000);
      expect((await add({ phoneNumber: `+141555501${suffix}` })).statusCode).toBe(201);
    }
    const seen: string[] = [];
    let query = '?limit=2';
    for (let page = 0; page < 10; page++) {
      const res = await list(query);
      expect(res.statusCode).toBe(200);
      const items = res.json<Array<{ phoneNumber: string; createdAt: string }>>();
      expect(items.length).toBeLessThanOrEqual(2);
      seen.push(...items.map((item) => item.phoneNumber));
      const cursor = res.headers['x-next-cursor'];
      if (!cursor) break;
      expect(res.headers.link).toContain(`/api/v1/suppressions?limit=2&cursor=${cursor}`);
      query = `?limit=2&cursor=${cursor}`;
    }
    expect(seen).toEqual([
      '+14155550115',
      '+14155550114',
      '+14155550113',
      '+14155550112',
      '+14155550111',
      '+14155550100',
    ]);
  });

  it('keeps a page boundary when the number it ends on is removed meanwhile', async () => {
    const first = await list('?limit=1');
    const cursor = first.headers['x-next-cursor'];
    expect(first.json()[0].phoneNumber).toBe('+14155550115');
    expect(
      (await t.request({ method: 'DELETE', url: '/api/v1/suppressions/%2B14155550115', key: alice.key }))
        .statusCode,
    ).toBe(204);
    const next = await list(`?limit=1&cursor=${cursor}`);
    expect(next.json()[0].phoneNumber).toBe('+14155550114');
  });

  it('removes a number (204); it is gone from the list and can be dialed again', async () => {
    const removed = await t.request({
      method: 'DELETE',
      url: '/api/v1/suppressions/%2B14155550100',
      key: alice.key,
    });
    expect(removed.statusCode).toBe(204);
    expect(removed.body).toBe('');
    const numbers = list().then((res) =>
      res.json<Array<{ phoneNumber: string }>>().map((s) => s.phoneNumber),
    );
    expect(await numbers).not.toContain('+14155550100');
    const again = await t.request({
      method: 'DELETE',
      url: '/api/v1/suppressions/%2B14155550100',
      key: alice.key,
    });
    expect(again.statusCode).toBe(404);
    // A literal + in the path names the same number.
    expect(
      (await t.request({ method: 'DELETE', url: '/api/v1/suppressions/+14155550114', key: alice.key }))
        .statusCode,
    ).toBe(204);
  });

  it('refuses a suppressed number at dial time with 403 NUMBER_SUPPRESSED: nothing dialed, stored or charged', async () => {
    expect((await add({ phoneNumber: '+14155550133', reason: 'lawyer' })).statusCode).toBe(201);
    const before = t.provider.dials.length;
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+14155550133', agentConfigId: alice.agentId },
    });
    expect(res.statusCode).toBe(403);
    expect(res.json()).toEqual({
      error: 'Forbidden',
      code: 'NUMBER_SUPPRESSED',
      message: expect.stringContaining('+14155550133'),
    });
    expect(t.provider.dials.length).toBe(before);
    const db = t.runtime.database.db;
    const calls = await sql<{
      n: number;
    }>`select count(*)::int as n from calls where phone_number = '+14155550133'`.execute(db);
    expect(calls.rows[0]?.n).toBe(0);
    const contacts = await sql<{
      n: number;
    }>`select count(*)::int as n from contacts where phone_number = '+14155550133'`.execute(db);
    expect(contacts.rows[0]?.n).toBe(0);
    const user = await sql<{
      m: number;
    }>`select available_minutes as m from users where id = ${alice.userId}`.execute(db);
    expect(user.rows[0]?.m).toBe(10);

    // Dialed through an existing contact: the same refusal.
    const other = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+14155550134', agentConfigId: alice.agentId },
    });
    expect(other.statusCode).toBe(200);
    expect((await add({ phoneNumber: '+14155550134' })).statusCode).toBe(201);
    const byContact = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { contactId: other.json().contactId, agentConfigId: alice.agentId },
    });
    expect(byContact.statusCode).toBe(403);
    expect(byContact.json().code).toBe('NUMBER_SUPPRESSED');
  });

  it('is in the OpenAPI document with its responses', async () => {
    const doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    expect(Object.keys(doc.paths['/api/v1/suppressions'].post.responses)).toEqual(
      expect.arrayContaining(['200', '201', '400', '401']),
    );
    expect(Object.keys(doc.paths['/api/v1/suppressions'].get.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401']),
    );
    expect(Object.keys(doc.paths['/api/v1/suppressions/{phoneNumber}'].delete.responses)).toEqual(
      expect.arrayContaining(['204', '400', '401', '404']),
    );
    expect(doc.paths['/api/v1/call/dial'].post.responses['403'].description).toContain('NUMBER_SUPPRESSED');
  });
});
