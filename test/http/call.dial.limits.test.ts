import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

/** A single dial needs an unreserved minute and a free place under the user's maxConcurrentCalls. */
describe('POST /api/v1/call/dial: reserved minutes and the concurrent-call limit', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Calls stay up long enough for the checks below to see them in progress.
    t = await startTestApp({ env: { OUTDIAL_SIM_TALK_MS: '1500' } });
  });
  afterAll(() => t.close());

  const dial = (account: Account, to: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: account.agentId },
    });
  const callRows = (account: Account) =>
    t.runtime.database.db
      .selectFrom('calls')
      .select(['id', 'status', 'phone_number'])
      .where('user_id', '=', account.userId)
      .execute();
  const limit = async (account: Account, maxConcurrentCalls: number) => {
    const res = await t.admin('PATCH', `/admin/v1/users/${account.userId}`, { maxConcurrentCalls });
    expect(res.statusCode, res.body).toBe(200);
  };

  it('reserves a minute for each call in progress: with 2 minutes and 2 calls up, a third dial is 402 and nothing is written or dialed', async () => {
    const account = await t.createAccount({ minutes: 2 });
    expect((await dial(account, '+14155550201')).statusCode).toBe(200);
    expect((await dial(account, '+14155550202')).statusCode).toBe(200);
    const dialsBefore = t.provider.dials.length;
    const third = await dial(account, '+14155550203');
    expect(third.statusCode).toBe(402);
    expect(third.json()).toMatchObject({
      error: 'Insufficient call minutes',
      code: 'INSUFFICIENT_CREDITS',
      message: expect.stringContaining('reserved'),
      details: { estimatedMinutesRequired: 1, availableMinutes: 2, reservedMinutes: 2 },
    });
    expect(t.provider.dials.length).toBe(dialsBefore);
    expect((await callRows(account)).map((c) => c.phone_number).sort()).toEqual([
      '+14155550201',
      '+14155550202',
    ]);
    const contact = await t.runtime.database.db
      .selectFrom('contacts')
      .select('id')
      .where('user_id', '=', account.userId)
      .where('phone_number', '=', '+14155550203')
      .executeTakeFirst();
    expect(contact).toBeUndefined();
    // When the calls end (each charged its minute), the balance is 0, never below.
    await eventually(async () =>
      (await callRows(account)).every((c) => c.status !== 'ONGOING') ? true : undefined,
    );
    expect((await t.admin('GET', `/admin/v1/users/${account.userId}`)).json().availableMinutes).toBe(0);
  });

  it("answers 429 CONCURRENCY_LIMIT beyond the user's maxConcurrentCalls, and dials again once a call ends", async () => {
    const account = await t.createAccount({ minutes: 100 });
    await limit(account, 2);
    expect((await dial(account, '+14155550211')).statusCode).toBe(200);
    expect((await dial(account, '+14155550212')).statusCode).toBe(200);
    const dialsBefore = t.provider.dials.length;
    const third = await dial(account, '+14155550213');
    expect(third.statusCode).toBe(429);
    expect(third.json()).toEqual({
      error: 'Too Many Requests',
      code: 'CONCURRENCY_LIMIT',
      message: expect.stringContaining('maxConcurrentCalls 2'),
    });
    expect(t.provider.dials.length).toBe(dialsBefore);
    expect(await callRows(account)).toHaveLength(2);
    // Another user's calls are not counted against this one.
    const other = await t.createAccount({ minutes: 100 });
    expect((await dial(other, '+14155550213')).statusCode).toBe(200);
    await eventually(
      async () => ((await callRows(account)).every((c) => c.status !== 'ONGOING') ? true : undefined),
      10_000,
    );
    expect((await dial(account, '+14155550213')).statusCode).toBe(200);
  });

  it('lets exactly as many of many simultaneous dials through as the free places and unreserved minutes allow', async () => {
    const numbers = (from: number) => Array.from({ length: 12 }, (_, i) => `+1415555${from + i}`);
    const byPlaces = await t.createAccount({ minutes: 1000 });
    await limit(byPlaces, 3);
    const placeCodes = (await Promise.all(numbers(3000).map((n) => dial(byPlaces, n)))).map(
      (r) => r.statusCode,
    );
    expect(placeCodes.filter((c) => c === 200)).toHaveLength(3);
    expect(placeCodes.filter((c) => c === 429)).toHaveLength(9);

    const byMinutes = await t.createAccount({ minutes: 4 });
    const minuteCodes = (await Promise.all(numbers(4000).map((n) => dial(byMinutes, n)))).map(
      (r) => r.statusCode,
    );
    expect(minuteCodes.filter((c) => c === 200)).toHaveLength(4);
    expect(minuteCodes.filter((c) => c === 402)).toHaveLength(8);
    expect(await callRows(byMinutes)).toHaveLength(4);
  });
});
