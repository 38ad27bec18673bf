import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

describe('call status reads and recordings: security', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  let callId: string;
  let recordingUrl: string;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    bob = await t.createAccount();
    callId = (
      await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: alice.key,
        payload: { to: '+14155550123', agentConfigId: alice.agentId },
      })
    ).json().callId;
    recordingUrl = await eventually(async () => {
      const r = await t.request({
        method: 'GET',
        url: `/api/v1/status/call?callId=${callId}`,
        key: alice.key,
      });
      return r.json().recordingUrl ?? undefined;
    });
  });
  afterAll(() => t.close());

  it("answers 401 without a key and 404 for another user's call, live or persistent", async () => {
    for (const path of ['/api/v1/status/call', '/api/v1/call/check-status']) {
      expect((await t.request({ method: 'GET', url: `${path}?callId=${callId}` })).statusCode).toBe(401);
      const other = await t.request({ method: 'GET', url: `${path}?callId=${callId}`, key: bob.key });
      expect(other.statusCode).toBe(404);
      expect(other.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
    }
  });

  it('serves a recording with its signed token, or to its owner, and to nobody else', async () => {
    const url = new URL(recordingUrl);
    const signed = await t.request({ method: 'GET', url: url.pathname + url.search });
    expect(signed.statusCode).toBe(200);
    expect(signed.headers['content-type']).toBe('audio/wav');
    // The transcript spoken: at least the call's 1 s of 8 kHz 16-bit audio.
    expect(signed.rawPayload.readUInt32LE(40)).toBeGreaterThanOrEqual(8000 * 2 * 1);
    expect((await t.request({ method: 'GET', url: url.pathname, key: alice.key })).statusCode).toBe(200);

    const tampered = `${url.pathname}?token=${(url.searchParams.get('token') ?? '').replace(/^./, (c) => (c === 'A' ? 'B' : 'A'))}`;
    for (const attempt of [
      { url: tampered },
      { url: url.pathname },
      { url: url.pathname, key: bob.key },
      { url: `${url.pathname.replace(callId, 'call_other')}${url.search}` },
    ]) {
      const res = await t.request({ method: 'GET', ...attempt });
      expect(res.statusCode, attempt.url).toBe(404);
    }
  });

  it('has no recording for a call nobody answered', async () => {
    const busy = (
      await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: alice.key,
        payload: { to: '+14155550001', agentConfigId: alice.agentId },
      })
    ).json().callId;
    const ended = await eventually(async () => {
      const r = (
        await t.request({ method: 'GET', url: `/api/v1/status/call?callId=${busy}`, key: alice.key })
      ).json();
      return r.status !== 'ONGOING' ? r : undefined;
    });
    expect(ended).toMatchObject({ status: 'BUSY', recordingUrl: null, duration: 0 });
    expect(
      (await t.request({ method: 'GET', url: `/api/v1/calls/${busy}/recording.wav`, key: alice.key }))
        .statusCode,
    ).toBe(404);
  });
});
