import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { submitBatch } from '../helpers/calls.js';

/**
 * Pause and resume (issue 15 item 5), and the lifecycle's final contact states seen through the
 * API: suppressed numbers and contacts without consent are never dialed, and a batch completes
 * when every contact is final.
 */
describe('batch pause, resume and final contact states', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    // Calls that stay up for a while, so a pause can be seen to let them finish.
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_SIM_TALK_MS: '1200' },
      overrides: { dispatchTickMs: 50 },
    });
    alice = await t.createAccount({ minutes: 10_000 });
    bob = await t.createAccount({ minutes: 10_000 });
  });
  afterAll(() => t.close());

  const numbers = (n: number, from: number) =>
    Array.from({ length: n }, (_, i) => ({ phoneNumber: `+1415555${from + i}`, name: `N${i}` }));
  const create = (account: Account, body: Record<string, unknown>) => submitBatch(t, account, body);
  const status = async (batchId: string) =>
    (
      await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}&limit=all`,
        key: alice.key,
      })
    ).json();
  const post = (action: string, batchId: string, key: string | undefined = alice.key) =>
    t.request({ method: 'POST', url: `/api/v1/batch/${action}?batchId=${batchId}`, ...(key ? { key } : {}) });
  const events = async (batchId: string) =>
    (
      await t.request({
        method: 'GET',
        url: `/api/v1/webhooks/deliveries?batchId=${batchId}`,
        key: alice.key,
      })
    )
      .json()
      .map((d: { event: string; url: string }) => `${d.event} ${d.url}`)
      .sort();

  it('pauses a running batch: no new call starts, calls up finish; resume goes on to the end', async () => {
    const batchId = await create(alice, {
      contacts: numbers(6, 7100),
      options: {
        maxCallsPerSecond: 2,
        retryStrategy: { maxAttempts: 1 },
        webhooks: { onBatchEvent: 'https://hooks.example.com/events' },
      },
    });
    await eventually(async () => ((await status(batchId)).recentCalls.length > 0 ? true : undefined), 15_000);

    const paused = await post('pause', batchId);
    expect(paused.statusCode, paused.body).toBe(200);
    expect(paused.json()).toMatchObject({
      success: true,
      batchId,
      status: 'paused',
      message: expect.any(String),
    });
    const atPause = await status(batchId);
    expect(atPause.status).toBe('paused');
    const started = atPause.recentCalls.length;
    expect(started).toBeLessThan(6);

    // The calls that were up finish and are recorded; nothing new starts.
    const settled = await eventually(async () => {
      const s = await status(batchId);
      return s.recentCalls.every((c: { status: string }) => c.status !== 'ONGOING') ? s : undefined;
    }, 15_000);
    await new Promise((resolve) => setTimeout(resolve, 800));
    const later = await status(batchId);
    expect(later.status).toBe('paused');
    expect(later.recentCalls).toHaveLength(settled.recentCalls.length);
    expect(later.recentCalls.length).toBeLessThanOrEqual(started + 1);
    expect(later.statistics.processed).toBe(later.recentCalls.length);

    // Pausing again, or resuming as another user, is refused.
    expect((await post('pause', batchId)).json()).toMatchObject({
      error: 'Bad Request',
      code: 'BATCH_NOT_PAUSABLE',
    });
    expect((await post('resume', batchId, bob.key)).statusCode).toBe(404);

    const resumed = await post('resume', batchId);
    expect(resumed.statusCode, resumed.body).toBe(200);
    expect(resumed.json()).toMatchObject({ success: true, batchId, status: 'processing' });
    const done = await eventually(async () => {
      const s = await status(batchId);
      return s.status === 'completed' ? s : undefined;
    }, 20_000);
    expect(done.statistics).toMatchObject({ total: 6, processed: 6 });
    expect(done.recentCalls).toHaveLength(6);

    // Finished: neither pause nor resume.
    const finished = await post('pause', batchId);
    expect(finished.statusCode).toBe(400);
    expect(finished.json()).toMatchObject({ error: 'Bad Request', code: 'BATCH_NOT_PAUSABLE' });
    expect((await post('resume', batchId)).json()).toMatchObject({ code: 'BATCH_NOT_PAUSED' });

    expect(await events(batchId)).toEqual([
      'batch.paused https://hooks.example.com/events',
      'batch.resumed https://hooks.example.com/events',
    ]);
  });

  it('cancels a paused batch; resumes a paused scheduled batch to scheduled; hooks fall back to onBatchComplete', async () => {
    const start = new Date(Date.now() + 3_600_000).toISOString();
    const batchId = await create(alice, {
      contacts: numbers(3, 7200),
      options: { scheduledStartTime: start, webhooks: { onBatchComplete: 'https://hooks.example.com/done' } },
    });
    await eventually(async () => ((await status(batchId)).status === 'scheduled' ? true : undefined));
    expect((await post('pause', batchId)).json()).toMatchObject({ status: 'paused' });
    expect((await post('resume', batchId)).json()).toMatchObject({ status: 'scheduled' });
    expect((await post('pause', batchId)).json()).toMatchObject({ status: 'paused' });

    const cancelled = await post('cancel', batchId);
    expect(cancelled.statusCode).toBe(200);
    expect(cancelled.json()).toMatchObject({ status: 'cancelled', cancelledJobs: 3 });
    expect((await status(batchId)).status).toBe('cancelled');
    expect((await post('resume', batchId)).json()).toMatchObject({ code: 'BATCH_NOT_PAUSED' });
    expect(await events(batchId)).toEqual([
      'batch.cancelled https://hooks.example.com/done',
      'batch.paused https://hooks.example.com/done',
      'batch.paused https://hooks.example.com/done',
      'batch.resumed https://hooks.example.com/done',
    ]);
  });

  it('answers pause and resume without a key 401, with a bad or unknown id 400/404, and hides other users’ batches', async () => {
    const batchId = await create(alice, {
      contacts: numbers(1, 7300),
      options: { scheduledStartTime: new Date(Date.now() + 3_600_000).toISOString() },
    });
    await eventually(async () => ((await status(batchId)).status === 'scheduled' ? true : undefined));
    for (const action of ['pause', 'resume']) {
      expect((await post(action, batchId, '')).statusCode).toBe(401);
      expect((await post(action, batchId, bob.key)).statusCode).toBe(404);
      expect((await post(action, 'bat_unknown')).statusCode).toBe(404);
      expect(
        (await t.request({ method: 'POST', url: `/api/v1/batch/${action}`, key: alice.key })).statusCode,
      ).toBe(400);
    }
    // Nothing changed for alice's batch.
    expect((await status(batchId)).status).toBe('scheduled');
  });

  it('never dials a suppressed number nor, under requireConsent, a contact without consent', async () => {
    const added = await t.request({
      method: 'POST',
      url: '/api/v1/suppressions',
      key: alice.key,
      payload: { phoneNumber: '+14155557401', reason: 'asked by letter' },
    });
    expect(added.statusCode, added.body).toBe(201);
    const batchId = await create(alice, {
      contacts: [
        { phoneNumber: '+14155557400', consent: { source: 'web-form', obtainedAt: '2025-01-02T10:00:00Z' } },
        { phoneNumber: '+14155557401', consent: { source: 'web-form', obtainedAt: '2025-01-02T10:00:00Z' } },
        { phoneNumber: '+14155557402' },
      ],
      options: { requireConsent: true, maxCallsPerSecond: 10, retryStrategy: { maxAttempts: 1 } },
    });
    const done = await eventually(async () => {
      const s = await status(batchId);
      return s.status === 'completed' ? s : undefined;
    }, 15_000);
    expect(done.recentCalls.map((c: { phoneNumber: string }) => c.phoneNumber)).toEqual(['+14155557400']);
    expect(done.statistics).toMatchObject({ total: 3, processed: 1, suppressed: 1 });

    // Every contact final at ingest (all without consent): the batch completes without a call.
    const none = await create(alice, {
      contacts: numbers(2, 7500),
      options: { requireConsent: true },
    });
    const skipped = await eventually(async () => {
      const s = await status(none);
      return s.status === 'completed' ? s : undefined;
    });
    expect(skipped.recentCalls).toEqual([]);
  });
});
