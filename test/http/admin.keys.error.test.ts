import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('admin keys: errors', () => {
  let t: TestApp;
  let userId: string;
  beforeAll(async () => {
    t = await startTestApp();
    userId = (await t.admin('POST', '/admin/v1/users', { name: 'U' })).json().id;
  });
  afterAll(() => t.close());

  it('refuses an expiry in the past, a malformed expiry, unknown fields and a missing userId', async () => {
    const past = await t.admin('POST', '/admin/v1/keys', { userId, expiresAt: '2020-01-01T00:00:00Z' });
    expect(past.statusCode).toBe(400);
    expect(past.json().details.fieldErrors.expiresAt).toEqual(['must be in the future']);
    expect((await t.admin('POST', '/admin/v1/keys', { userId, expiresAt: 'tomorrow' })).statusCode).toBe(400);
    expect(
      (await t.admin('POST', '/admin/v1/keys', { userId, scopes: ['all'] })).json().details.fieldErrors
        .scopes,
    ).toBeDefined();
    expect((await t.admin('POST', '/admin/v1/keys', {})).json().details.fieldErrors.userId).toEqual([
      'is required',
    ]);
  });

  it('answers 404 for a key of an unknown user and for revoking an unknown key', async () => {
    expect((await t.admin('POST', '/admin/v1/keys', { userId: 'usr_missing' })).statusCode).toBe(404);
    expect((await t.admin('DELETE', '/admin/v1/keys/key_missing')).statusCode).toBe(404);
    expect((await t.admin('GET', '/admin/v1/keys')).statusCode).toBe(400);
  });
});
