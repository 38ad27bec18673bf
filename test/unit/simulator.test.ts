import fs from 'node:fs';
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import { LocalDiskRecordings } from '../../src/adapters/recordings/local-disk.js';
import { transcribe } from '../../src/adapters/speech/pocketsphinx.js';
import { synthesizeConversationWav } from '../../src/adapters/voice/sim-recording.js';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import { conversation, scriptFor, simulatedOutcome } from '../../src/adapters/voice/simulator-script.js';
import type { CallEndedEvent, DialRecord, DialRequest } from '../../src/ports.js';
import { spokenTurnOffsets, voicedStretches, wavSamples } from '../helpers/spoken.js';

/** The dial record of a call another process sent at `at` and left behind. */
const sent = (at: Date): DialRecord => ({
  callId: 'call_x',
  owner: 'gone',
  provider: 'simulator',
  state: 'sent',
  createdAt: at,
  sentAt: at,
  answeredAt: null,
  ended: null,
  ownerSeenAt: null,
});

const request = (to: string, attempt = 1, callId = `call_${to}_${attempt}`): DialRequest => ({
  callId,
  to,
  attempt,
  agent: { id: 'agt_1', name: 'Sales', agentName: 'Ava', language: 'en', sipTrunkId: null, details: {} },
  contact: { id: 'cnt_1', name: 'Jordan' },
});

describe('simulated outcomes by the last four digits', () => {
  it.each([
    ['+14155550001', 1, 'BUSY'],
    ['+14155550002', 1, 'NO_ANSWER'],
    ['+14155550003', 1, 'FAILED'],
    ['+14155550006', 1, 'BUSY'],
    ['+14155550007', 1, 'NO_ANSWER'],
  ])('%s on attempt %i is %s', (to, attempt, status) => {
    expect(simulatedOutcome(to, attempt)).toMatchObject({ kind: 'unanswered', status });
  });

  it('answers 0006 and 0007 from the second attempt on, and every other number at once', () => {
    expect(simulatedOutcome('+14155550006', 2).kind).toBe('conversation');
    expect(simulatedOutcome('+14155550007', 3).kind).toBe('conversation');
    expect(simulatedOutcome('+14155550004', 1).kind).toBe('voicemail');
    expect(simulatedOutcome('+14155550008', 1)).toEqual({ kind: 'conversation', script: 'do_not_call' });
    expect(simulatedOutcome('+14155550123', 1).kind).toBe('conversation');
  });

  it('varies the conversation with the number, the same number always the same', () => {
    const scripts = new Set(['+14155550123', '+14155550124', '+14155550125'].map(scriptFor));
    expect(scripts).toEqual(new Set(['interested', 'not_interested', 'callback']));
    expect(scriptFor('+14155550123')).toBe(scriptFor('+14155550123'));
  });

  it("uses the agent's and the contact's names in assistant and user turns", () => {
    for (const script of ['interested', 'not_interested', 'callback', 'do_not_call'] as const) {
      const turns = conversation(script, { agentName: 'Ava', contactName: 'Jordan' });
      expect(turns[0]?.role).toBe('assistant');
      expect(turns[0]?.content).toContain('Ava');
      expect(turns[0]?.content).toContain('Jordan');
      expect(turns.some((turn) => turn.role === 'user')).toBe(true);
    }
  });
});

/** A simulator whose reported ends are kept, in order. */
function listened(options: { ringMs: number; talkMs: number }) {
  const provider = new SimulatedVoiceProvider(options);
  const events: CallEndedEvent[] = [];
  provider.onCallEnded(async (event) => {
    events.push(event);
  });
  return { provider, events };
}

