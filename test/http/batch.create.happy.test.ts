import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

describe('POST /api/v1/batch: happy path', () => {
  let t: TestApp;
  let account: Account;

  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
    account = await t.createAccount({ minutes: 1000 });
  });
  afterAll(() => t.close());

  const create = (body: Record<string, unknown>) =>
    t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: { agentId: account.agentId, userId: account.userId, ...body },
    });

  const statusOf = async (batchId: string) =>
    (
      await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}&limit=all`,
        key: account.key,
      })
    ).json();

  it('accepts a batch with 202, ingests it and dials every distinct number to a final state', async () => {
    const contacts = [
      { phoneNumber: '+14155550123', name: 'Jordan' },
      { phoneNumber: '+14155550124', name: 'Sam', email: 'sam@example.com', metadata: { plan: 'pro' } },
      { phoneNumber: '+14155550001', name: 'Busy Bee' },
      { phoneNumber: '+14155550123', name: 'Jordan again' },
    ];
    const res = await create({
      contacts,
      options: {
        maxCallsPerSecond: 20,
        retryStrategy: { maxAttempts: 2, busyDelay: 100, noAnswerDelay: 100 },
        tags: ['q4'],
      },
    });
    expect(res.statusCode).toBe(202);
    const body = res.json();
    expect(body).toMatchObject({
      success: true,
      status: 'ingesting',
      batchId: expect.stringMatching(/^bat_/),
    });
    expect(body.message).toContain('1 duplicate');
    expect(body.links.status).toBe(`http://outdial.test/api/v1/batch/${body.batchId}/status`);
    expect(body.links.dashboard).toBe(`http://outdial.test/dashboard/batches/${body.batchId}`);

    const done = await eventually(async () => {
      const s = await statusOf(body.batchId);
      return s.status === 'completed' ? s : undefined;
    }, 15_000);
    expect(done.statistics).toMatchObject({
      total: 3,
      processed: 3,
      succeeded: 2,
      failed: 1,
      pending: 0,
      percentComplete: 100,
      duplicates: 1,
    });
    expect(done.statistics.successRate).toBeCloseTo(66.67, 1);
    // The busy number was tried twice (maxAttempts 2), the others once.
    expect(done.recentCalls).toHaveLength(4);
    expect(
      done.recentCalls.filter((c: { phoneNumber: string }) => c.phoneNumber === '+14155550001'),
    ).toHaveLength(2);
    expect(done.timestamps.startedAt).not.toBeNull();
    expect(done.timestamps.completedAt).not.toBeNull();

    const viaLink = await t.request({
      method: 'GET',
      url: new URL(body.links.status).pathname,
      key: account.key,
    });
    expect(viaLink.statusCode).toBe(200);
    expect(viaLink.json().batchId).toBe(body.batchId);

    const live = await t.request({
      method: 'GET',
      url: `/api/v1/status/batch?batchId=${body.batchId}`,
      key: account.key,
    });
    expect(live.json().calls).toHaveLength(4);
  });
});
