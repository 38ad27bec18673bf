import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp, TestClock } from '../helpers/app.js';

describe('admin keys: happy path', () => {
  let t: TestApp;
  let account: Account;
  const clock = new TestClock();
  beforeAll(async () => {
    t = await startTestApp({ overrides: { clock } });
    account = await t.createAccount();
  });
  afterAll(() => t.close());

  const agentRead = (key: string) =>
    t.request({ method: 'GET', url: `/api/v1/agent?agentId=${account.agentId}`, key });

  it('creates a key shown once, which works, is listed without its secret, with its last use', async () => {
    const created = await t.admin('POST', '/admin/v1/keys', { userId: account.userId, name: 'CRM' });
    expect(created.statusCode).toBe(201);
    expect(created.headers['cache-control']).toBe('no-store');
    const { id, key } = created.json();
    expect(id).toMatch(/^key_/);
    expect(key.split('.')).toHaveLength(3);
    const header = JSON.parse(Buffer.from(key.split('.')[0], 'base64url').toString());
    const claims = JSON.parse(Buffer.from(key.split('.')[1], 'base64url').toString());
    expect(header.alg).toBe('HS256');
    expect(claims).toMatchObject({ sub: account.userId, jti: id });

    expect((await agentRead(key)).statusCode).toBe(200);
    const list = await t.admin('GET', `/admin/v1/keys?userId=${account.userId}`);
    expect(list.body).not.toContain(key);
    const listed = list.json().keys.find((k: { id: string }) => k.id === id);
    expect(listed).toMatchObject({ name: 'CRM', status: 'active', revokedAt: null, expiresAt: null });
    expect(listed.lastUsedAt).toEqual(expect.any(String));
  });

  it('revokes a key: refused at once, listed as revoked, and revoking again answers the same', async () => {
    const { id, key } = (await t.admin('POST', '/admin/v1/keys', { userId: account.userId })).json();
    expect((await agentRead(key)).statusCode).toBe(200);
    const revoked = await t.admin('DELETE', `/admin/v1/keys/${id}`);
    expect(revoked.statusCode).toBe(200);
    expect(revoked.json()).toMatchObject({ id, status: 'revoked', revokedAt: expect.any(String) });
    const after = await agentRead(key);
    expect(after.statusCode).toBe(401);
    expect(after.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing API key' });
    const again = await t.admin('DELETE', `/admin/v1/keys/${id}`);
    expect(again.json().revokedAt).toBe(revoked.json().revokedAt);
    expect((await agentRead(account.key)).statusCode).toBe(200);
  });

  it('a key stops working when its expiresAt passes', async () => {
    const expiresAt = new Date(clock.now().getTime() + 60 * 60 * 1000).toISOString();
    const { key } = (await t.admin('POST', '/admin/v1/keys', { userId: account.userId, expiresAt })).json();
    expect((await agentRead(key)).statusCode).toBe(200);
    clock.advance(61 * 60 * 1000);
    expect((await agentRead(key)).statusCode).toBe(401);
    const listed = (await t.admin('GET', `/admin/v1/keys?userId=${account.userId}`)).json().keys;
    expect(listed.some((k: { status: string }) => k.status === 'expired')).toBe(true);
  });
});
