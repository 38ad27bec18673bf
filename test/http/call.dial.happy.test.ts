import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

describe('POST /api/v1/call/dial: happy path', () => {
  let t: TestApp;
  let account: Account;

  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount({ minutes: 10 });
  });
  afterAll(() => t.close());

  const dial = (body: Record<string, unknown>, url = '/api/v1/call/dial') =>
    t.request({
      method: 'POST',
      url,
      key: account.key,
      payload: { agentConfigId: account.agentId, ...body },
    });

  it('starts a call, which is ONGOING and then COMPLETED with a transcript, a recording and a charge', async () => {
    const res = await dial({
      to: '+14155550123',
      userId: account.userId,
      callerDetails: { name: 'Jordan', company: 'Acme' },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      message: expect.any(String),
      callId: expect.stringMatching(/^call_/),
      contactId: expect.stringMatching(/^cnt_/),
      status: 'ONGOING',
    });

    const live = await t.request({
      method: 'GET',
      url: `/api/v1/status/call?callId=${body.callId}`,
      key: account.key,
    });
    expect(live.json()).toMatchObject({
      callId: body.callId,
      status: 'ONGOING',
      duration: null,
      recordingUrl: null,
    });

    const done = await eventually(async () => {
      const r = await t.request({
        method: 'GET',
        url: `/api/v1/call/check-status?callId=${body.callId}`,
        key: account.key,
      });
      return r.json().data.status === 'COMPLETED' ? r.json().data : undefined;
    });
    expect(done.contact).toEqual({ name: 'Jordan', phoneNumber: '+14155550123' });
    expect(done.agent).toBe('Sales agent');
    expect(done.duration).toBeGreaterThan(0);
    expect(done.transcription.length).toBeGreaterThanOrEqual(4);
    expect(done.transcription[0]).toEqual({ role: 'assistant', content: expect.stringContaining('Jordan') });
    expect(done.transcription[0].content).toContain('Ava');
    expect(done.transcription.some((e: { role: string }) => e.role === 'user')).toBe(true);

    const recording = await t.request({
      method: 'GET',
      url: new URL(done.recordingUrl).pathname + new URL(done.recordingUrl).search,
    });
    expect(recording.statusCode).toBe(200);
    expect(recording.headers['content-type']).toBe('audio/wav');
    expect(recording.rawPayload.subarray(0, 4).toString()).toBe('RIFF');

    const user = await t.admin('GET', `/admin/v1/users/${account.userId}`);
    expect(user.json().availableMinutes).toBe(10 - Math.ceil(done.duration / 60));
  });

  it('creates the contact once and updates it on the next dial to the same number', async () => {
    const first = await dial({
      to: '+14155550124',
      callerDetails: { name: 'Sam', metadata: { plan: 'pro' } },
    });
    await eventually(async () => {
      const r = await t.request({
        method: 'GET',
        url: `/api/v1/status/call?callId=${first.json().callId}`,
        key: account.key,
      });
      return r.json().status !== 'ONGOING' ? true : undefined;
    });
    const second = await dial({ to: '+14155550124', callerDetails: { name: 'Samantha' } });
    expect(second.statusCode).toBe(200);
    expect(second.json().contactId).toBe(first.json().contactId);
    const status = await eventually(async () => {
      const r = await t.request({
        method: 'GET',
        url: `/api/v1/call/check-status?callId=${second.json().callId}`,
        key: account.key,
      });
      return r.json().data.status !== 'ONGOING' ? r.json().data : undefined;
    });
    expect(status.contact.name).toBe('Samantha');
  });

  it('dials an existing contact by contactId alone', async () => {
    const first = await dial({ to: '+14155550125' });
    const contactId = first.json().contactId;
    await eventually(async () => {
      const r = await t.request({
        method: 'GET',
        url: `/api/v1/status/call?callId=${first.json().callId}`,
        key: account.key,
      });
      return r.json().status !== 'ONGOING' ? true : undefined;
    });
    const again = await dial({ contactId });
    expect(again.statusCode).toBe(200);
    expect(again.json().contactId).toBe(contactId);
  });

  it.each([
    ['+14155550001', 'BUSY'],
    ['+14155550002', 'NO_ANSWER'],
    ['+14155550003', 'FAILED'],
    ['+14155550004', 'VOICEMAIL'],
  ])('reports the simulated outcome of %s as %s', async (to, status) => {
    const res = await dial({ to });
    const callId = res.json().callId;
    const live = await eventually<Record<string, unknown>>(async () => {
      const r = await t.request({
        method: 'GET',
        url: `/api/v1/status/call?callId=${callId}`,
        key: account.key,
      });
      return r.json().status !== 'ONGOING' ? r.json() : undefined;
    });
    expect(live.status).toBe(status);
    expect(live.duration).not.toBeNull();
    if (status !== 'VOICEMAIL') {
      expect(live.error).toEqual(expect.any(String));
      expect(live.recordingUrl).toBeNull();
    }
  });

  it('answers a number ending 0006 busy the first time and in person the second', async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await dial({ to: '+14155550006' });
      const callId = res.json().callId;
      outcomes.push(
        await eventually(async () => {
          const r = await t.request({
            method: 'GET',
            url: `/api/v1/status/call?callId=${callId}`,
            key: account.key,
          });
          return r.json().status !== 'ONGOING' ? r.json().status : undefined;
        }),
      );
    }
    expect(outcomes).toEqual(['BUSY', 'COMPLETED']);
  });

  it('answers on the legacy path too, marked deprecated with a link to its successor', async () => {
    const res = await dial({ to: '+14155550126' }, '/api/private/call/dial');
    expect(res.statusCode).toBe(200);
    expect(res.json().status).toBe('ONGOING');
    expect(res.headers.deprecation).toMatch(/^@\d+$/);
    expect(res.headers.link).toBe('</api/v1/call/dial>; rel="successor-version"');
  });
});
