import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('admin users: errors', () => {
  let t: TestApp;
  let userId: string;
  beforeAll(async () => {
    t = await startTestApp();
    userId = (await t.admin('POST', '/admin/v1/users', { name: 'U', minutes: 1 })).json().id;
  });
  afterAll(() => t.close());

  it.each([
    [{}, 'name'],
    [{ name: '' }, 'name'],
    [{ name: 'x', email: 'not-an-email' }, 'email'],
    [{ name: 'x', minutes: -1 }, 'minutes'],
    [{ name: 'x', minutes: 1.5 }, 'minutes'],
    [{ name: 'x', minutes: '10' }, 'minutes'],
    [{ name: 'x', role: 'admin' }, 'role'],
  ])('refuses user %o naming the field %s', async (body, field) => {
    const res = await t.admin('POST', '/admin/v1/users', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'Validation failed', code: 'INVALID_REQUEST' });
    expect(res.json().details.fieldErrors[field]).toBeDefined();
  });

  it('refuses zero or fractional credits and answers 404 for an unknown user', async () => {
    for (const minutes of [0, 2.5, 'ten']) {
      const res = await t.admin('POST', `/admin/v1/users/${userId}/credits`, { minutes });
      expect(res.statusCode, String(minutes)).toBe(400);
    }
    expect((await t.admin('POST', '/admin/v1/users/usr_missing/credits', { minutes: 5 })).statusCode).toBe(
      404,
    );
    expect((await t.admin('GET', '/admin/v1/users/usr_missing')).json()).toEqual({
      error: 'Not Found',
      message: 'Resource not found',
    });
    expect((await t.admin('GET', '/admin/v1/users/usr_missing/webhook-secret')).statusCode).toBe(404);
    expect((await t.admin('POST', '/admin/v1/users/usr_missing/webhook-secret/rotate')).statusCode).toBe(404);
  });

  it('answers malformed JSON with 400 and an unknown admin route with 404', async () => {
    const res = await t.runtime.app.inject({
      method: 'POST',
      url: '/admin/v1/users',
      headers: { authorization: 'Bearer test-admin-token-0123456789', 'content-type': 'application/json' },
      payload: '{"name":',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'Bad Request', code: 'INVALID_JSON' });
    expect((await t.admin('GET', '/admin/v1/nothing')).statusCode).toBe(404);
  });
});
