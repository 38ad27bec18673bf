import dgram from 'node:dgram';
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/process.js';
import { dialRequest, type TestSipProvider, testSipProvider } from '../helpers/sip-provider.js';
import { startSipp } from '../helpers/sipp.js';

const request = (callId: string) => dialRequest(callId, 'trk_gone');

/** The provider's durable dial records, without a network: the trunk lookup finds nothing. */
describe('SIP provider dial records', () => {
  const made: TestSipProvider[] = [];
  afterEach(async () => {
    for (const provider of made.splice(0)) await provider.dispose();
  });

  function provider(trunkPort?: number, maxConcurrentCalls: number | null = null) {
    const made1 = testSipProvider(trunkPort ? { port: trunkPort, maxConcurrentCalls } : null, {
      ringTimeoutMs: 1000,
      recordingRetentionDays: 30,
    });
    made.push(made1);
    return { ...made1, dials: path.join(made1.dataDir, 'sip', 'dials') };
  }

  it('ends a call whose trunk is gone as FAILED, once, and remembers the end on disk', async () => {
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
    const state = await sip.lookup(request('call_a'), new Date());
    expect(state).toMatchObject({ known: true, ended: { callId: 'call_a', status: 'FAILED' } });
    expect(state.ended?.endedAt).toBeInstanceOf(Date);
    await sip.close();
  });

  it('tells reconciliation which calls never left, which are up elsewhere, and which were cut off', async () => {
    const { sip, dials } = provider();
    expect(await sip.lookup(request('call_never'), new Date())).toEqual({ known: false, ended: null });
    fs.mkdirSync(dials, { recursive: true });
    const record = (callId: string) =>
      fs.writeFileSync(
        path.join(dials, `${callId}.json`),
        JSON.stringify({
          callId,
          to: '+14155550123',
          attempt: 1,
          trunkId: 'trk_1',
          at: new Date().toISOString(),
        }),
      );
    record('call_elsewhere');
    expect(await sip.lookup(request('call_elsewhere'), new Date())).toEqual({ known: true, ended: null });
    record('call_cut');
    const old = new Date(Date.now() - 120_000);
    fs.utimesSync(path.join(dials, 'call_cut.json'), old, old);
    const cut = await sip.lookup(request('call_cut'), new Date());
    expect(cut).toMatchObject({ known: true, ended: { status: 'FAILED', duration: 0 } });
    expect(cut.ended?.error).toContain('cut off');
    await sip.close();
  });

  it('refuses new dials once closing', async () => {
    const { sip } = provider();
    await sip.close();
    await expect(sip.dial(request('call_late'))).rejects.toThrow('closing');
  });

  it('places a call through the trunk, and clears week-old dial records and recordings past their retention', async () => {
    const far = await startSipp('busy', { timeoutSeconds: 10 });
    const { sip, ended, dials, dataDir } = provider(far.port);
    const daysAgo = (days: number) => new Date(Date.now() - days * 24 * 60 * 60 * 1000);
    const file = (dir: string, name: string, age: number) => {
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, name), '{}');
      fs.utimesSync(path.join(dir, name), daysAgo(age), daysAgo(age));
      return path.join(dir, name);
    };
    const old = file(dials, 'call_old.json', 8);
    const recordings = path.join(dataDir, 'sip', 'recordings');
    const expired = file(recordings, 'call_expired.wav', 31);
    const kept = file(recordings, 'call_kept.wav', 29);
    await sip.dial(request('call_busy'));
    await expect.poll(() => ended.length, { timeout: 5000 }).toBe(1);
    expect(ended[0]).toMatchObject({ callId: 'call_busy', status: 'BUSY', sipCode: 486, duration: 0 });
    expect(await far.done).toBe(0);
    await expect.poll(() => fs.existsSync(old)).toBe(false);
    await expect.poll(() => fs.existsSync(expired)).toBe(false);
    expect(fs.existsSync(kept)).toBe(true);
    expect(fs.existsSync(path.join(dials, 'call_busy.json'))).toBe(true);
    // Nothing was recorded for a call nobody answered.
    expect(await sip.recording({ id: 'call_busy' })).toBeNull();
    await sip.close();
  });

  it('on a stop, gives back a call still waiting for its trunk: no end, no record, dialed at the next start', async () => {
    // A trunk that never answers, one call at a time: the first INVITE is out, the second waits.
    const { sip, ended } = provider(await freePort(), 1);
    await sip.dial(request('call_first'));
    await sip.dial(request('call_waiting'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    await sip.close();
    expect(ended.map((event) => event.callId)).toEqual(['call_first']);
    expect(await sip.lookup(request('call_waiting'), new Date())).toEqual({ known: false, ended: null });
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
