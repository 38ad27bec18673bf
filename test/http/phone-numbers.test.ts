import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, FAST_SIM, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Issue 25 §8, one phone-number rule: every entry point reads a number the same way, in the
 * user's defaultCountry, else OUTDIAL_DEFAULT_COUNTRY (US unless set), and refuses a bad one with a
 * sentence naming it, before any limit is looked at.
 */
describe('one phone-number rule over the API', () => {
  let t: TestApp;
  let alice: Account;

  beforeAll(async () => {
    // Calls stay up long enough for the cap test to see them in progress.
    t = await startTestApp({ env: { OUTDIAL_SIM_TALK_MS: '3000' } });
    alice = await t.createAccount({ minutes: 100 });
  });
  afterAll(() => t.close());

  const dial = (account: Account, to: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: account.agentId },
    });
  const contactNumbers = async (account: Account) =>
    (
      await t.runtime.database.db
        .selectFrom('contacts')
        .select('phone_number')
        .where('user_id', '=', account.userId)
        .execute()
    )
      .map((c) => c.phone_number)
      .sort();

  it('dials a 10-digit number in the default country (US) as E.164', async () => {
    const res = await dial(alice, '4155550123');
    expect(res.statusCode, res.body).toBe(200);
    expect(t.provider.dials.at(-1)?.to).toBe('+14155550123');
    expect(await contactNumbers(alice)).toEqual(['+14155550123']);
    const formatted = await dial(alice, '(415) 555-0124');
    expect(formatted.statusCode, formatted.body).toBe(200);
    expect(t.provider.dials.at(-1)?.to).toBe('+14155550124');
  });

  it('refuses a bad number with 400 naming it even at the concurrency cap, where a good one is 429', async () => {
    const account = await t.createAccount({ minutes: 100 });
    await t.admin('PATCH', `/admin/v1/users/${account.userId}`, { maxConcurrentCalls: 1 });
    expect((await dial(account, '+14155550301')).statusCode).toBe(200);
    const dialsBefore = t.provider.dials.length;
    const bad = await dial(account, '555-0123');
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({
      error: 'Validation failed',
      code: 'INVALID_REQUEST',
      message: 'to: 555-0123 is not a valid number for US',
      details: { fieldErrors: { to: ['555-0123 is not a valid number for US'] } },
    });
    const good = await dial(account, '4155550302');
    expect(good.statusCode).toBe(429);
    expect(good.json().code).toBe('CONCURRENCY_LIMIT');
    expect(t.provider.dials.length).toBe(dialsBefore);
    expect(await contactNumbers(account)).toEqual(['+14155550301']);
  });

  it("reads numbers in the user's defaultCountry, which wins over the server's", async () => {
    const londoner = await t.createAccount({ minutes: 100 });
    await t.admin('PATCH', `/admin/v1/users/${londoner.userId}`, { defaultCountry: 'GB' });
    const account = await t.request({ method: 'GET', url: '/api/v1/account', key: londoner.key });
    expect(account.json().defaultCountry).toBe('GB');
    const res = await dial(londoner, '07700 900123');
    expect(res.statusCode, res.body).toBe(200);
    expect(t.provider.dials.at(-1)?.to).toBe('+447700900123');
    // A US number written as in the US (1, then 10 digits) is not one in GB; with a +, it is.
    const us = await dial(londoner, '1-415-555-0123');
    expect(us.statusCode).toBe(400);
    expect(us.json().details.fieldErrors.to).toEqual(['1-415-555-0123 is not a valid number for GB']);
    expect((await dial(londoner, '+1 415-555-0125')).statusCode).toBe(200);
    const listed = await t.request({
      method: 'GET',
      url: `/api/v1/calls?phoneNumber=${encodeURIComponent('07700 900123')}`,
      key: londoner.key,
    });
    expect(listed.statusCode, listed.body).toBe(200);
    expect(listed.json().map((c: { phoneNumber: string }) => c.phoneNumber)).toEqual(['+447700900123']);
  });

  it('accepts a batch whose numbers lack the +, stored in E.164', async () => {
    const account = await t.createAccount({ minutes: 100 });
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: {
        agentId: account.agentId,
        contacts: [
          { phoneNumber: '4155550401' },
          { phoneNumber: '+1 415 555 0402' },
          { phoneNumber: '+14155550401' },
        ],
        options: { scheduledStartTime: new Date(Date.now() + 3_600_000).toISOString() },
      },
    });
    expect(res.statusCode, res.body).toBe(202);
    expect(res.json().message).toContain('2 contacts');
    expect(res.json().message).toContain('1 duplicate phone number');
    await eventually(async () => ((await contactNumbers(account)).length === 2 ? true : undefined));
    expect(await contactNumbers(account)).toEqual(['+14155550401', '+14155550402']);
  });

  it('refuses a batch with a bad row, naming each bad row with its sentence', async () => {
    const account = await t.createAccount({ minutes: 100 });
    const contacts = [
      { phoneNumber: '4155550501' },
      { phoneNumber: '555-0123' },
      { phoneNumber: '+1000000000' },
    ];
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: { agentId: account.agentId, contacts },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: 'Validation failed',
      code: 'INVALID_REQUEST',
      message: 'contacts.1.phoneNumber: row 1: 555-0123 is not a valid number for US (and 1 more)',
      details: {
        fieldErrors: {
          'contacts.1.phoneNumber': ['row 1: 555-0123 is not a valid number for US'],
          'contacts.2.phoneNumber': ['row 2: +1000000000 is not a possible phone number'],
        },
      },
    });
    expect(res.body).not.toContain('pattern');
    expect(await contactNumbers(account)).toEqual([]);

    const preflight = await t.request({
      method: 'POST',
      url: '/api/v1/batch/preflight',
      key: account.key,
      payload: { agentId: account.agentId, contacts },
    });
    expect(preflight.statusCode, preflight.body).toBe(200);
    expect(preflight.json()).toMatchObject({
      valid: 1,
      invalid: [
        {
          index: 1,
          phoneNumber: '555-0123',
          reason: 'contacts.1.phoneNumber 555-0123 is not a valid number for US',
        },
        { index: 2, phoneNumber: '+1000000000' },
      ],
      wouldBeAccepted: false,
    });
  });

  it('adds and removes suppressions written as the CLI import reads them, and refuses what it refuses', async () => {
    const account = await t.createAccount({ minutes: 100 });
    const add = (phoneNumber: string) =>
      t.request({ method: 'POST', url: '/api/v1/suppressions', key: account.key, payload: { phoneNumber } });
    const tenDigits = await add('4155550601');
    expect(tenDigits.statusCode, tenDigits.body).toBe(201);
    expect(tenDigits.json().phoneNumber).toBe('+14155550601');
    expect((await add('(415) 555-0601')).statusCode).toBe(200);
    expect((await add('+1 415.555.0602')).json().phoneNumber).toBe('+14155550602');
    const bad = await add('555-0123');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details.fieldErrors).toEqual({
      phoneNumber: ['555-0123 is not a valid number for US'],
    });
    const removed = await t.request({
      method: 'DELETE',
      url: `/api/v1/suppressions/${encodeURIComponent('415-555-0601')}`,
      key: account.key,
    });
    expect(removed.statusCode).toBe(204);
    // A suppressed number written nationally is still the suppressed number.
    const blocked = await dial(account, '415 555 0602');
    expect(blocked.statusCode).toBe(403);
    expect(blocked.json().code).toBe('NUMBER_SUPPRESSED');
  });

  it('describes the phone fields in the OpenAPI document without the E.164 pattern', async () => {
    const doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const dialTo =
      doc.paths['/api/v1/call/dial'].post.requestBody.content['application/json'].schema.properties.to;
    expect(dialTo.pattern).toBeUndefined();
    expect(dialTo.description).toContain('OUTDIAL_DEFAULT_COUNTRY');
    expect(JSON.stringify(doc)).not.toContain('^\\\\+[1-9][0-9]{8,14}$');
  });
});

describe('OUTDIAL_DEFAULT_COUNTRY', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ env: { ...FAST_SIM, OUTDIAL_DEFAULT_COUNTRY: 'gb' } });
  });
  afterAll(() => t.close());

  it("reads numbers without + in the server's country when the user has none", async () => {
    const account = await t.createAccount({ minutes: 100 });
    expect(
      (await t.request({ method: 'GET', url: '/api/v1/account', key: account.key })).json().defaultCountry,
    ).toBe('GB');
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to: '07700 900124', agentConfigId: account.agentId },
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(t.provider.dials.at(-1)?.to).toBe('+447700900124');
  });
});
