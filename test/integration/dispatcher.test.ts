import { DateTime } from 'luxon';
import { afterEach, describe, expect, it } from 'vitest';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { exportedContacts } from '../helpers/calls.js';
import { maxInWindow, maxOverlap } from '../helpers/rate.js';
import { Receiver } from '../helpers/receiver.js';
import { refusingDialsTo } from '../helpers/refusing-provider.js';

interface RecentCall {
  id: string;
  status: string;
  createdAt: string;
  phoneNumber: string;
}

const numbers = (count: number, from = 100) =>
  Array.from({ length: count }, (_, i) => ({
    phoneNumber: `+1415555${String(from + i).padStart(4, '0')}`,
    name: `Contact ${i}`,
  }));

describe(`dispatcher on ${STORE}`, () => {
  let t: TestApp | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  async function submit(app: TestApp, account: Account, body: Record<string, unknown>): Promise<string> {
    const res = await app.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: { agentId: account.agentId, userId: account.userId, ...body },
    });
    expect(res.statusCode, res.body).toBe(202);
    return res.json().batchId;
  }

  /** Sets the user's maxConcurrentCalls through the admin API. */
  async function limitPlaces(app: TestApp, account: Account, maxConcurrentCalls: number): Promise<void> {
    const patched = await app.admin('PATCH', `/admin/v1/users/${account.userId}`, { maxConcurrentCalls });
    expect(patched.json().maxConcurrentCalls).toBe(maxConcurrentCalls);
  }

  const dialSingle = (app: TestApp, account: Account, to: string) =>
    app.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: account.agentId },
    });

  async function status(app: TestApp, account: Account, batchId: string) {
    const res = await app.request({
      method: 'GET',
      url: `/api/v1/batch/check-status?batchId=${batchId}&limit=all`,
      key: account.key,
    });
    return res.json();
  }

  const until = (app: TestApp, account: Account, batchId: string, wanted: string[], timeoutMs = 20_000) =>
    eventually(async () => {
      const s = await status(app, account, batchId);
      return wanted.includes(s.status) ? s : undefined;
    }, timeoutMs);

  it('never starts more calls in a one-second window than the batch allows', async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
    const account = await t.createAccount({ minutes: 1000 });
    const batchId = await submit(t, account, { contacts: numbers(35), options: { maxCallsPerSecond: 10 } });
    const done = await until(t, account, batchId, ['completed']);
    const calls: RecentCall[] = done.recentCalls;
    expect(calls).toHaveLength(35);
    const scheduled = calls.map((c) => Date.parse(c.createdAt));
    expect(maxInWindow(scheduled, 1000)).toBeLessThanOrEqual(10);
    const ids = new Set(calls.map((c) => c.id));
    const dialed = (t?.provider.dials ?? []).filter((d) => ids.has(d.callId)).map((d) => d.at.getTime());
    expect(dialed).toHaveLength(35);
    // What the network saw, after the pacer.
    expect(maxInWindow(dialed, 1000)).toBeLessThanOrEqual(10);
    // 35 calls at 10/s take at least 3.4 s from first to last start: no burst beyond the rate. How
    // close to 3.4 s the pace holds depends on the machine (beside two CPU hogs the span reached
    // 11.2 s as timers fired late), so it is measured by `npm run bench dispatch-*` beside the
    // configured rate, not asserted here.
    const span = Math.max(...scheduled) - Math.min(...scheduled);
    expect(span).toBeGreaterThanOrEqual(3300);
  });

  it('serves the higher priority batch first when capacity is short', async () => {
    t = await startTestApp({ env: { OUTDIAL_MAX_CONCURRENT_CALLS: '2' }, overrides: { dispatchTickMs: 20 } });
    const account = await t.createAccount({ minutes: 1000 });
    const low = await submit(t, account, {
      contacts: numbers(6, 100),
      options: { priority: 1, maxCallsPerSecond: 30 },
    });
    const high = await submit(t, account, {
      contacts: numbers(6, 200),
      options: { priority: 10, maxCallsPerSecond: 30 },
    });
    await until(t, account, low, ['pending']);
    await until(t, account, high, ['pending']);
    t.runtime.startWorkers();
    const lowDone = await until(t, account, low, ['completed']);
    const highDone = await until(t, account, high, ['completed']);
    const lastHigh = Math.max(...highDone.recentCalls.map((c: RecentCall) => Date.parse(c.createdAt)));
    const firstLow = Math.min(...lowDone.recentCalls.map((c: RecentCall) => Date.parse(c.createdAt)));
    expect(lastHigh).toBeLessThan(firstLow);
  });

  it('gives capacity a rate-limited batch cannot use to the next one (work-conserving)', async () => {
    t = await startTestApp({ overrides: { dispatchTickMs: 20 } });
    const account = await t.createAccount({ minutes: 1000 });
    const slow = await submit(t, account, {
      contacts: numbers(6, 100),
      options: { priority: 10, maxCallsPerSecond: 1 },
    });
    const fast = await submit(t, account, {
      contacts: numbers(20, 300),
      options: { priority: 1, maxCallsPerSecond: 20 },
    });
    await until(t, account, slow, ['pending']);
    await until(t, account, fast, ['pending']);
    t.runtime.startWorkers();
    await until(t, account, fast, ['completed'], 10_000);
    const slowNow = await status(t, account, slow);
    expect(slowNow.status).toBe('processing');
    expect(slowNow.statistics.processed).toBeLessThan(6);
  });

  it('retries by outcome after its delay, up to maxAttempts attempts in all', async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 20 } });
    const account = await t.createAccount({ minutes: 1000 });
    const batchId = await submit(t, account, {
      contacts: [
        { phoneNumber: '+14155550002', name: 'Never answers' },
        { phoneNumber: '+14155550001', name: 'Always busy' },
        { phoneNumber: '+14155550006', name: 'Busy once' },
        { phoneNumber: '+14155550123', name: 'Answers' },
      ],
      options: {
        maxCallsPerSecond: 30,
        retryStrategy: { maxAttempts: 3, noAnswerDelay: 600, busyDelay: 250 },
      },
    });
    const done = await until(t, account, batchId, ['completed']);
    const byNumber = (n: string) =>
      (done.recentCalls as RecentCall[])
        .filter((c) => c.phoneNumber === n)
        .sort((a, b) => Date.parse(a.createdAt) - Date.parse(b.createdAt));
    expect(byNumber('+14155550002').map((c) => c.status)).toEqual(['NO_ANSWER', 'NO_ANSWER', 'NO_ANSWER']);
    expect(byNumber('+14155550001').map((c) => c.status)).toEqual(['BUSY', 'BUSY', 'BUSY']);
    expect(byNumber('+14155550006').map((c) => c.status)).toEqual(['BUSY', 'COMPLETED']);
    expect(byNumber('+14155550123').map((c) => c.status)).toEqual(['COMPLETED']);
    const gaps = (calls: RecentCall[]) =>
      calls.slice(1).map((c, i) => Date.parse(c.createdAt) - Date.parse(calls[i]?.createdAt ?? ''));
    // Each retry waits the delay after the previous attempt ended (30 ms of ringing).
    for (const gap of gaps(byNumber('+14155550002'))) expect(gap).toBeGreaterThanOrEqual(600);
    for (const gap of gaps(byNumber('+14155550001'))) expect(gap).toBeGreaterThanOrEqual(250);
    expect(done.statistics).toMatchObject({ total: 4, processed: 4, succeeded: 2, failed: 2 });
  });

  it('waits for a scheduled start, read in the batch time zone when the time has no offset', async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 20 } });
    const account = await t.createAccount({ minutes: 1000 });
    const start = DateTime.now().setZone('America/New_York').plus({ seconds: 2 }).startOf('second');
    const local = start.toFormat("yyyy-MM-dd'T'HH:mm:ss");
    const batchId = await submit(t, account, {
      contacts: numbers(3),
      options: { scheduledStartTime: local, timezone: 'America/New_York', maxCallsPerSecond: 30 },
    });
    const scheduled = await until(t, account, batchId, ['scheduled']);
    expect(scheduled.timestamps.scheduledStartTime).toBe(
      start.toUTC().toISO({ suppressMilliseconds: false }),
    );
    expect(scheduled.recentCalls).toHaveLength(0);
    const done = await until(t, account, batchId, ['completed']);
    for (const call of done.recentCalls as RecentCall[])
      expect(Date.parse(call.createdAt)).toBeGreaterThanOrEqual(start.toMillis());
  });

  it('records a batch dial the provider refuses as FAILED, never answered, free and ours: the contact keeps its attempt and is dialed again', async () => {
    const refused = '+14155550199';
    t = await startTestApp({
      workers: true,
      overrides: { dispatchTickMs: 20 },
      env: { OUTDIAL_SERVICE_RETRY_MS: '100' },
      // A trunk that refuses one number twice: the provider throws after the dispatcher recorded the call.
      wrapProvider: refusingDialsTo(refused, 2),
    });
    const account = await t.createAccount({ minutes: 10 });
    const batchId = await submit(t, account, {
      contacts: [
        { phoneNumber: refused, name: 'Refused' },
        { phoneNumber: '+14155550002', name: 'Never answers' },
      ],
      options: {
        maxCallsPerSecond: 30,
        retryStrategy: { maxAttempts: 2, noAnswerDelay: 100, busyDelay: 100 },
      },
    });
    await until(t, account, batchId, ['completed']);
    const rows = await t.runtime.database.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .select([
        'calls.status',
        'calls.error',
        'calls.duration',
        'calls.answered_at',
        'calls.minutes_charged',
        'calls.failure_source',
        'calls.attempt',
      ])
      .where('calls.user_id', '=', account.userId)
      .where('contacts.phone_number', '=', refused)
      .orderBy('calls.created_at')
      .execute();
    const failedDial = {
      status: 'FAILED',
      error: 'The voice provider could not place the call',
      duration: 0,
      answered_at: null,
      minutes_charged: 0,
      failure_source: 'service',
      attempt: 1,
    };
    // Two refusals, each ours: the contact kept its attempt, and the third dial is attempt 1 too.
    expect(rows.slice(0, 2)).toEqual([failedDial, failedDial]);
    expect(rows).toHaveLength(3);
    expect(rows[2]).toMatchObject({ status: 'COMPLETED', failure_source: null, attempt: 1 });
    const [contact] = (await exportedContacts(t, account, batchId)).filter((c) => c.phoneNumber === refused);
    expect(contact).toMatchObject({ state: 'done', finalStatus: 'COMPLETED', attempts: '1' });
  });

  it('fails the batch with INSUFFICIENT_CREDITS when the minutes run out, and dials no one else', async () => {
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_ESTIMATED_MINUTES_PER_CALL: '0.1' },
      overrides: { dispatchTickMs: 20 },
    });
    const account = await t.createAccount({ minutes: 2 });
    const batchId = await submit(t, account, { contacts: numbers(10), options: { maxCallsPerSecond: 2 } });
    const failed = await until(t, account, batchId, ['failed']);
    expect(failed.error).toEqual({ code: 'INSUFFICIENT_CREDITS', message: expect.any(String) });
    const dialedBefore = failed.recentCalls.length;
    expect(dialedBefore).toBeGreaterThanOrEqual(2);
    expect(dialedBefore).toBeLessThan(10);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const later = await status(t, account, batchId);
    expect(later.recentCalls).toHaveLength(dialedBefore);
    expect(later.statistics.processed + later.statistics.cancelled).toBe(10);
    const user = await t.admin('GET', `/admin/v1/users/${account.userId}`);
    expect(user.json().availableMinutes).toBeLessThanOrEqual(0);
  });

  /** Every call of the user, as intervals from its recorded start to its end (all ended). */
  async function callsOf(app: TestApp, userId: string) {
    const rows = await app.runtime.database.db
      .selectFrom('calls')
      .select(['status', 'attempt', 'created_at', 'ended_at', 'batch_id'])
      .where('user_id', '=', userId)
      .execute();
    return rows.map((row) => ({
      ...row,
      start: row.created_at.getTime(),
      end: row.ended_at?.getTime() ?? Number.POSITIVE_INFINITY,
    }));
  }

  it('completes a batch whose contacts were all dialed when the minutes run out meanwhile: batch.completed, never batch.failed', async () => {
    const receiver = await Receiver.start();
    try {
      t = await startTestApp({
        workers: true,
        env: { OUTDIAL_SIM_TALK_MS: '1500', OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true' },
        overrides: { dispatchTickMs: 20 },
      });
      const app = t;
      const account = await app.createAccount({ minutes: 2 });
      const batchId = await submit(app, account, {
        contacts: numbers(2),
        options: {
          maxCallsPerSecond: 10,
          webhooks: { onBatchComplete: receiver.url('/done'), onBatchFailed: receiver.url('/failed') },
        },
      });
      // Both contacts dialed, their calls still up.
      await eventually(async () => {
        const s = await status(app, account, batchId);
        return s.recentCalls.length === 2 && s.recentCalls.every((c: RecentCall) => c.status === 'ONGOING')
          ? s
          : undefined;
      }, 10_000);
      // The balance is used up elsewhere meanwhile (here taken back by the admin).
      const taken = await app.admin('POST', `/admin/v1/users/${account.userId}/credits`, { minutes: -2 });
      expect(taken.json()).toEqual({ availableMinutes: 0 });
      const done = await until(app, account, batchId, ['completed', 'failed'], 10_000);
      expect(done.status).toBe('completed');
      expect(done.error).toBeNull();
      expect(done.statistics).toMatchObject({
        total: 2,
        processed: 2,
        succeeded: 2,
        failed: 0,
        cancelled: 0,
      });
      await eventually(async () => (receiver.on('/done').length === 1 ? true : undefined), 10_000);
      expect(JSON.parse(receiver.on('/done')[0]?.body ?? '{}')).toMatchObject({
        event: 'batch.completed',
        batchId,
      });
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.on('/failed')).toEqual([]);
      // Both answered calls were charged, as a carrier would.
      expect((await app.admin('GET', `/admin/v1/users/${account.userId}`)).json().availableMinutes).toBe(-2);
    } finally {
      await receiver.close();
    }
  });

  it('the issue as reported: single calls cannot spend the minutes held by a batch that has dialed everyone, and the batch completes', async () => {
    const receiver = await Receiver.start();
    try {
      t = await startTestApp({
        workers: true,
        env: { OUTDIAL_SIM_TALK_MS: '2000', OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true' },
        overrides: { dispatchTickMs: 20 },
      });
      const app = t;
      const account = await app.createAccount({ minutes: 2 });
      const batchId = await submit(app, account, {
        contacts: numbers(2),
        options: {
          maxCallsPerSecond: 10,
          webhooks: { onBatchComplete: receiver.url('/done'), onBatchFailed: receiver.url('/failed') },
        },
      });
      await eventually(async () => {
        const s = await status(app, account, batchId);
        return s.recentCalls.length === 2 && s.recentCalls.every((c: RecentCall) => c.status === 'ONGOING')
          ? s
          : undefined;
      }, 10_000);
      // Voicemail (…0004) ends in a quarter of a conversation and is charged: before the batch's calls end.
      for (const to of ['+14155550004', '+14155550104']) {
        const single = await app.request({
          method: 'POST',
          url: '/api/v1/call/dial',
          key: account.key,
          payload: { to, agentConfigId: account.agentId },
        });
        expect(single.statusCode, single.body).toBe(402);
      }
      const done = await until(app, account, batchId, ['completed', 'failed'], 10_000);
      expect(done.status).toBe('completed');
      await eventually(async () => (receiver.on('/done').length === 1 ? true : undefined), 10_000);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(receiver.on('/failed')).toEqual([]);
      expect((await app.admin('GET', `/admin/v1/users/${account.userId}`)).json().availableMinutes).toBe(0);
    } finally {
      await receiver.close();
    }
  });

  it("keeps a user's batch and single calls within the user's maxConcurrentCalls: the batch waits for a free place, no attempt charged", async () => {
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_SIM_TALK_MS: '300' },
      overrides: { dispatchTickMs: 20 },
    });
    const account = await t.createAccount({ minutes: 1000 });
    await limitPlaces(t, account, 2);
    // A single call takes one of the two places first.
    const single = await dialSingle(t, account, '+14155559900');
    expect(single.statusCode, single.body).toBe(200);
    const batchId = await submit(t, account, { contacts: numbers(6), options: { maxCallsPerSecond: 30 } });
    const done = await until(t, account, batchId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    expect(done.statistics).toMatchObject({ total: 6, processed: 6, succeeded: 6 });
    const calls = await callsOf(t, account.userId);
    expect(calls).toHaveLength(7);
    // Waiting cost no attempt: each contact was called once, and answered.
    for (const call of calls) expect(call).toMatchObject({ status: 'COMPLETED', attempt: 1 });
    expect(maxOverlap(calls)).toBeLessThanOrEqual(2);
  });

  it("leaves one of the user's places free for single calls: a campaign that would fill every place takes all but one, and a single dial succeeds while it runs", async () => {
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_SIM_RING_MS: '30', OUTDIAL_SIM_TALK_MS: '1500' },
      overrides: { dispatchTickMs: 20 },
    });
    const account = await t.createAccount({ minutes: 1000 });
    await limitPlaces(t, account, 3);
    const batchId = await submit(t, account, { contacts: numbers(8), options: { maxCallsPerSecond: 30 } });
    // The campaign fills the two places it may take, and keeps them full.
    await eventually(async () => {
      const up = (await callsOf(t as TestApp, account.userId)).filter((c) => c.status === 'ONGOING');
      return up.length === 2 ? true : undefined;
    });
    const single = await dialSingle(t, account, '+14155559901');
    expect(single.statusCode, single.body).toBe(200);
    const during = await status(t, account, batchId);
    expect(during.status).toBe('processing');
    const done = await until(t, account, batchId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const calls = await callsOf(t, account.userId);
    expect(calls).toHaveLength(9);
    expect(maxOverlap(calls.filter((c) => c.batch_id === batchId))).toBeLessThanOrEqual(2);
    expect(maxOverlap(calls)).toBeLessThanOrEqual(3);
  });

  it('keeps a minute in reserve for each call in progress: a batch waits for unreserved minutes instead of overspending', async () => {
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_SIM_RING_MS: '400', OUTDIAL_ESTIMATED_MINUTES_PER_CALL: '0.1' },
      overrides: { dispatchTickMs: 20 },
    });
    const account = await t.createAccount({ minutes: 2 });
    // Nobody answers: the calls cost nothing, so the batch goes on two at a time to its end.
    const contacts = Array.from({ length: 5 }, (_, i) => ({
      phoneNumber: `+1415${String(300 + i)}0002`,
      name: `Unanswered ${i}`,
    }));
    const batchId = await submit(t, account, {
      contacts,
      options: { maxCallsPerSecond: 30, retryStrategy: { maxAttempts: 1 } },
    });
    const done = await until(t, account, batchId, ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const calls = await callsOf(t, account.userId);
    expect(calls.map((c) => c.status)).toEqual(Array(5).fill('NO_ANSWER'));
    expect(maxOverlap(calls)).toBeLessThanOrEqual(2);
    expect((await t.admin('GET', `/admin/v1/users/${account.userId}`)).json().availableMinutes).toBe(2);
  });
});
