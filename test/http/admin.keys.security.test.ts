import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, JWT_SECRET, startTestApp, type TestApp } from '../helpers/app.js';

describe('API keys: security', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
  });
  afterAll(() => t.close());

  const read = (key: string, agentId = alice.agentId) =>
    t.request({ method: 'GET', url: `/api/v1/agent?agentId=${agentId}`, key });
  const sign = (claims: { sub: string; jti: string }, alg = 'HS256', secret = JWT_SECRET) =>
    new SignJWT({})
      .setProtectedHeader({ alg })
      .setIssuer('outdial')
      .setSubject(claims.sub)
      .setJti(claims.jti)
      .sign(new TextEncoder().encode(secret));

  it('refuses a token whose subject is changed to another user, even with a valid key id', async () => {
    const forged = await sign({ sub: bob.userId, jti: alice.keyId });
    expect((await read(forged, bob.agentId)).statusCode).toBe(401);
  });

  it('refuses tokens signed with another secret, another algorithm, or for a key id that does not exist', async () => {
    expect(
      (
        await read(
          await sign(
            { sub: alice.userId, jti: alice.keyId },
            'HS256',
            'another-secret-another-secret-123456',
          ),
        )
      ).statusCode,
    ).toBe(401);
    expect((await read(await sign({ sub: alice.userId, jti: alice.keyId }, 'HS512'))).statusCode).toBe(401);
    expect((await read(await sign({ sub: alice.userId, jti: 'key_made_up' }))).statusCode).toBe(401);
  });

  it("revoking one user's key leaves the other user's keys working", async () => {
    await t.admin('DELETE', `/admin/v1/keys/${alice.keyId}`);
    expect((await read(alice.key)).statusCode).toBe(401);
    expect((await read(bob.key, bob.agentId)).statusCode).toBe(200);
  });

  it('lists only the named user’s keys', async () => {
    const keys = (await t.admin('GET', `/admin/v1/keys?userId=${bob.userId}`)).json().keys;
    expect(keys.map((k: { id: string }) => k.id)).toEqual([bob.keyId]);
  });
});
