import { execFileSync } from 'node:child_process';
import dgram from 'node:dgram';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CallEndedEvent, DialRequest } from '../../src/ports.js';
import { toneShare } from '../../src/voice/amd.js';
import { loadConversationEngine } from '../../src/voice/engines/index.js';
import { ROOT } from '../helpers/process.js';
import { type TestSipProvider, testDialRecords, testSipProvider } from '../helpers/sip-provider.js';
import { type Sipp, startSipp } from '../helpers/sipp.js';

/**
 * The answered-call session over the SIP transport, with sipp as the far end on loopback: DTMF as
 * RFC 4733 events on the wire, blind transfer by REFER (accepted, declined, target busy), a
 * voicemail greeting with a beep (the message after the beep), the far end hanging up, and the
 * agent's longest duration. DTMF and transfer are asked for by a test engine loaded by path.
 */
describe('answered SIP calls: DTMF, transfer, voicemail, hang-ups', () => {
  let shared: Awaited<ReturnType<typeof testDialRecords>>;
  let audioDir: string;
  const made: TestSipProvider[] = [];
  const farEnds: Sipp[] = [];

  beforeAll(async () => {
    shared = await testDialRecords();
    audioDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-sip-session-'));
    const say = (name: string, text: string) => {
      const raw = path.join(audioDir, `${name}.raw.wav`);
      execFileSync('espeak-ng', ['-w', raw, text]);
      execFileSync('sox', [raw, '-r', '8000', '-c', '1', '-e', 'u-law', path.join(audioDir, `${name}.wav`)]);
    };
    say('hello', 'Hello?');
    // A machine: a long greeting, then a one-second beep at 1 kHz.
    say(
      'greeting-speech',
      'Hi, you have reached Jordan. I cannot take your call right now. Please leave your name and number after the tone.',
    );
    execFileSync('sox', [
      path.join(audioDir, 'greeting-speech.wav'),
      '|sox -n -r 8000 -c 1 -e u-law -t wav - synth 1 sine 1000 vol 0.5',
      path.join(audioDir, 'greeting.wav'),
    ]);
  }, 60_000);

  afterEach(async () => {
    for (const provider of made.splice(0)) await provider.dispose();
  });

  afterAll(async () => {
    for (const far of farEnds) far.child.kill('SIGKILL');
    await shared?.dispose();
    if (audioDir) fs.rmSync(audioDir, { recursive: true, force: true });
  });

  async function far(scenario: string, keys?: Record<string, string>) {
    const log = path.join(audioDir, `${scenario}-${Date.now()}.log`);
    const sipp = await startSipp(scenario, {
      cwd: audioDir,
      messageLog: log,
      timeoutSeconds: 40,
      ...(keys ? { keys } : {}),
    });
    farEnds.push(sipp);
    return { ...sipp, log };
  }

  /** A provider whose calls are held by the test engine (or the scripted one). */
  async function provider(port: number, engine: 'actions' | 'scripted' = 'actions') {
    const sip = testSipProvider({ port }, shared.records, {
      engine: await loadConversationEngine(
        engine === 'actions' ? path.join(ROOT, 'test/fixtures/engines/actions.mjs') : 'scripted',
      ),
    });
    made.push(sip);
    return sip;
  }

  let next = 0;
  const request = (details: Record<string, unknown>): DialRequest => ({
    callId: `call_session_${process.pid}_${++next}`,
    to: '+14155550123',
    attempt: 1,
    agent: { id: 'agt_1', name: 'Agent', agentName: 'Ava', language: 'en-us', sipTrunkId: 'trk_1', details },
    contact: { id: 'cnt_1', name: 'Jordan' },
  });

  async function call(sip: TestSipProvider, details: Record<string, unknown>): Promise<CallEndedEvent> {
    const dial = request(details);
    await sip.sip.dial(dial);
    await expect.poll(() => sip.ended.length, { timeout: 40_000, interval: 100 }).toBe(1);
    const ended = sip.ended[0];
    if (!ended) throw new Error('no end');
    expect(ended.callId).toBe(dial.callId);
    return ended;
  }

  it('sends DTMF as RFC 4733 telephone-events in the payload type the answer gave them', async () => {
    const wire = dgram.createSocket('udp4');
    await new Promise<void>((resolve) => wire.bind(0, '127.0.0.1', () => resolve()));
    const packets: Buffer[] = [];
    wire.on('message', (packet) => packets.push(packet));
    try {
      const sipp = await far('dtmf', { dtmf_port: String(wire.address().port) });
      const sip = await provider(sipp.port);
      const ended = await call(sip, { testActions: [{ dtmf: '12#' }, { waitMs: 300 }] });
      expect(ended).toMatchObject({ status: 'COMPLETED', endedReason: 'agent-ended' });
      expect(ended.transcription).toEqual([{ role: 'assistant', content: 'dtmf 12#: sent' }]);
      expect(await sipp.done).toBe(0);
      // On the wire: payload type 96, one event per digit (its packets share a timestamp), the
      // first packet of each marked, the last three with the end bit.
      const events = packets.filter((packet) => (packet.readUInt8(1) & 0x7f) === 96);
      const byDigit = new Map<number, Buffer[]>();
      for (const packet of events) {
        const timestamp = packet.readUInt32BE(4);
        byDigit.set(timestamp, [...(byDigit.get(timestamp) ?? []), packet]);
      }
      const digits = [...byDigit.values()];
      expect(digits.map((digit) => digit[0]?.readUInt8(12))).toEqual([1, 2, 11]);
      for (const digit of digits) {
        expect((digit[0]?.readUInt8(1) ?? 0) & 0x80).toBe(0x80);
        expect(digit.filter((packet) => (packet.readUInt8(13) & 0x80) !== 0)).toHaveLength(3);
        expect(digit.at(-1)?.readUInt16BE(14)).toBe(800);
      }
      // The audio itself went to the same place, in PCMU.
      expect(packets.filter((packet) => (packet.readUInt8(1) & 0x7f) === 0).length).toBeGreaterThan(20);
    } finally {
      wire.close();
    }
  }, 60_000);

  it('does not send DTMF when the answer did not take telephone-events', async () => {
    const sipp = await far('hello-then-bye');
    const sip = await provider(sipp.port);
    const ended = await call(sip, { testActions: [{ dtmf: '5' }] });
    expect(ended.transcription).toEqual([{ role: 'assistant', content: 'dtmf 5: not negotiated' }]);
  }, 60_000);

  it('transfers by REFER: accepted (202, then NOTIFY 200) ends the call as transferred', async () => {
    const sipp = await far('refer');
    const sip = await provider(sipp.port);
    const ended = await call(sip, {
      testActions: [{ transfer: '+1 415 555 0199' }, { say: 'still here after the transfer' }],
    });
    expect(ended).toMatchObject({ status: 'COMPLETED', endedReason: 'transferred', error: null });
    expect(ended.transcription).toEqual([{ role: 'assistant', content: 'transfer: ok' }]);
    // sipp checked Refer-To and Referred-By, got our 200s to its NOTIFYs and our BYE.
    expect(await sipp.done).toBe(0);
    const log = fs.readFileSync(sipp.log, 'utf8');
    expect(log).toMatch(/^REFER sip:/m);
    expect(log).toMatch(/^Refer-To: <sip:\+14155550199@127\.0\.0\.1>/m);
    // sipp's log: each message after a line of dashes with its time.
    const messages = log.split(/^-{5,}.*$/m);
    const notifyAnswers = messages.filter(
      (text) => !/^NOTIFY /m.test(text) && /^SIP\/2\.0 200/m.test(text) && /^CSeq: \d+ NOTIFY/m.test(text),
    );
    expect(notifyAnswers).toHaveLength(2);
  }, 60_000);

  it('a declined transfer, or one whose target is busy, leaves the call going on', async () => {
    for (const [scenario, reason] of [
      ['refer-declined', /refused the transfer: SIP 603/],
      ['refer-busy', /target answered SIP 486/],
    ] as const) {
      const sipp = await far(scenario);
      const sip = await provider(sipp.port);
      const ended = await call(sip, {
        testActions: [{ transfer: '+14155550199' }, { say: 'let me take a message instead' }],
      });
      expect(ended).toMatchObject({ status: 'COMPLETED', endedReason: 'agent-ended' });
      expect(ended.transcription[0]?.content).toMatch(reason);
      expect(ended.transcription[1]).toEqual({ role: 'assistant', content: 'let me take a message instead' });
      expect(await sipp.done).toBe(0);
      await sip.dispose();
    }
  }, 90_000);

  it('leaves the voicemail message after the beep: VOICEMAIL, voicemail, and the recording holds it', async () => {
    const sipp = await far('voicemail');
    const sip = await provider(sipp.port, 'scripted');
    const message = 'Hi Jordan, this is Ava from Acme. Please call us back.';
    const dial = request({ voicemailMessage: 'Hi {{name}}, this is Ava from Acme. Please call us back.' });
    await sip.sip.dial({ ...dial, variables: { name: 'Jordan' } });
    await expect.poll(() => sip.ended.length, { timeout: 40_000, interval: 100 }).toBe(1);
    const ended = sip.ended[0];
    expect(ended).toMatchObject({ status: 'VOICEMAIL', endedReason: 'voicemail', error: null });
    expect(ended?.transcription).toEqual([{ role: 'assistant', content: message }]);
    expect(await sipp.done).toBe(0);

    // The recording: the beep on the right (what we heard); our speech on the left only after it.
    const recording = await sip.sip.recording({ id: dial.callId });
    expect(recording?.contentType).toBe('audio/wav');
    const { left, right } = channels(recording?.body ?? Buffer.alloc(44));
    const frame = 160;
    const frames = Math.floor(right.length / frame);
    const beep: number[] = [];
    for (let f = 0; f < frames; f++) {
      const slice = right.subarray(f * frame, (f + 1) * frame);
      if (rms(slice) > 1000 && toneShare(slice, 8000, 1000) > 0.8) beep.push(f);
    }
    expect(beep.length).toBeGreaterThan(30); // most of its second
    const beepEnd = Math.max(...beep);
    const spoken = [];
    for (let f = 0; f < frames; f++) if (rms(left.subarray(f * frame, (f + 1) * frame)) > 300) spoken.push(f);
    expect(spoken.length * 20).toBeGreaterThan(1500); // seconds of the message
    // The session hears each packet as it arrives, but the recording writes what we heard as it
    // leaves the jitter buffer (60 ms, 3 frames, later; more when a loaded machine's ticks slip):
    // in the file, the beep's last frames may overlap the message's first by that much, never more.
    // A message spoken over the beep (a second long) would start some 50 frames earlier.
    const playoutLagFrames = 5;
    expect(Math.min(...spoken)).toBeGreaterThan(beepEnd - playoutLagFrames);
  }, 60_000);

  it('the far end hanging up ends the call as callee-hung-up', async () => {
    const sipp = await far('hello-then-bye');
    const sip = await provider(sipp.port);
    const ended = await call(sip, { testActions: [{ waitMs: 30_000 }] });
    expect(ended).toMatchObject({ status: 'COMPLETED', endedReason: 'callee-hung-up', error: null });
    expect(await sipp.done).toBe(0);
  }, 60_000);

  it("hangs up at the agent's maxDurationSeconds as max-duration", async () => {
    const sipp = await far('dtmf', { dtmf_port: '9' }); // any far end that waits for our BYE
    const sip = await provider(sipp.port);
    const started = Date.now();
    const ended = await call(sip, { maxDurationSeconds: 3, testActions: [{ waitMs: 30_000 }] });
    expect(ended).toMatchObject({ status: 'COMPLETED', endedReason: 'max-duration' });
    expect(ended.duration).toBeGreaterThanOrEqual(3);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(await sipp.done).toBe(0);
  }, 60_000);
});

/** The two channels of a 16-bit stereo WAV with a 44-byte header. */
function channels(wav: Buffer): { left: Int16Array; right: Int16Array } {
  const frames = Math.floor((wav.length - 44) / 4);
  const left = new Int16Array(frames);
  const right = new Int16Array(frames);
  for (let i = 0; i < frames; i++) {
    left[i] = wav.readInt16LE(44 + i * 4);
    right[i] = wav.readInt16LE(46 + i * 4);
  }
  return { left, right };
}

function rms(samples: Int16Array): number {
  let sum = 0;
  for (const sample of samples) sum += sample * sample;
  return Math.sqrt(sum / Math.max(samples.length, 1));
}
