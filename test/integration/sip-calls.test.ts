import { type ChildProcess, execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../../src/cli/csv.js';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { maxInWindow } from '../helpers/rate.js';
import { startSipOptionsServer } from '../helpers/sip-options-server.js';
import { carrierLoad, sipMessages, startSipp } from '../helpers/sipp.js';
import { trunkCalls } from '../helpers/trunk-calls.js';

/**
 * Real calls end to end: an agent with a SIP trunk, the service's SIP provider, and sipp (Debian's
 * sip-tester) as the carrier and the person or machine that answers, on loopback. The far end's
 * speech is made with espeak-ng and played by sipp as RTP.
 */
describe('calls through a SIP trunk, with sipp as the carrier', () => {
  let t: TestApp;
  let account: Account;
  let trunk: ReturnType<typeof trunkCalls>;
  let audioDir: string;
  const carriers: ChildProcess[] = [];

  beforeAll(async () => {
    t = await startTestApp({
      workers: true,
      env: {
        OUTDIAL_SIP_BIND: '127.0.0.1',
        OUTDIAL_SIP_PORT: '0',
        OUTDIAL_RTP_PORTS: '42000-43999',
        OUTDIAL_SIP_RING_TIMEOUT_MS: '1500',
      },
    });
    account = await t.createAccount({ minutes: 500 });
    trunk = trunkCalls(t, account);
    audioDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-sipp-'));
    // What the far end says, as sipp plays it: 8 kHz u-law WAV.
    const say = (name: string, text: string, after: string[] = []) => {
      const raw = path.join(audioDir, `${name}.raw.wav`);
      execFileSync('espeak-ng', ['-w', raw, text]);
      execFileSync('sox', [
        raw,
        '-r',
        '8000',
        '-c',
        '1',
        '-e',
        'u-law',
        path.join(audioDir, `${name}.wav`),
        ...after,
      ]);
    };
    say('hello', 'Hello?');
    say('answer', 'yes I am interested please call me tomorrow');
    // A machine: a long greeting, then a one-second beep at 1 kHz.
    say(
      'greeting-speech',
      'Hi, you have reached Jordan. I cannot take your call right now. Please leave your name and number after the tone and I will call you back.',
    );
    execFileSync('sox', [
      path.join(audioDir, 'greeting-speech.wav'),
      '|sox -n -r 8000 -c 1 -e u-law -t wav - synth 1 sine 1000 vol 0.5',
      path.join(audioDir, 'greeting.wav'),
    ]);
  }, 60_000);

  afterAll(async () => {
    for (const child of carriers) child.kill('SIGKILL');
    await t?.close();
    if (audioDir) fs.rmSync(audioDir, { recursive: true, force: true });
  });

  /** sipp as the carrier, playing the audio made above, logging its messages. */
  async function carrier(scenario: string, calls = 1) {
    const log = path.join(audioDir, `${scenario}-${Date.now()}.log`);
    const sipp = await startSipp(scenario, { calls, cwd: audioDir, messageLog: log, timeoutSeconds: 90 });
    carriers.push(sipp.child);
    return { ...sipp, log };
  }

  it('answers and talks: the agent greets, the far end is transcribed, both sides are recorded', async () => {
    const far = await carrier('talk');
    const agentId = await trunk.agent(far.port);
    const callId = await trunk.dial(agentId, '+14155550123', 'Jordan');
    const call = await trunk.ended(callId, 45_000);
    expect(call).toMatchObject({ status: 'COMPLETED', sipStatusCode: 200, error: null });
    expect(call.duration).toBeGreaterThanOrEqual(5);
    const turns = call.transcription as Array<{ role: string; content: string }>;
    expect(turns[0]).toEqual({
      role: 'assistant',
      content: 'Hello Jordan, this is Ava. Do you have a moment to talk?',
    });
    const heard = turns
      .filter((turn) => turn.role === 'user')
      .map((turn) => turn.content)
      .join(' ');
    // pocketsphinx's 16 kHz model on 8 kHz phone audio is weak, and where the speech falls in its
    // 10 ms frames (which depends on packet arrival times) changes what it hears: "yes i know it
    // listed at least only tomorrow", "yeah i thought it did the leafs goalie tomorrow", "yes i did
    // leave told me to low if" in different runs, and only "yes" once beside two CPU hogs. What
    // always comes through: the far end's answer reaches the transcript. (Its first word was "yes"
    // or "yeah" in most runs and "it" in a full suite beside other tests: what it hears is the
    // recognizer's quality, which `outdial eval` measures; this test is about the call's path.)
    const words = heard.split(/\s+/).filter((word) => word !== '');
    expect(words.length).toBeGreaterThan(0);
    expect(turns.at(-1)).toEqual({ role: 'assistant', content: 'Thank you for your time. Goodbye.' });
    expect(await far.done).toBe(0);

    // The recording: a stereo WAV, the agent's speech on the left and the far end's on the right.
    const url = new URL(call.recordingUrl);
    const wav = await t.request({ method: 'GET', url: `${url.pathname}${url.search}` });
    expect(wav.statusCode).toBe(200);
    expect(wav.headers['content-type']).toContain('audio/wav');
    const body = wav.rawPayload;
    expect(body.toString('ascii', 0, 4)).toBe('RIFF');
    expect(body.readUInt16LE(22)).toBe(2);
    expect(body.readUInt32LE(24)).toBe(8000);
    const energy = channelEnergy(body);
    expect(energy.left).toBeGreaterThan(100);
    expect(energy.right).toBeGreaterThan(100);
    const seconds = (body.length - 44) / 4 / 8000;
    expect(seconds).toBeGreaterThan(call.duration - 2);
  }, 60_000);

  it('reads an answering machine as VOICEMAIL and hangs up without talking to it', async () => {
    const far = await carrier('voicemail');
    const agentId = await trunk.agent(far.port);
    const callId = await trunk.dial(agentId, '+14155550124');
    const call = await trunk.ended(callId);
    expect(call).toMatchObject({ status: 'VOICEMAIL', sipStatusCode: 200, transcription: [] });
    expect(call.duration).toBeLessThan(8);
    expect(await far.done).toBe(0);
  }, 40_000);

  it('maps busy, not found and an unanswered ring (cancelled) to their outcomes', async () => {
    const busy = await carrier('busy');
    const busyId = await trunk.dial(await trunk.agent(busy.port), '+14155550125');
    const busyCall = await trunk.ended(busyId);
    expect(busyCall).toMatchObject({ status: 'BUSY', sipStatusCode: 486, duration: 0, recordingUrl: null });
    // The dashboard's call page shows the same answer.
    expect((await t.runtime.services.dashboard.call(account.userId, busyId)).sipCode).toBe(486);
    expect(await busy.done).toBe(0);

    const missing = await carrier('not-found');
    const missingCall = await trunk.ended(await trunk.dial(await trunk.agent(missing.port), '+14155550126'));
    // The trunk refusing the call itself is ours (issue 24): trunk-rejected, service, not charged.
    expect(missingCall).toMatchObject({
      status: 'FAILED',
      sipStatusCode: 404,
      endedReason: 'trunk-rejected',
      failureSource: 'service',
      minutesCharged: 0,
    });
    expect(missingCall.error).toContain('404');
    expect(await missing.done).toBe(0);

    // The ring scenario expects our CANCEL when the ring timeout (1.5 s here) passes.
    const ring = await carrier('ring');
    const ringCall = await trunk.ended(await trunk.dial(await trunk.agent(ring.port), '+14155550127'));
    expect(ringCall).toMatchObject({
      status: 'NO_ANSWER',
      sipStatusCode: 487,
      endedReason: null,
      failureSource: 'contact',
    });
    expect(await ring.done).toBe(0);
  }, 60_000);

  it('reads a trunk that answers nothing, not even 100 Trying, as trunk-unreachable, never NO_ANSWER', async () => {
    // A host whose SIP port is open and silent: nothing answers the INVITE or its retransmissions.
    const silent = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => silent.bind(0, '127.0.0.1', resolve));
    try {
      const agentId = await trunk.agent(silent.address().port);
      const call = await trunk.ended(await trunk.dial(agentId, '+14155550130'));
      expect(call).toMatchObject({
        status: 'FAILED',
        sipStatusCode: null,
        endedReason: 'trunk-unreachable',
        failureSource: 'service',
        minutesCharged: 0,
        duration: 0,
      });
      expect(call.error).toMatch(/answered none of the INVITE's sends/);
    } finally {
      silent.close();
    }
  }, 60_000);

  it("opens a trunk's breaker after three unreachable calls: the next dial gets 503 naming the trunk, and an answer to OPTIONS closes it", async () => {
    // A trunk that drops every packet, until it is told to answer OPTIONS.
    const far = await startSipOptionsServer({ status: null });
    try {
      const agentId = await trunk.agent(far.port);
      const trunkId = (await t.admin('GET', `/admin/v1/agents/${agentId}`)).json().sipTrunkId as string;
      const key = `trunk:${trunkId}`;
      const callIds = await Promise.all(
        ['+14155550131', '+14155550132', '+14155550133'].map((to) => trunk.dial(agentId, to)),
      );
      for (const callId of callIds) {
        expect(await trunk.ended(callId)).toMatchObject({
          endedReason: 'trunk-unreachable',
          minutesCharged: 0,
        });
      }
      const trunkHealth = async () => {
        const res = await t.request({ method: 'GET', url: '/api/v1/health', key: account.key });
        return res
          .json<{ dependencies: Array<{ key: string; breaker: string; status: string }> }>()
          .dependencies.find((dependency) => dependency.key === key);
      };
      await eventually(async () => ((await trunkHealth())?.breaker === 'closed' ? undefined : true), 10_000);
      const refused = await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: account.key,
        payload: { agentConfigId: agentId, to: '+14155550134' },
      });
      expect(refused.statusCode, refused.body).toBe(503);
      expect(refused.json()).toMatchObject({
        code: 'DEPENDENCY_UNAVAILABLE',
        details: { dependency: key, kind: 'trunk' },
      });
      // The probes ask the trunk with OPTIONS; once it answers, calls go through again.
      far.set({ status: 200 });
      await eventually(
        async () => ((await trunkHealth())?.breaker === 'closed' ? true : undefined),
        60_000,
        200,
      );
      expect(far.requests.some((request) => request.message.method === 'OPTIONS')).toBe(true);
      expect(await trunkHealth()).toMatchObject({ status: 'up' });
      const again = await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: account.key,
        payload: { agentConfigId: agentId, to: '+14155550135' },
      });
      expect(again.statusCode, again.body).toBe(200);
    } finally {
      await far.close();
    }
  }, 120_000);

  it('answers a digest challenge with the trunk credentials', async () => {
    const far = await carrier('auth');
    const agentId = await trunk.agent(
      far.port,
      { username: 'trunkuser', password: 'trunkpass' },
      { greeting: 'Hello.', closing: 'Goodbye.', noInputTimeoutMs: 1000 },
    );
    const call = await trunk.ended(await trunk.dial(agentId, '+14155550128'));
    expect(call).toMatchObject({ status: 'COMPLETED', sipStatusCode: 200 });
    expect(await far.done).toBe(0);
  }, 40_000);

  it('does not charge a capacity answer as an attempt: the call waits and goes through', async () => {
    const far = await carrier('capacity-then-answer', 2);
    const agentId = await trunk.agent(far.port);
    const before = (await t.admin('GET', `/admin/v1/users/${account.userId}`)).json().availableMinutes;
    const callId = await trunk.dial(agentId, '+14155550129');
    const call = await trunk.ended(callId);
    // One call, answered on the second INVITE, with the SIP code of the answer that counted.
    expect(call).toMatchObject({ status: 'COMPLETED', sipStatusCode: 200 });
    expect(await far.done).toBe(0);
    const invites = fs.readFileSync(far.log, 'utf8').match(/^INVITE sip:/gm) ?? [];
    expect(invites.length).toBeGreaterThanOrEqual(2);
    const after = (await t.admin('GET', `/admin/v1/users/${account.userId}`)).json().availableMinutes;
    expect(before - after).toBe(1);
    const metrics = await t.request({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: 'Bearer test-admin-token-0123456789' },
    });
    expect(metrics.body).toMatch(/outdial_sip_final_responses_total\{trunk="trk_[^"]+",code="503"\} 1/);
  }, 40_000);

  /** Submits a batch for the agent and waits until it completes; returns its id and statistics. */
  async function runBatch(
    agentId: string,
    contacts: Array<{ phoneNumber: string; name: string }>,
    rate: number,
  ) {
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: { agentId, userId: account.userId, contacts, options: { maxCallsPerSecond: rate } },
    });
    expect(created.statusCode).toBe(202);
    const batchId = created.json().batchId as string;
    const done = await eventually<{ statistics: Record<string, number> }>(
      async () => {
        const res = await t.request({
          method: 'GET',
          url: `/api/v1/batch/check-status?batchId=${batchId}`,
          key: account.key,
        });
        return res.json().status === 'completed' ? res.json() : undefined;
      },
      60_000,
      250,
    );
    return { batchId, statistics: done.statistics };
  }

  const contacts = (count: number, from: number) =>
    Array.from({ length: count }, (_, i) => ({
      phoneNumber: `+1415555${String(from + i).padStart(4, '0')}`,
      name: `Contact ${i}`,
    }));

  it('dials a batch of 20 through one trunk at 5 calls a second, never above its 4-call cap', async () => {
    const far = await carrier('batch', 20);
    const agentId = await trunk.agent(far.port, { maxConcurrentCalls: 4 });
    const { batchId, statistics } = await runBatch(agentId, contacts(20, 300), 5);
    expect(statistics).toMatchObject({ total: 20, processed: 20, succeeded: 20 });
    expect(await far.done).toBe(0);
    const load = carrierLoad(far.log);
    expect(load.calls).toBe(20);
    expect(load.peak).toBeLessThanOrEqual(4);
    expect(load.peak).toBeGreaterThanOrEqual(3);
    expect(load.invitesPerSecond).toBeLessThanOrEqual(5);
    // The export carries each call's SIP code.
    const exported = await t.request({
      method: 'GET',
      url: `/api/v1/batch/${batchId}/export`,
      key: account.key,
    });
    // Read as CSV (RFC 4180): a summary or analysis, once there, is a quoted cell holding commas.
    const rows = parseCsv(exported.body).map((record) => record.cells);
    const codeAt = (rows[0] ?? []).indexOf('sipStatusCode');
    expect(rows.slice(1).map((row) => row[codeAt])).toEqual(Array(20).fill('200'));
  }, 90_000);

  it("holds the trunk's caps across two batches that could go faster together", async () => {
    const far = await carrier('batch', 12);
    const agentId = await trunk.agent(far.port, { maxCallsPerSecond: 3, maxConcurrentCalls: 3 });
    // Each batch may dial 10 a second; the trunk allows 3 a second and 3 at once in all.
    const [first, second] = await Promise.all([
      runBatch(agentId, contacts(6, 400), 10),
      runBatch(agentId, contacts(6, 500), 10),
    ]);
    expect(first.statistics).toMatchObject({ processed: 6, succeeded: 6 });
    expect(second.statistics).toMatchObject({ processed: 6, succeeded: 6 });
    expect(await far.done).toBe(0);
    const load = carrierLoad(far.log);
    expect(load.calls).toBe(12);
    expect(load.peak).toBeLessThanOrEqual(3);
    expect(load.invitesPerSecond).toBeLessThanOrEqual(3);
  }, 90_000);
  it("keeps a batch's pace in its recorded starts when calls waiting at the trunk go out together", async () => {
    // The carrier is full at the first INVITE: the trunk (no rate of its own) pauses new INVITEs
    // for a second, the calls the batch starts meanwhile wait at it, and the pause ends for all of
    // them at once. 12 contacts and one refused INVITE: 13 INVITEs.
    const far = await carrier('capacity-then-answer', 13);
    const agentId = await trunk.agent(far.port);
    const rate = 4;
    const { batchId, statistics } = await runBatch(agentId, contacts(12, 600), rate);
    expect(statistics).toMatchObject({ total: 12, processed: 12, succeeded: 12 });
    expect(await far.done).toBe(0);
    // One INVITE refused: its 503 may be in the log twice, resent for the INVITE our side resent
    // when the answer was slow to come (SIP over UDP, on a loaded machine).
    const refused = sipMessages(far.log).filter(
      (message) => message.sent && message.startLine.startsWith('SIP/2.0 503'),
    );
    expect(new Set(refused.map((message) => message.header('Call-ID'))).size).toBe(1);
    const calls = await t.runtime.database.db
      .selectFrom('calls')
      .leftJoin('dials', 'dials.call_id', 'calls.id')
      .select(['calls.id', 'calls.created_at', 'dials.sent_at'])
      .where('calls.batch_id', '=', batchId)
      .execute();
    expect(calls).toHaveLength(12);
    // The recorded start is the dial record's sent time: the moment the call went out.
    for (const call of calls) expect(call.sent_at?.getTime()).toBe(call.created_at.getTime());
    const starts = calls.map((call) => call.created_at.getTime());
    expect(maxInWindow(starts, 1000)).toBeLessThanOrEqual(rate);
  }, 60_000);
});

/** Mean absolute sample of each channel of a 16-bit stereo WAV with a 44-byte header. */
function channelEnergy(wav: Buffer): { left: number; right: number } {
  let left = 0;
  let right = 0;
  const frames = Math.floor((wav.length - 44) / 4);
  for (let i = 0; i < frames; i++) {
    left += Math.abs(wav.readInt16LE(44 + i * 4));
    right += Math.abs(wav.readInt16LE(46 + i * 4));
  }
  return { left: left / frames, right: right / frames };
}
