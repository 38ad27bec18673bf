import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

interface ListedUser {
  id: string;
  name: string;
  email: string | null;
  availableMinutes: number;
  maxConcurrentCalls: number;
  defaultCountry: string | null;
}

/** GET /admin/v1/users: every user, newest first, paged as the other lists (x-next-cursor, Link). */
describe('admin users list', () => {
  let t: TestApp;
  /** Created oldest first; the list answers them newest first. */
  const created: ListedUser[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    for (let i = 1; i <= 5; i++) {
      const res = await t.admin('POST', '/admin/v1/users', {
        name: `User ${i}`,
        ...(i % 2 === 0 ? { email: `u${i}@example.test` } : {}),
        minutes: i * 10,
      });
      created.push(res.json());
    }
  });
  afterAll(() => t.close());

  const page = (query = '') => t.admin('GET', `/admin/v1/users${query}`);

  it('lists every user newest first, with their minutes and limits and no secret', async () => {
    const res = await page();
    expect(res.statusCode).toBe(200);
    expect(res.headers['x-next-cursor']).toBeUndefined();
    expect(res.headers.link).toBeUndefined();
    expect(res.json()).toEqual({ users: [...created].reverse() });
    expect(res.json().users[0]).toEqual({
      id: created[4]?.id,
      name: 'User 5',
      email: null,
      availableMinutes: 50,
      maxConcurrentCalls: 200,
      defaultCountry: null,
    });
    expect(res.body).not.toContain('whsec_');
  });

  it('pages with limit and cursor: x-next-cursor and Link name the next page, the last page has neither', async () => {
    const first = await page('?limit=2');
    expect(first.json().users.map((u: ListedUser) => u.name)).toEqual(['User 5', 'User 4']);
    const cursor = first.headers['x-next-cursor'];
    expect(cursor).toBe(created[3]?.id);
    expect(first.headers.link).toBe(`</admin/v1/users?limit=2&cursor=${cursor}>; rel="next"`);

    // The Link address is followed as given.
    const link = String(first.headers.link).match(/^<([^>]+)>/)?.[1] ?? '';
    const second = await t.admin('GET', link);
    expect(second.json().users.map((u: ListedUser) => u.name)).toEqual(['User 3', 'User 2']);
    const third = await page(`?limit=2&cursor=${second.headers['x-next-cursor']}`);
    expect(third.json().users.map((u: ListedUser) => u.name)).toEqual(['User 1']);
    expect(third.headers['x-next-cursor']).toBeUndefined();
    expect(third.headers.link).toBeUndefined();
  });

  it('gives every user exactly once across pages while users are created in between', async () => {
    const seen: string[] = [];
    const added: string[] = [];
    let query = '?limit=2';
    for (;;) {
      const res = await page(query);
      expect(res.statusCode).toBe(200);
      seen.push(...res.json().users.map((u: ListedUser) => u.id));
      // A newcomer sorts before the first page: it neither shifts nor repeats the pages still to come.
      added.push((await t.admin('POST', '/admin/v1/users', { name: 'Newcomer' })).json().id);
      const next = res.headers['x-next-cursor'];
      if (!next) break;
      query = `?limit=2&cursor=${next}`;
    }
    expect(seen).toEqual([...created].reverse().map((u) => u.id));
    const all = (await page('?limit=1000')).json().users.map((u: ListedUser) => u.id);
    expect(all.slice(0, added.length)).toEqual([...added].reverse());
  });

  it.each([
    ['?limit=0', 'limit'],
    ['?limit=1001', 'limit'],
    ['?limit=ten', 'limit'],
    ['?cursor=', 'cursor'],
    ['?cursor=not-a-user', 'cursor'],
    ['?cursor=agt_01m86nj5ebyh2bbam04awhm3vj', 'cursor'],
    ['?userId=usr_01m86nj5e80hbwz5qc6rg0sfm4', 'userId'],
  ])('refuses %s with a 400 naming %s', async (query, field) => {
    const res = await page(query);
    expect(res.statusCode).toBe(400);
    expect(res.json().details.fieldErrors[field]).toBeDefined();
  });

  it('refuses a missing or wrong admin token and a user API key', async () => {
    const account = await t.createAccount();
    for (const authorization of [undefined, 'Bearer wrong-token-wrong-token', `Bearer ${account.key}`]) {
      const res = await t.runtime.app.inject({
        method: 'GET',
        url: '/admin/v1/users',
        headers: authorization ? { authorization } : {},
      });
      expect(res.statusCode, String(authorization)).toBe(401);
      expect(res.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing admin token' });
    }
  });

  it('is in the OpenAPI document as listUsers, behind the admin token', async () => {
    const doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const operation = doc.paths['/admin/v1/users'].get;
    expect(operation).toMatchObject({
      operationId: 'listUsers',
      tags: ['admin'],
      security: [{ adminToken: [] }],
    });
    expect(operation.summary).toBeTruthy();
    expect(operation.description).toBeTruthy();
    expect(operation.parameters.map((p: { name: string }) => p.name).sort()).toEqual(['cursor', 'limit']);
  });
});
