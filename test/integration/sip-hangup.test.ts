import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { type Sipp, sipMessages, startSipp } from '../helpers/sipp.js';
import { trunkCalls } from '../helpers/trunk-calls.js';

/**
 * POST /api/v1/call/hangup on a SIP call still ringing: sipp's `ring` scenario rings until it gets
 * our CANCEL. The ring timeout is two minutes, so only the operator's hang-up ends it.
 */
describe(`hang-up of a ringing SIP call (${STORE})`, () => {
  let t: TestApp;
  let account: Account;
  let dir: string;
  let far: Sipp | undefined;

  beforeAll(async () => {
    t = await startTestApp({
      env: {
        OUTDIAL_SIP_BIND: '127.0.0.1',
        OUTDIAL_SIP_PORT: '0',
        OUTDIAL_RTP_PORTS: '45000-45999',
        OUTDIAL_SIP_RING_TIMEOUT_MS: '120000',
      },
    });
    account = await t.createAccount({ minutes: 50 });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-sip-hangup-'));
  }, 60_000);
  afterAll(async () => {
    far?.child.kill('SIGKILL');
    await t?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('cancels it (SIP CANCEL, 487): NO_ANSWER, operator-ended, nothing charged', async () => {
    const log = path.join(dir, 'ring.log');
    far = await startSipp('ring', { cwd: dir, messageLog: log, timeoutSeconds: 60 });
    const trunk = trunkCalls(t, account);
    const callId = await trunk.dial(await trunk.agent(far.port), '+14155550127');
    // Ringing: sipp has answered the INVITE with 180.
    await eventually(
      async () =>
        fs.existsSync(log) && sipMessages(log).some((m) => m.sent && m.startLine.includes('180'))
          ? true
          : undefined,
      30_000,
    );
    const res = await t.request({
      method: 'POST',
      url: `/api/v1/call/hangup?callId=${callId}`,
      key: account.key,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, callId, outcome: 'ended' });
    expect(await trunk.status(callId)).toMatchObject({
      status: 'NO_ANSWER',
      sipStatusCode: 487,
      endedReason: 'operator-ended',
      failureSource: 'contact',
      duration: 0,
      minutesCharged: 0,
    });
    expect(await far.done).toBe(0); // the scenario got its CANCEL and ACKed 487
    expect(sipMessages(log).some((m) => !m.sent && m.startLine.startsWith('CANCEL'))).toBe(true);
    const again = await t.request({
      method: 'POST',
      url: `/api/v1/call/hangup?callId=${callId}`,
      key: account.key,
    });
    expect(again.statusCode).toBe(409);
    expect((await t.admin('GET', `/admin/v1/users/${account.userId}`)).json().availableMinutes).toBe(50);
  }, 90_000);
});
