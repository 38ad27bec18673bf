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
    [{ name: 'x', maxConcurrentCalls: 0 }, 'maxConcurrentCalls'],
    [{ name: 'x', maxConcurrentCalls: 2.5 }, 'maxConcurrentCalls'],
    [{ name: 'x', maxConcurrentCalls: 100_001 }, 'maxConcurrentCalls'],
    [{ name: 'x', maxConcurrentCalls: '5' }, 'maxConcurrentCalls'],
  ])('refuses user %o naming the field %s', async (body, field) => {
    const res = await t.admin('POST', '/admin/v1/users', body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'Validation failed', code: 'INVALID_REQUEST' });
    expect(res.json().details.fieldErrors[field]).toBeDefined();
  });

  it.each([
    [{ maxConcurrentCalls: 0 }, 'maxConcurrentCalls'],
    [{ maxConcurrentCalls: -3 }, 'maxConcurrentCalls'],
    [{ maxConcurrentCalls: null }, 'maxConcurrentCalls'],
    [{ name: '' }, 'name'],
    [{ minutes: 5 }, 'minutes'],
    [{ availableMinutes: 5 }, 'availableMinutes'],
  ])('refuses the change %o naming the field %s, and changes nothing', async (body, field) => {
    const before = (await t.admin('GET', `/admin/v1/users/${userId}`)).json();
    const res = await t.admin('PATCH', `/admin/v1/users/${userId}`, body);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'Validation failed', code: 'INVALID_REQUEST' });
    expect(res.json().details.fieldErrors[field]).toBeDefined();
    expect((await t.admin('GET', `/admin/v1/users/${userId}`)).json()).toEqual(before);
  });

  it('refuses an empty change and answers 404 for an unknown user', async () => {
    const empty = await t.admin('PATCH', `/admin/v1/users/${userId}`, {});
    expect(empty.statusCode).toBe(400);
    expect(empty.json()).toMatchObject({ error: 'Validation failed', code: 'INVALID_REQUEST' });
    const missing = await t.admin('PATCH', '/admin/v1/users/usr_missing', { maxConcurrentCalls: 5 });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
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
