import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { DialRecords } from '../../src/ports.js';
import { freePort } from '../helpers/process.js';
import {
  dialRequest,
  type TestSipProvider,
  testDialRecords,
  testSipProvider,
} from '../helpers/sip-provider.js';
import { carrierLoad, startSipp } from '../helpers/sipp.js';

const request = (callId: string) => dialRequest(callId, 'trk_gone');

/** The provider's dial records, in the shared database. */
describe('SIP provider dial records', () => {
  const made: TestSipProvider[] = [];
  let shared: Awaited<ReturnType<typeof testDialRecords>>;
  beforeAll(async () => {
    shared = await testDialRecords();
  });
  afterEach(async () => {
    for (const provider of made.splice(0)) await provider.dispose();
  });
  afterAll(async () => {
    await shared?.dispose();
  });

  function provider(trunkPort?: number, maxConcurrentCalls: number | null = null, records?: DialRecords) {
    const made1 = testSipProvider(
      trunkPort ? { port: trunkPort, maxConcurrentCalls } : null,
      records ?? shared.records,
      { ringTimeoutMs: 1000, recordingRetentionDays: 30 },
    );
    made.push(made1);
    return made1;
  }

  const recordOf = async (callId: string) => {
    const record = await shared.records.find(callId);
    if (!record) throw new Error(`no dial record for ${callId}`);
    return record;
  };

  it('ends a call whose trunk is gone as FAILED, once, and keeps the end with its shared record', async () => {
    const { sip, ended } = provider();
    await sip.dial(request('call_a'));
    await sip.dial(request('call_a'));
    await expect.poll(() => ended.length).toBe(1);
    expect(ended[0]).toMatchObject({ callId: 'call_a', status: 'FAILED', sipCode: null });
    expect(ended[0]?.error).toContain('trk_gone');
    // Dialed again later (a retry of the same id after a restart): never sent twice.
    await sip.dial(request('call_a'));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(ended).toHaveLength(1);
    const record = await recordOf('call_a');
    expect(record).toMatchObject({ state: 'ended', owner: shared.records.owner, sentAt: null });
    const state = await sip.lookup(request('call_a'), record);
    expect(state).toMatchObject({ known: true, ended: { callId: 'call_a', status: 'FAILED' } });
    expect(state.ended?.endedAt).toBeInstanceOf(Date);
  });

  it("settles a gone owner's calls from their records: cut off unanswered, or charged up to the last heartbeat", async () => {
    const { sip } = provider();
    const gone = await shared.another();
    const sentAt = new Date(Date.now() - 30_000);
    const answeredAt = new Date(Date.now() - 25_000);
    expect(await gone.hold('call_waited', 'sip')).toBe(true);
    expect(await gone.send('call_rang', 'sip', sentAt)).toBe(true);
    expect(await gone.send('call_talked', 'sip', sentAt)).toBe(true);
    await gone.answered('call_talked', answeredAt);
    await gone.close(); // its lease ends now: the last heartbeat
    expect(await sip.lookup(request('call_waited'), await recordOf('call_waited'))).toEqual({
      known: false,
      ended: null,
    });
    const rang = await sip.lookup(request('call_rang'), await recordOf('call_rang'));
    expect(rang.ended).toMatchObject({ status: 'FAILED', duration: 0, answeredAt: null });
    expect(rang.ended?.error).toContain('cut off');
    const talked = await sip.lookup(request('call_talked'), await recordOf('call_talked'));
    expect(talked.ended).toMatchObject({ status: 'FAILED', answeredAt });
    expect(talked.ended?.duration).toBeGreaterThanOrEqual(25);
    expect(talked.ended?.duration).toBeLessThanOrEqual(27);
    expect(talked.ended?.error).toContain('cut off after');
    // A record that is not this process's any more is never sent by it.
    expect(await shared.records.send('call_talked', 'sip', new Date())).toBe(false);
  });

  it('refuses new dials once closing', async () => {
    const { sip } = provider();
    await sip.close();
    await expect(sip.dial(request('call_late'))).rejects.toThrow('closing');
  });

  it('places a call through the trunk and records when it went out', async () => {
    const far = await startSipp('busy', { timeoutSeconds: 10 });
    const { sip, ended } = provider(far.port);
    const before = Date.now();
    await sip.dial(request('call_busy'));
    await expect.poll(() => ended.length, { timeout: 5000 }).toBe(1);
    expect(ended[0]).toMatchObject({ callId: 'call_busy', status: 'BUSY', sipCode: 486, duration: 0 });
    expect(await far.done).toBe(0);
    const record = await recordOf('call_busy');
    expect(record.state).toBe('ended');
    expect(record.sentAt?.getTime()).toBeGreaterThanOrEqual(before - 5);
    expect(record.ended).toMatchObject({ status: 'BUSY', sipCode: 486 });
    // Nothing was recorded for a call nobody answered.
    expect(await sip.recording({ id: 'call_busy' })).toBeNull();
  });

  it('never sends a call id twice from two processes with separate data dirs (two hosts)', async () => {
    const log = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-sipp-')), 'messages.log');
    const far = await startSipp('busy', { calls: 2, timeoutSeconds: 6, messageLog: log });
    const here = provider(far.port);
    const there = provider(far.port, null, await shared.another());
    await Promise.all([here.sip.dial(request('call_twice')), there.sip.dial(request('call_twice'))]);
    await expect.poll(() => here.ended.length + there.ended.length, { timeout: 5000 }).toBe(1);
    // sipp writes its message log a moment after the messages (later on a loaded machine): wait
    // for the INVITE it saw, then a while longer for a second one that must not come.
    await expect.poll(() => carrierLoad(log).calls, { timeout: 5000 }).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(here.ended.length + there.ended.length).toBe(1);
    expect(carrierLoad(log).calls).toBe(1);
    far.child.kill('SIGKILL');
  });

  it('on a stop, gives back a call still waiting for its trunk: no end, its record still waiting', async () => {
    // A trunk that never answers, one call at a time: the first INVITE is out, the second waits.
    const { sip, ended } = provider(await freePort(), 1);
    await sip.dial(request('call_first'));
    await sip.dial(request('call_waiting'));
    await expect.poll(async () => (await shared.records.find('call_first'))?.state).toBe('sent');
    expect((await recordOf('call_waiting')).state).toBe('waiting');
    await sip.close();
    expect(ended.map((event) => event.callId)).toEqual(['call_first']);
    const record = await recordOf('call_waiting');
    expect(record).toMatchObject({ state: 'waiting', sentAt: null });
    expect(await sip.lookup(request('call_waiting'), record)).toEqual({ known: false, ended: null });
  });

  it("sends its audio where the far end's re-INVITE moved the media", async () => {
    // The reinvite scenario moves the far end's media to port 41234 of loopback.
    const moved = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => moved.bind(41234, '127.0.0.1', resolve));
    let packets = 0;
    moved.on('message', () => {
      packets++;
    });
    const far = await startSipp('reinvite', { timeoutSeconds: 10 });
    const { sip, ended } = provider(far.port);
    await sip.dial(request('call_moved'));
    await expect.poll(() => ended.length, { timeout: 8000 }).toBe(1);
    moved.close();
    expect(ended[0]).toMatchObject({ status: 'COMPLETED', sipCode: 200 });
    expect(await far.done).toBe(0);
    // 20 ms packets for most of the 0.8 s between the re-INVITE and the hang-up.
    expect(packets).toBeGreaterThan(20);
  });
});
