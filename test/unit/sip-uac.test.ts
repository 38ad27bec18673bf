import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outcomeOf, SipUserAgent, TRUNK_SILENCE_MS } from '../../src/adapters/voice/sip/uac.js';
import { startSipp } from '../helpers/sipp.js';

/** The SIP user agent against a real SIP peer: sipp (Debian's sip-tester) on loopback, one scenario per case. */
describe('SIP user agent against sipp', () => {
  let agent: SipUserAgent;
  beforeAll(async () => {
    agent = new SipUserAgent('127.0.0.1');
    await agent.start();
  });
  afterAll(() => agent.close());

  const farEnd = (scenario: string) => startSipp(scenario, { timeoutSeconds: 20 });
  const call = (port: number, ringTimeoutMs = 5000, credentials?: { username: string; password: string }) =>
    agent.invite({
      host: '127.0.0.1',
      port,
      to: '+14155550123',
      from: '+14155550100',
      ringTimeoutMs,
      ...(credentials ? { credentials } : {}),
    });

  it('places a call that is answered, then hangs it up with BYE', async () => {
    const far = await farEnd('answer');
    const sip = call(far.port);
    expect(await sip.outcome).toEqual({ kind: 'answered' });
    expect(sip.finalCode).toBe(200);
    expect(await sip.hangup()).toBe(200);
    expect(await far.done).toBe(0);
  });

  it('sees the far end hang up', async () => {
    const far = await farEnd('remote-hangup');
    const sip = call(far.port);
    expect(await sip.outcome).toEqual({ kind: 'answered' });
    expect(await sip.ended).toEqual({ by: 'remote' });
    expect(await far.done).toBe(0);
  });

  it("keeps a call up through the far end's re-INVITE and OPTIONS, and hears where its media moved", async () => {
    const far = await farEnd('reinvite');
    const sip = call(far.port);
    const moved: string[] = [];
    sip.on('remoteSdp', (sdp: string) => moved.push(sdp));
    expect(await sip.outcome).toEqual({ kind: 'answered' });
    expect(await sip.ended).toEqual({ by: 'remote' });
    // sipp checked that both requests were answered 200, the re-INVITE with our own offer.
    expect(await far.done).toBe(0);
    expect(moved).toHaveLength(1);
    expect(moved[0]).toContain('m=audio 41234 RTP/AVP 0');
  });

  it('names our call id in X-Outdial-Call-Id on the INVITE, for the carrier to log', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-uac-'));
    try {
      const log = path.join(dir, 'sipp.log');
      const far = await startSipp('busy', { timeoutSeconds: 20, messageLog: log });
      const sip = agent.invite({
        host: '127.0.0.1',
        port: far.port,
        to: '+14155550123',
        from: '+14155550100',
        ringTimeoutMs: 5000,
        reference: 'call_01TESTREFERENCE',
      });
      expect(await sip.outcome).toEqual({ kind: 'busy', code: 486 });
      expect(await far.done).toBe(0);
      const invite = fs
        .readFileSync(log, 'utf8')
        .split(/\r?\n/)
        .filter((line) => /^X-Outdial-Call-Id:/i.test(line));
      expect(invite).toEqual(['X-Outdial-Call-Id: call_01TESTREFERENCE']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads 486 as busy and acknowledges it', async () => {
    const far = await farEnd('busy');
    const sip = call(far.port);
    expect(await sip.outcome).toEqual({ kind: 'busy', code: 486 });
    expect(await far.done).toBe(0);
  });

  it('reads 404 as the trunk refusing the call (ours) and 503 as carrier capacity', async () => {
    const missing = await farEnd('not-found');
    expect(await call(missing.port).outcome).toEqual({ kind: 'rejected', code: 404, reason: 'Not Found' });
    expect(await missing.done).toBe(0);
    const full = await farEnd('capacity');
    expect(await call(full.port).outcome).toEqual({ kind: 'capacity', code: 503 });
    expect(await full.done).toBe(0);
  });

  it('cancels a call that rings past the timeout', async () => {
    const far = await farEnd('ring');
    const sip = call(far.port, 800);
    expect(await sip.outcome).toEqual({ kind: 'no_answer', code: 487, reason: 'ring timeout' });
    expect(await far.done).toBe(0);
  });

  it('answers a digest challenge and gets through', async () => {
    const far = await farEnd('auth');
    const sip = call(far.port, 5000, { username: 'trunkuser', password: 'trunkpass' });
    expect(await sip.outcome).toEqual({ kind: 'answered' });
    expect(await sip.hangup()).toBe(200);
    expect(await far.done).toBe(0);
  });

  it('is rejected by the trunk, a failure of ours, when the credentials are wrong', async () => {
    const far = await farEnd('auth');
    const sip = call(far.port, 5000, { username: 'trunkuser', password: 'wrong' });
    expect(await sip.outcome).toEqual({ kind: 'rejected', code: 403, reason: 'Forbidden' });
    expect(await far.done).toBe(0);
  });

  it('answers in-dialog requests for a dialog it does not know with 481 (RFC 3261 12.2.2)', async () => {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    const replies: string[] = [];
    socket.on('message', (data) => replies.push(data.toString('utf8')));
    const request = (method: string, toTag: string, cseq: number) =>
      [
        `${method} sip:+14155550100@127.0.0.1:${agent.port} SIP/2.0`,
        `Via: SIP/2.0/UDP 127.0.0.1:${socket.address().port};branch=z9hG4bK-${method}-${cseq}`,
        'From: <sip:+14155550123@127.0.0.1>;tag=far',
        `To: <sip:+14155550100@127.0.0.1>${toTag}`,
        `Call-ID: gone-${method}@127.0.0.1`,
        `CSeq: ${cseq} ${method}`,
        'Max-Forwards: 70',
        'Content-Length: 0',
        '',
        '',
      ].join('\r\n');
    try {
      for (const [method, cseq] of [
        ['BYE', 2],
        ['INFO', 3],
        ['ACK', 4],
      ] as const)
        socket.send(request(method, ';tag=ours', cseq), agent.port, '127.0.0.1');
      await expect.poll(() => replies.length).toBe(2);
      await new Promise((resolve) => setTimeout(resolve, 100));
      // An ACK is never answered; BYE and INFO are, each echoing its own transaction.
      expect(replies).toHaveLength(2);
      for (const [reply, method] of [
        [replies.find((r) => r.includes('CSeq: 2 BYE')), 'BYE'],
        [replies.find((r) => r.includes('CSeq: 3 INFO')), 'INFO'],
      ] as const) {
        expect(reply?.split('\r\n')[0]).toBe('SIP/2.0 481 Call/Transaction Does Not Exist');
        expect(reply).toContain(`Call-ID: gone-${method}@127.0.0.1`);
        expect(reply).toContain(`branch=z9hG4bK-${method}-`);
        expect(reply).toContain('To: <sip:+14155550100@127.0.0.1>;tag=ours');
      }
    } finally {
      socket.close();
    }
  });

  it('maps carrier answers to outcomes', () => {
    expect(outcomeOf(603)).toEqual({ kind: 'busy', code: 603 });
    expect(outcomeOf(480)).toMatchObject({ kind: 'no_answer', code: 480 });
    expect(outcomeOf(480, 'Temporarily Unavailable - capacity')).toEqual({ kind: 'capacity', code: 480 });
    expect(outcomeOf(503)).toEqual({ kind: 'capacity', code: 503 });
    expect(outcomeOf(404, 'Not Found')).toEqual({ kind: 'rejected', code: 404, reason: 'Not Found' });
    for (const code of [401, 403, 407, 500, 502, 504]) expect(outcomeOf(code).kind).toBe('rejected');
    // A number the network refuses is the callee's side.
    expect(outcomeOf(484, 'Address Incomplete')).toEqual({
      kind: 'failed',
      code: 484,
      reason: 'Address Incomplete',
    });
    expect(outcomeOf(604)).toMatchObject({ kind: 'failed', code: 604 });
  });

  it('a call given up before any answer (a stop) says nothing of the trunk: no answer, not unreachable', async () => {
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    try {
      const sip = call(socket.address().port, 60_000);
      sip.cancel();
      expect(await sip.outcome).toEqual({
        kind: 'no_answer',
        code: null,
        reason: 'given up before any answer',
      });
    } finally {
      socket.close();
    }
  });

  it('reads an INVITE nothing answers, not even 100 Trying, as the trunk unreachable within TRUNK_SILENCE_MS', async () => {
    // A bound UDP socket that never answers: the trunk host is up, its SIP server is not.
    const socket = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    let invites = 0;
    socket.on('message', (data) => {
      if (data.toString('utf8').startsWith('INVITE ')) invites++;
    });
    try {
      const started = Date.now();
      const sip = call(socket.address().port, 60_000);
      const outcome = await sip.outcome;
      expect(outcome).toMatchObject({ kind: 'unreachable' });
      expect((outcome as { reason: string }).reason).toMatch(/answered none of the INVITE's sends/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(TRUNK_SILENCE_MS - 50);
      // The first send and its retransmissions under timer A.
      expect(invites).toBeGreaterThanOrEqual(4);
    } finally {
      socket.close();
    }
  });
});
