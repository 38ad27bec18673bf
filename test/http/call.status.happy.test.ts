import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLiveCache } from '../../src/adapters/memory/live-cache.js';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

describe('GET /api/v1/status/call and /api/v1/call/check-status: happy path', () => {
  let t: TestApp;
  let account: Account;
  const cache = new MemoryLiveCache();
  beforeAll(async () => {
    t = await startTestApp({ overrides: { cache } });
    account = await t.createAccount();
  });
  afterAll(() => t.close());

  const dial = async (to: string) =>
    (
      await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: account.key,
        payload: { to, agentConfigId: account.agentId, callerDetails: { name: 'Jordan' } },
      })
    ).json();
  const live = (callId: string) =>
    t.request({ method: 'GET', url: `/api/v1/status/call?callId=${callId}`, key: account.key });
  const persistent = (callId: string) =>
    t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${callId}`, key: account.key });

  it('shows the live status from ONGOING to its final state, and the persistent record', async () => {
    const { callId, contactId } = await dial('+14155550123');
    const ongoing = await live(callId);
    expect(ongoing.statusCode).toBe(200);
    expect(ongoing.json()).toEqual({
      callId,
      status: 'ONGOING',
      startTime: expect.any(String),
      phoneNumber: '+14155550123',
      contactId,
      batchId: null,
      error: null,
      duration: null,
      recordingUrl: null,
    });
    const onRecord = (await persistent(callId)).json();
    expect(onRecord).toMatchObject({
      success: true,
      data: { id: callId, status: 'ONGOING', direction: 'OUTBOUND', endedAt: null },
    });

    const ended = await eventually(async () => {
      const r = (await live(callId)).json();
      return r.status === 'COMPLETED' ? r : undefined;
    });
    expect(ended.duration).toBe(1);
    expect(ended.recordingUrl).toMatch(
      new RegExp(`^http://outdial.test/api/v1/calls/${callId}/recording.wav\\?token=`),
    );
    const record = (await persistent(callId)).json().data;
    expect(record).toMatchObject({
      id: callId,
      status: 'COMPLETED',
      direction: 'OUTBOUND',
      duration: 1,
      contact: { name: 'Jordan', phoneNumber: '+14155550123' },
      agent: 'Sales agent',
      recordingUrl: ended.recordingUrl,
      contactId,
      agentId: account.agentId,
      batchId: null,
      error: null,
    });
    expect(Date.parse(record.endedAt)).toBeGreaterThan(Date.parse(record.createdAt));
    expect(
      record.transcription.every(
        (e: { role: string; content: string }) =>
          ['assistant', 'user'].includes(e.role) && e.content.length > 0,
      ),
    ).toBe(true);
  });

  it('answers the live status from the database once the cache entry is gone', async () => {
    const { callId } = await dial('+14155550124');
    await eventually(async () => ((await live(callId)).json().status !== 'ONGOING' ? true : undefined));
    await cache.close();
    const res = await live(callId);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ callId, status: 'COMPLETED', duration: 1 });
  });
});
