import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { submitBatch } from '../helpers/calls.js';
import { DashboardClient } from '../helpers/dashboard-client.js';

/** check-status says why a campaign is slow, and its time left counts the retries waiting (issue 24 §5). */
describe('batch status: throttle, effective rate and time left', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Answered calls talk 3 s, so a small cap stays full while the checks below read it.
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_SIM_RING_MS: '30', OUTDIAL_SIM_TALK_MS: '3000' },
      overrides: { dispatchTickMs: 20 },
    });
  });
  afterAll(() => t.close());

  const status = async (account: Account, batchId: string) =>
    (
      await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}`,
        key: account.key,
      })
    ).json();
  const cancel = (account: Account, batchId: string) =>
    t.request({ method: 'POST', url: `/api/v1/batch/cancel?batchId=${batchId}`, key: account.key });

  it("names the user's concurrent-call limit when it holds a campaign below its rate, with the limit and the calls in progress", async () => {
    const account = await t.createAccount({ minutes: 1000 });
    const patched = await t.admin('PATCH', `/admin/v1/users/${account.userId}`, { maxConcurrentCalls: 3 });
    expect(patched.statusCode).toBe(200);
    const contacts = Array.from({ length: 20 }, (_, i) => ({ phoneNumber: `+1415555${6100 + i}` }));
    const batchId = await submitBatch(t, account, { contacts, options: { maxCallsPerSecond: 10 } });
    const held = await eventually(async () => {
      const s = await status(account, batchId);
      return s.throttle?.reason === 'user-concurrency' ? s : undefined;
    }, 10_000);
    expect(held.status).toBe('processing');
    expect(held.throttle).toEqual({
      reason: 'user-concurrency',
      limit: 3,
      inProgress: 2,
      keptForSingleCalls: 1,
    });
    // 2 calls of 3 s at a time: well below the 10 calls/s asked for.
    expect(held.performance.effectiveCallsPerSecond).toBeLessThan(10);
    // The campaign's page says it too, in words, with the rate now.
    const browser = new DashboardClient(t);
    await browser.signIn(account.key);
    const page = await browser.get(`/dashboard/batches/${batchId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-reason="user-concurrency"');
    expect(page.body).toMatch(
      /Your concurrent-call limit: \d of 3 calls in progress \(1 kept for single calls\)/,
    );
    expect(page.body).toMatch(
      /<dt>Calls \/ s now<\/dt><dd data-field="effectiveCallsPerSecond">[\d.]+<\/dd>/,
    );
    expect((await cancel(account, batchId)).statusCode).toBe(200);
    const cancelled = await eventually(async () => {
      const s = await status(account, batchId);
      return s.status === 'cancelled' ? s : undefined;
    });
    expect(cancelled.throttle).toBeNull();
  });

  it('has no throttle while the campaign dials at its rate', async () => {
    const account = await t.createAccount({ minutes: 1000 });
    // Nobody answers (0002) and one attempt only: short calls, far from the default 200 places.
    const contacts = Array.from({ length: 4 }, (_, i) => ({ phoneNumber: `+1415${620 + i}0002` }));
    const batchId = await submitBatch(t, account, {
      contacts,
      options: { maxCallsPerSecond: 10, retryStrategy: { maxAttempts: 1 } },
    });
    const seen = await eventually(async () => {
      const s = await status(account, batchId);
      return s.status === 'processing' || s.status === 'completed' ? s : undefined;
    });
    expect(seen.throttle).toBeNull();
  });

  it('counts the retries waiting in the time left: an hour while every contact waits on a one-hour retry, not the rate alone', async () => {
    const account = await t.createAccount({ minutes: 1000 });
    const contacts = Array.from({ length: 3 }, (_, i) => ({ phoneNumber: `+1415${630 + i}0002` }));
    const batchId = await submitBatch(t, account, {
      contacts,
      options: { maxCallsPerSecond: 10, retryStrategy: { maxAttempts: 2, noAnswerDelay: 3_600_000 } },
    });
    // Every first attempt ended unanswered; each contact now waits an hour for its second.
    // The status read once it shows all three calls ended (its snapshot may be 250 ms old).
    const waiting = await eventually(async () => {
      const s = await status(account, batchId);
      const calls = s.recentCalls as Array<{ status: string }>;
      return calls.length === 3 && calls.every((call) => call.status === 'NO_ANSWER') ? s : undefined;
    }, 10_000);
    expect(waiting.status).toBe('processing');
    expect(waiting.statistics).toMatchObject({ total: 3, processed: 0, pending: 3 });
    // At least until the last retry is due (an hour less the seconds this test took), then its call.
    expect(waiting.performance.estimatedTimeRemaining).toBeGreaterThan(3_500_000);
    // Waiting for its own retries is the batch's schedule, not a throttle.
    expect(waiting.throttle).toBeNull();
    expect((await cancel(account, batchId)).statusCode).toBe(200);
  });
});
