import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

/** SIP trunks in the admin interface: happy path, validation, secrets never returned, in-use deletes, auth. */
describe('admin SIP trunks', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
  });
  afterAll(() => t.close());

  const trunk = {
    name: 'Telnyx',
    host: 'sip.telnyx.com',
    username: 'outdial-user',
    password: 's3cret-Passw0rd!',
    fromNumber: '+14155550100',
    maxCallsPerSecond: 5,
    maxConcurrentCalls: 20,
  };

  it('creates, reads, lists, changes and deletes a trunk; the password never comes back', async () => {
    const created = await t.admin('POST', '/admin/v1/sip-trunks', { userId: alice.userId, ...trunk });
    expect(created.statusCode, created.body).toBe(201);
    const view = created.json();
    expect(view).toEqual({
      id: expect.stringMatching(/^trk_/),
      userId: alice.userId,
      name: 'Telnyx',
      host: 'sip.telnyx.com',
      port: 5060,
      transport: 'udp',
      username: 'outdial-user',
      hasPassword: true,
      fromNumber: '+14155550100',
      maxCallsPerSecond: 5,
      maxConcurrentCalls: 20,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(created.body).not.toContain(trunk.password);
    // Not in the database in clear either, but the SIP provider can read it back.
    const stored = await t.runtime.database.db
      .selectFrom('sip_trunks')
      .select('password_encrypted')
      .where('id', '=', view.id)
      .executeTakeFirstOrThrow();
    expect(stored.password_encrypted).not.toContain(trunk.password);
    expect((await t.runtime.services.sipTrunks.forDialing(view.id))?.password).toBe(trunk.password);

    expect((await t.admin('GET', `/admin/v1/sip-trunks/${view.id}`)).json()).toEqual(view);
    const listed = await t.admin('GET', `/admin/v1/sip-trunks?userId=${alice.userId}`);
    expect(listed.json().sipTrunks.map((x: { id: string }) => x.id)).toEqual([view.id]);

    const changed = await t.admin('PATCH', `/admin/v1/sip-trunks/${view.id}`, { password: null, port: 5080 });
    expect(changed.statusCode).toBe(200);
    expect(changed.json()).toMatchObject({ hasPassword: false, port: 5080, name: 'Telnyx' });

    expect((await t.admin('DELETE', `/admin/v1/sip-trunks/${view.id}`)).statusCode).toBe(204);
    expect((await t.admin('GET', `/admin/v1/sip-trunks/${view.id}`)).statusCode).toBe(404);
  });

  it('refuses to delete a trunk an agent dials through', async () => {
    const created = (
      await t.admin('POST', '/admin/v1/sip-trunks', { userId: alice.userId, ...trunk })
    ).json();
    const agent = await t.admin('POST', '/admin/v1/agents', {
      userId: alice.userId,
      name: 'SIP agent',
      sipTrunkId: created.id,
    });
    expect(agent.statusCode).toBe(201);
    const refused = await t.admin('DELETE', `/admin/v1/sip-trunks/${created.id}`);
    expect(refused.statusCode).toBe(409);
    expect(refused.json().message).toContain(agent.json().id);
  });

  it("lets an agent dial only through a trunk of the agent's own user", async () => {
    const alices = (await t.admin('POST', '/admin/v1/sip-trunks', { userId: alice.userId, ...trunk })).json();
    const refused = await t.admin('POST', '/admin/v1/agents', {
      userId: bob.userId,
      name: 'Borrower',
      sipTrunkId: alices.id,
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().details.fieldErrors).toHaveProperty('sipTrunkId');
    const unknown = await t.admin('POST', '/admin/v1/agents', {
      userId: bob.userId,
      name: 'Ghost',
      sipTrunkId: 'trk_missing',
    });
    expect(unknown.statusCode).toBe(400);
    const bobs = (await t.admin('POST', '/admin/v1/agents', { userId: bob.userId, name: 'Plain' })).json();
    const patched = await t.admin('PATCH', `/admin/v1/agents/${bobs.id}`, { sipTrunkId: alices.id });
    expect(patched.statusCode).toBe(400);
    const listed = (await t.admin('GET', `/admin/v1/agents?userId=${bob.userId}`)).json();
    expect(JSON.stringify(listed)).not.toContain(alices.id);
  });

  it('validates what it stores', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ ...trunk, host: 'sip://bad host' }, 'host'],
      [{ ...trunk, fromNumber: '12345' }, 'fromNumber'],
      [{ ...trunk, port: 70000 }, 'port'],
      [{ ...trunk, transport: 'tls' }, 'transport'],
      [{ ...trunk, maxCallsPerSecond: 0 }, 'maxCallsPerSecond'],
      [{ ...trunk, name: undefined }, 'name'],
    ];
    for (const [body, field] of cases) {
      const res = await t.admin('POST', '/admin/v1/sip-trunks', { userId: alice.userId, ...body });
      expect(res.statusCode, field).toBe(400);
      expect(Object.keys(res.json().details.fieldErrors), field).toContain(field);
    }
    expect(
      (await t.admin('POST', '/admin/v1/sip-trunks', { userId: 'usr_missing', ...trunk })).statusCode,
    ).toBe(404);
    expect((await t.admin('PATCH', '/admin/v1/sip-trunks/trk_missing', { name: 'x' })).statusCode).toBe(404);
    expect((await t.admin('DELETE', '/admin/v1/sip-trunks/trk_missing')).statusCode).toBe(404);
  });

  it('needs the admin token; an API key is not enough', async () => {
    for (const headers of [{}, { authorization: `Bearer ${alice.key}` }]) {
      const res = await t.request({
        method: 'GET',
        url: `/admin/v1/sip-trunks?userId=${alice.userId}`,
        headers,
      });
      expect(res.statusCode).toBe(401);
    }
  });
});