describe('SimulatedVoiceProvider', () => {
  it('ends a call after ring and talk time, once, even when dialed twice with the same id', async () => {
    const { provider, events } = listened({ ringMs: 10, talkMs: 40 });
    await provider.dial(request('+14155550123'));
    await provider.dial(request('+14155550123'));
    // One call was started, so one end can come: wait for it.
    expect(provider.dials).toHaveLength(1);
    await expect.poll(() => events.length).toBe(1);
    expect(events[0]).toMatchObject({ status: 'COMPLETED', duration: 1, error: null });
    expect(provider.dials).toHaveLength(1);
    await provider.close();
  });

  it('stops its ringing and talking canned calls on close without an end (lookup rebuilds them)', async () => {
    const { provider, events } = listened({ ringMs: 50, talkMs: 60_000 });
    await provider.dial(request('+14155550123'));
    await provider.dial(request('+14155550124'));
    await new Promise((resolve) => setTimeout(resolve, 100)); // one answered, talking
    await provider.dial(request('+14155550125')); // one ringing
    expect(provider.activeCalls).toBe(3);
    await provider.close();
    expect(provider.activeCalls).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(events).toEqual([]);
  });

  it('rebuilds a call it never saw from its dial time (restart reconciliation)', async () => {
    const provider = new SimulatedVoiceProvider({ ringMs: 1000, talkMs: 30_000 });
    const longAgo = new Date(Date.now() - 60_000);
    const state = await provider.lookup(request('+14155550002'), sent(longAgo));
    expect(state.ended).toMatchObject({ status: 'NO_ANSWER', duration: 0 });
    expect(state.ended?.endedAt.getTime()).toBe(longAgo.getTime() + 1000);

    const justNow = new Date();
    const running = await provider.lookup(request('+14155550123'), sent(justNow));
    expect(running).toEqual({ known: true, ended: null });
    expect(provider.activeCalls).toBe(1);
    await provider.close();
    expect(provider.dials).toHaveLength(0);
  });

  it('speaks the transcript with espeak-ng in its recording, two voices, at least the call duration', async () => {
    const provider = new SimulatedVoiceProvider({ ringMs: 0, talkMs: 0 });
    const turns = [
      { role: 'assistant' as const, content: 'I will call you back tomorrow morning.' },
      { role: 'user' as const, content: 'Thank you, bye.' },
    ];
    const recording = await provider.recording({ id: 'call_x', duration: 3, transcription: turns });
    expect(recording?.contentType).toBe('audio/wav');
    const wav = recording?.body ?? Buffer.alloc(0);
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    expect(wav.subarray(8, 12).toString()).toBe('WAVE');
    expect(wav.readUInt32LE(24)).toBe(8000);
    // Two turns of speech and a pause take longer than the 3 s given; the recording holds them all.
    const seconds = wav.readUInt32LE(40) / 2 / 8000;
    expect(seconds).toBeGreaterThan(3);
    // Each turn in its own voice: the agent's line spoken in the callee's voice is not in it.
    const pcm = wavSamples(wav);
    expect(await spokenTurnOffsets(pcm, turns)).toEqual([0, expect.any(Number)]);
    expect(await spokenTurnOffsets(pcm, [{ role: 'user', content: turns[0]?.content ?? '' }])).toEqual([-1]);
    // Speech, not the stand-in tones: pocketsphinx makes out the agent's words.
    const [, callee] = await spokenTurnOffsets(pcm, turns);
    expect(await transcribe(pcm.subarray(0, callee))).toMatch(/tomorrow/);
    // Asked again, the same recording comes back (kept, not made twice).
    expect((await provider.recording({ id: 'call_x', duration: 3, transcription: turns }))?.body).toBe(wav);
    expect(await provider.recording({ id: 'call_y', duration: 0, transcription: [] })).toBeNull();
  }, 60_000);

  it('keeps a spoken recording in the recording store and serves it from there', async () => {
    const dir = fs.mkdtempSync(`${os.tmpdir()}/sim-recordings-`);
    try {
      const recordings = new LocalDiskRecordings({ dir, retentionDays: 7 });
      const provider = new SimulatedVoiceProvider({ ringMs: 0, talkMs: 0, recordings });
      const turns = [{ role: 'assistant' as const, content: 'Kept on disk.' }];
      const made = await provider.recording({ id: 'call_kept', duration: 2, transcription: turns });
      expect(fs.readFileSync(`${dir}/call_kept.wav`).equals(made?.body ?? Buffer.alloc(0))).toBe(true);
      // Served from the store (whatever the transcript says now).
      const again = await provider.recording({ id: 'call_kept', duration: 2, transcription: [] });
      expect(again?.body.equals(made?.body ?? Buffer.alloc(0))).toBe(true);
      await provider.close();
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('falls back to voiced tones over the call duration without espeak-ng, and keeps none of them', async () => {
    const dir = fs.mkdtempSync(`${os.tmpdir()}/sim-recordings-`);
    const provider = new SimulatedVoiceProvider({
      ringMs: 0,
      talkMs: 0,
      recordings: new LocalDiskRecordings({ dir }),
    });
    const path = process.env.PATH;
    process.env.PATH = fs.mkdtempSync(`${os.tmpdir()}/no-espeak-`);
    let wav: Buffer;
    try {
      const turns = [
        { role: 'assistant' as const, content: 'A line never spoken before in these tests, 7371.' },
      ];
      wav =
        (await provider.recording({ id: 'call_tones', duration: 3, transcription: turns }))?.body ??
        Buffer.alloc(0);
    } finally {
      process.env.PATH = path;
    }
    expect(wav.readUInt32LE(40)).toBe(3 * 8000 * 2);
    const samples = new Int16Array(wav.buffer, wav.byteOffset + 44, 3 * 8000);
    expect(samples.some((s) => Math.abs(s) > 1000)).toBe(true);
    // Tones are not kept: once espeak-ng is there, the next request speaks it.
    expect(fs.readdirSync(dir)).toEqual([]);
    await provider.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('gives every turn its tone even on a 1 s call (the gaps shrink to fit)', () => {
    const turns = conversation('callback', { agentName: 'Ava', contactName: 'Jordan' });
    expect(turns).toHaveLength(4);
    const pcm = wavSamples(synthesizeConversationWav(turns, 1));
    expect(pcm.length).toBe(8000);
    expect(voicedStretches(pcm, 400)).toBe(4);
    // A 30 s call keeps the 0.3 s gaps.
    expect(voicedStretches(wavSamples(synthesizeConversationWav(turns, 30)), 0.29 * 8000)).toBe(4);
  });
});
