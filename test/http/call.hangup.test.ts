import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { DashboardClient } from '../helpers/dashboard-client.js';

/**
 * POST /api/v1/call/hangup on calls no agent session holds: canned simulated calls (no LLM
 * configured), answered or still ringing. The session's own hang-up is tested in
 * call.live.happy.test.ts.
 */
function client(t: TestApp, account: () => Account) {
  const dial = async (to: string) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account().key,
      payload: { to, agentConfigId: account().agentId },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ callId: string }>().callId;
  };
  const hangup = (callId: string, key = account().key) =>
    t.request({ method: 'POST', url: `/api/v1/call/hangup?callId=${callId}`, key });
  const status = async (callId: string) =>
    (
      await t.request({
        method: 'GET',
        url: `/api/v1/call/check-status?callId=${callId}`,
        key: account().key,
      })
    ).json().data;
  /** Waits until the call's dial went out `ms` ago: past a short ring, it is answered. */
  const placedFor = (callId: string, ms: number) =>
    eventually(async () => {
      const dial = t.provider.dials.find((d) => d.callId === callId);
      return dial && Date.now() - dial.at.getTime() >= ms ? true : undefined;
    });
  return { dial, hangup, status, placedFor };
}

describe(`hang-up of a canned simulated call (${STORE})`, () => {
  let t: TestApp;
  let account: Account;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    t = await startTestApp({ env: { OUTDIAL_SIM_RING_MS: '30', OUTDIAL_SIM_TALK_MS: '60000' } });
    account = await t.createAccount();
    api = client(t, () => account);
  });
  afterAll(() => t.close());

  it('ends an answered canned call now: COMPLETED, operator-ended, charged for the time connected', async () => {
    const callId = await api.dial('+14155550123');
    await api.placedFor(callId, 200); // rings for 30 ms
    const res = await api.hangup(callId);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, callId, outcome: 'ended' });
    const data = await api.status(callId);
    expect(data).toMatchObject({ status: 'COMPLETED', endedReason: 'operator-ended' });
    // Seconds, not the script's minute: the call ended when the operator said.
    expect(data.duration).toBeLessThan(30);
    expect(data.transcription.length).toBeGreaterThan(0);
  });

  it('answers 409 CALL_NOT_LIVE for a call that has ended, and 404 for another user’s call', async () => {
    const callId = await api.dial('+14155550124');
    await api.placedFor(callId, 200); // rings for 30 ms
    expect((await api.hangup(callId)).statusCode).toBe(200);
    const again = await api.hangup(callId);
    expect(again.statusCode, again.body).toBe(409);
    expect(again.json()).toMatchObject({
      code: 'CALL_NOT_LIVE',
      message: expect.stringContaining('COMPLETED'),
    });

    const other = await t.createAccount();
    expect(other.userId).not.toBe(account.userId);
    const theirs = await api.dial('+14155550125');
    const res = await api.hangup(theirs, other.key);
    expect(res.statusCode).toBe(404);
    expect((await api.status(theirs)).status).toBe('ONGOING');
  });

  it("lets the dashboard's call page hang it up and refuses its Say (no agent), CSRF-checked", async () => {
    const callId = await api.dial('+14155550126');
    const browser = new DashboardClient(t);
    expect((await browser.signIn(account.key)).statusCode).toBe(303);
    const page = await browser.get(`/dashboard/calls/${callId}`);
    expect(page.body).toContain('id="live-say"');
    expect(page.body).not.toContain('Nothing was said');
    const csrf = /data-csrf="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const post = (action: string, form: Record<string, string>) =>
      browser.post(`/dashboard/calls/${callId}/${action}`, form, { accept: 'application/json' });
    expect((await post('say', { _csrf: 'forged', text: 'Hello.' })).statusCode).toBe(403);
    const say = await post('say', { _csrf: csrf, text: 'Hello.' });
    expect(say.statusCode, say.body).toBe(409);
    expect(say.json().message).toMatch(/no agent is talking/i);
    expect((await post('hangup', { _csrf: 'forged' })).statusCode).toBe(403);
    await api.placedFor(callId, 200);
    const hangup = await post('hangup', { _csrf: csrf });
    expect(hangup.statusCode, hangup.body).toBe(200);
    expect(hangup.json()).toEqual({ success: true, callId, outcome: 'ended' });
    expect(await api.status(callId)).toMatchObject({ status: 'COMPLETED', endedReason: 'operator-ended' });
  });
});

describe(`hang-up of a ringing simulated call (${STORE})`, () => {
  let t: TestApp;
  let account: Account;
  let api: ReturnType<typeof client>;
  beforeAll(async () => {
    t = await startTestApp({ env: { OUTDIAL_SIM_RING_MS: '600000', OUTDIAL_SIM_TALK_MS: '1000' } });
    account = await t.createAccount();
    api = client(t, () => account);
  });
  afterAll(() => t.close());

  it('cancels it: NO_ANSWER, operator-ended, nothing charged', async () => {
    const callId = await api.dial('+14155550123');
    // Placed (its dial went out) and ringing for ten minutes.
    await api.placedFor(callId, 0);
    const res = await api.hangup(callId);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ success: true, outcome: 'ended' });
    expect(await api.status(callId)).toMatchObject({
      status: 'NO_ANSWER',
      endedReason: 'operator-ended',
      duration: 0,
      minutesCharged: 0,
      error: expect.stringMatching(/cancelled by the operator/i),
    });
    const user = await t.admin('GET', `/admin/v1/users/${account.userId}`);
    expect(user.json().availableMinutes).toBe(100);
  });
});
