import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv as parseRecords } from '../../src/cli/csv.js';
import { type Account, eventually, startTestApp, type TestApp, TestClock } from '../helpers/app.js';

/** The export read back as a spreadsheet would. */
const parseCsv = (text: string): string[][] => parseRecords(text).map((record) => record.cells);

/**
 * Calling windows (issue 15, item 1), on the storage path of this run (STORE). The clock is the
 * test's: it starts on Wednesday 2030-03-06 15:00 UTC, which is 10:00 in New York (EST), 07:00 in
 * Los Angeles (PST) and 00:00 on Thursday in Tokyo.
 */
const START = Date.parse('2030-03-06T15:00:00Z');

describe('POST /api/v1/batch with options.callingWindow', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  const clock = new TestClock();
  clock.advance(START - Date.now());

  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { clock, dispatchTickMs: 50 } });
    alice = await t.createAccount({ minutes: 1000 });
    bob = await t.createAccount({ minutes: 1000 });
  });
  afterAll(() => t.close());

  const post = (body: Record<string, unknown>, account = alice) =>
    t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: { agentId: account.agentId, userId: account.userId, ...body },
    });
  const batchCount = async (userId: string) =>
    (await t.runtime.database.db.selectFrom('batches').select('id').where('user_id', '=', userId).execute())
      .length;
  const status = async (batchId: string, account = alice) =>
    (
      await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}`,
        key: account.key,
      })
    ).json<{ status: string; statistics: Record<string, number>; throttle: unknown }>();
  const exportRows = async (batchId: string) => {
    const res = await t.request({ method: 'GET', url: `/api/v1/batch/${batchId}/export`, key: alice.key });
    const [header = [], ...rows] = parseCsv(res.body);
    return rows.map((cells) => Object.fromEntries(header.map((name, i) => [name, cells[i] ?? ''])));
  };

  describe('bad input is a 400 naming the field, and nothing is stored', () => {
    const one = [{ phoneNumber: '+14155550123' }];
    it.each([
      [
        { contacts: one, options: { callingWindow: { start: '21:00', end: '08:00' } } },
        'options.callingWindow.end',
      ],
      [
        { contacts: one, options: { callingWindow: { start: '09:00', end: '09:00' } } },
        'options.callingWindow.end',
      ],
      [
        { contacts: one, options: { callingWindow: { start: '8:00', end: '21:00' } } },
        'options.callingWindow.start',
      ],
      [
        { contacts: one, options: { callingWindow: { start: '08:00', end: '21:61' } } },
        'options.callingWindow.end',
      ],
      [
        { contacts: one, options: { callingWindow: { start: '24:00', end: '24:00' } } },
        'options.callingWindow.start',
      ],
      [{ contacts: one, options: { callingWindow: { end: '21:00' } } }, 'options.callingWindow.start'],
      [
        { contacts: one, options: { callingWindow: { start: '08:00', end: '21:00', days: ['monday'] } } },
        'options.callingWindow.days.0',
      ],
      [
        { contacts: one, options: { callingWindow: { start: '08:00', end: '21:00', days: [] } } },
        'options.callingWindow.days',
      ],
      [
        { contacts: one, options: { callingWindow: { start: '08:00', end: '21:00', tz: 'UTC' } } },
        'options.callingWindow.tz',
      ],
      [{ contacts: one, options: { callingWindow: '08:00-21:00' } }, 'options.callingWindow'],
      [
        {
          contacts: [
            { phoneNumber: '+14155550123' },
            { phoneNumber: '+14155550124', timezone: 'Mars/Olympus' },
          ],
        },
        'contacts.1.timezone',
      ],
      [{ contacts: [{ phoneNumber: '+14155550123', timezone: 'local' }] }, 'contacts.0.timezone'],
      [{ contacts: [{ phoneNumber: '+14155550123', timezone: '' }] }, 'contacts.0.timezone'],
      [{ contacts: [{ phoneNumber: '+14155550123', timezone: 5 }] }, 'contacts.0.timezone'],
    ])('refuses %j naming %s', async (body, field) => {
      const before = await batchCount(alice.userId);
      const res = await post(body);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ error: 'Validation failed', code: 'INVALID_REQUEST' });
      expect(res.json().details.fieldErrors[field], JSON.stringify(res.json())).toBeDefined();
      expect(await batchCount(alice.userId)).toBe(before);
    });
  });

  it('stores the window (days in week order) and answers check-status with waitingForWindow', async () => {
    const res = await post({
      contacts: [{ phoneNumber: '+14155550123', timezone: 'America/Chicago' }],
      options: {
        callingWindow: { start: '09:00', end: '17:30', days: ['fri', 'mon', 'wed'] },
        scheduledStartTime: '2030-04-01T09:00:00Z',
      },
    });
    expect(res.statusCode).toBe(202);
    const { batchId } = res.json<{ batchId: string }>();
    const row = await t.runtime.database.db
      .selectFrom('batches')
      .select('calling_window')
      .where('id', '=', batchId)
      .executeTakeFirstOrThrow();
    expect(row.calling_window).toEqual({ start: '09:00', end: '17:30', days: ['mon', 'wed', 'fri'] });
    await eventually(async () => ((await status(batchId)).status === 'scheduled' ? true : undefined));
    expect((await status(batchId)).statistics.waitingForWindow).toBe(0);
    // Another user's batch stays a 404, window or not.
    const other = await t.request({
      method: 'GET',
      url: `/api/v1/batch/check-status?batchId=${batchId}`,
      key: bob.key,
    });
    expect(other.statusCode).toBe(404);
  });

  it('a batch without a window stores none and has no window columns filled in its export', async () => {
    const res = await post({
      contacts: [{ phoneNumber: '+14155559301' }],
      options: { maxCallsPerSecond: 30 },
    });
    const { batchId } = res.json<{ batchId: string }>();
    const row = await t.runtime.database.db
      .selectFrom('batches')
      .select('calling_window')
      .where('id', '=', batchId)
      .executeTakeFirstOrThrow();
    expect(row.calling_window).toBeNull();
    const rows = await eventually(async () => {
      const rows = await exportRows(batchId);
      return rows[0]?.state === 'done' ? rows : undefined;
    }, 10_000);
    expect(rows[0]).toMatchObject({ timezone: '', waitingForWindow: '', windowOpensAt: '' });
    expect((await status(batchId)).statistics.waitingForWindow).toBe(0);
  });

  it('dials contacts whose window is open, holds the others (counted and exported) until their opening, retries included', async () => {
    const res = await post({
      contacts: [
        { phoneNumber: '+12125559401', name: 'New York, open' },
        { phoneNumber: '+14155559402', name: 'Los Angeles, opens 16:00 UTC' },
        { phoneNumber: '+12125559403', name: 'Tokyo by its own zone', timezone: 'Asia/Tokyo' },
        // Simulator suffix 0007: no answer on the first attempt, then answered.
        { phoneNumber: '+14155550007', name: 'Los Angeles, retried' },
      ],
      options: {
        maxCallsPerSecond: 30,
        callingWindow: { start: '08:00', end: '21:00' },
        retryStrategy: { maxAttempts: 2, noAnswerDelay: 60_000 },
      },
    });
    expect(res.statusCode).toBe(202);
    const { batchId } = res.json<{ batchId: string }>();
    const byName = async () => new Map((await exportRows(batchId)).map((row) => [row.name, row]));

    // 10:00 in New York: only that contact is dialed; three wait for their window.
    const waitingNow = await eventually(async () => {
      const s = await status(batchId);
      return s.statistics.processed === 1 && s.statistics.waitingForWindow === 3 ? s : undefined;
    }, 10_000);
    // The status says why the campaign is not dialing (issue 24 §5), and when it will.
    expect(waitingNow.throttle).toEqual({
      reason: 'calling-window',
      waitingForWindow: 3,
      nextOpening: '2030-03-06T16:00:00.000Z',
    });
    let rows = await byName();
    expect(rows.get('New York, open')).toMatchObject({
      state: 'done',
      finalStatus: 'COMPLETED',
      timezone: 'America/New_York',
      waitingForWindow: 'false',
    });
    expect(rows.get('Los Angeles, opens 16:00 UTC')).toMatchObject({
      state: 'queued',
      attempts: '0',
      timezone: 'America/Los_Angeles',
      waitingForWindow: 'true',
      windowOpensAt: '2030-03-06T16:00:00.000Z',
    });
    expect(rows.get('Tokyo by its own zone')).toMatchObject({
      state: 'queued',
      timezone: 'Asia/Tokyo',
      waitingForWindow: 'true',
      windowOpensAt: '2030-03-06T23:00:00.000Z', // 08:00 Thursday in Tokyo
    });
    const held = await t.runtime.database.db
      .selectFrom('calls')
      .select('phone_number')
      .where('batch_id', '=', batchId)
      .execute();
    expect(held.map((c) => c.phone_number)).toEqual(['+12125559401']);

    // 08:00 in Los Angeles: both of its contacts are dialed; the retried one does not answer.
    clock.advance(Date.parse('2030-03-06T16:00:30Z') - clock.now().getTime());
    await eventually(async () => {
      const s = await status(batchId);
      return s.statistics.processed === 2 && s.statistics.waitingForWindow === 1 ? s : undefined;
    }, 10_000);
    rows = await byName();
    expect(rows.get('Los Angeles, opens 16:00 UTC')).toMatchObject({
      state: 'done',
      finalStatus: 'COMPLETED',
    });
    expect(rows.get('Los Angeles, retried')).toMatchObject({ state: 'queued', attempts: '1' });

    // 21:30 in Los Angeles: the retry is due but its window has closed; it waits for 08:00.
    clock.advance(Date.parse('2030-03-07T05:30:00Z') - clock.now().getTime());
    await eventually(async () => {
      const current = await byName();
      return current.get('Los Angeles, retried')?.waitingForWindow === 'true' &&
        current.get('Tokyo by its own zone')?.state === 'done'
        ? current
        : undefined;
    }, 10_000);
    rows = await byName();
    expect(rows.get('Los Angeles, retried')).toMatchObject({
      state: 'queued',
      attempts: '1',
      windowOpensAt: '2030-03-07T16:00:00.000Z',
    });
    // Tokyo's window opened at 23:00 UTC: that contact was dialed meanwhile.
    expect(rows.get('Tokyo by its own zone')).toMatchObject({ state: 'done', finalStatus: 'COMPLETED' });
    // check-status answers from a snapshot up to 250 ms old: it catches up with the rows.
    const counted = await eventually(async () => {
      const s = await status(batchId);
      return s.statistics.processed === 3 ? s.statistics : undefined;
    }, 10_000);
    expect(counted).toMatchObject({ processed: 3, waitingForWindow: 1, pending: 1 });

    // Thursday 08:00 in Los Angeles: the retry is dialed and answered; the batch completes.
    clock.advance(Date.parse('2030-03-07T16:00:10Z') - clock.now().getTime());
    const done = await eventually(async () => {
      const s = await status(batchId);
      return s.status === 'completed' ? s : undefined;
    }, 10_000);
    expect(done.statistics).toMatchObject({
      total: 4,
      processed: 4,
      succeeded: 4,
      waitingForWindow: 0,
      pending: 0,
    });
    expect((await byName()).get('Los Angeles, retried')).toMatchObject({
      state: 'done',
      finalStatus: 'COMPLETED',
      attempts: '2',
      waitingForWindow: 'false',
      windowOpensAt: '',
    });
  }, 40_000);
});
