import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import { RECORDING_VOICES } from '../../src/adapters/voice/sim-recording.js';
import type { TranscriptEntry } from '../../src/domain/call.js';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { spokenTurnOffsets, voicedStretches, wavSamples } from '../helpers/spoken.js';

const RATE = 8000;
/** The pause sim-recording.ts leaves between two spoken turns: 0.5 s. */
const PAUSE = 0.5 * RATE;

/**
 * GET /api/v1/calls/{callId}/recording.wav of a simulated call, as a user downloads it from the
 * call's recordingUrl: its transcript spoken with espeak-ng (installed here, as in CI), and the
 * voiced tones when espeak-ng is not on the PATH.
 */
describe('the recording of a simulated call', () => {
  let t: TestApp;
  let alice: Account;
  beforeAll(async () => {
    // Calls of 4 s, so the tones stand-in has room for every turn and its gaps.
    t = await startTestApp({ env: { OUTDIAL_SIM_TALK_MS: '4000' } });
    alice = await t.createAccount();
  });
  afterAll(() => t.close());

  /** Places a call to `to` for `name`, waits for its end and downloads its recording. */
  const callAndDownload = async (to: string, name: string, path = process.env.PATH) => {
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to, agentConfigId: alice.agentId, callerDetails: { name } },
    });
    expect(dial.statusCode).toBe(200);
    const callId = dial.json<{ callId: string }>().callId;
    const call = await eventually(async () => {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/call/check-status?callId=${callId}`,
        key: alice.key,
      });
      const data = res.json<{
        data: {
          status: string;
          duration: number;
          transcription: TranscriptEntry[];
          recordingUrl: string | null;
        };
      }>().data;
      return data.status === 'COMPLETED' && data.recordingUrl ? data : undefined;
    }, 15_000);
    const original = process.env.PATH;
    process.env.PATH = path;
    try {
      return { call, wav: await download(call.recordingUrl ?? '') };
    } finally {
      process.env.PATH = original;
    }
  };
  /** The recording behind a signed recordingUrl, fetched as a browser would (no key). */
  const download = async (recordingUrl: string) => {
    const link = new URL(recordingUrl);
    const res = await t.request({ method: 'GET', url: `${link.pathname}${link.search}` });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('audio/wav');
    return res.rawPayload;
  };

  it('speaks each turn of the transcript in order, a pause between them, for at least the call', async () => {
    const { call, wav } = await callAndDownload('+14155550123', 'Jordan');
    expect(call.transcription.map((turn) => turn.content)).toEqual([
      'Hi Jordan, this is Ava. Do you have a minute to talk?',
      'I am in a meeting right now. Can you call me back tomorrow morning?',
      'Of course, Jordan. I will call you back tomorrow morning.',
      'Thank you, bye.',
    ]);
    expect(wav.subarray(0, 4).toString()).toBe('RIFF');
    expect(wav.readUInt32LE(24)).toBe(RATE);
    const pcm = wavSamples(wav);
    // Every turn is there, as espeak-ng speaks it in its role's voice, and right after the one
    // before it and its pause: the recording is the transcript spoken, nothing else between.
    const offsets = await spokenTurnOffsets(pcm, call.transcription);
    expect(offsets[0]).toBe(0);
    const speech = await spokenLengths(call.transcription);
    for (let i = 1; i < offsets.length; i++) {
      expect(offsets[i], `turn ${i}`).toBe((offsets[i - 1] ?? 0) + (speech[i - 1] ?? 0) + PAUSE);
      // The pause is silence.
      const gap = pcm.subarray((offsets[i - 1] ?? 0) + (speech[i - 1] ?? 0), offsets[i]);
      expect(gap.every((sample) => sample === 0)).toBe(true);
    }
    // Four turns take longer than the 4 s call: the recording holds them all, and no more.
    const spoken = (offsets.at(-1) ?? 0) + (speech.at(-1) ?? 0);
    expect(pcm.length).toBe(Math.max(spoken, call.duration * RATE));
    expect(pcm.length / RATE).toBeGreaterThan(call.duration);
  }, 60_000);

  it('is the voiced tones over the call when espeak-ng is not installed: one per turn, nothing spoken', async () => {
    // A name never spoken before in this process, so that no cached speech stands in for espeak-ng.
    const name = `Quinn ${randomBytes(3).toString('hex')}`;
    const noEspeak = fs.mkdtempSync(`${os.tmpdir()}/no-espeak-`);
    try {
      const { call, wav } = await callAndDownload('+14155550123', name, noEspeak);
      const pcm = wavSamples(wav);
      // Exactly the call's duration, as the tones stand-in makes it.
      expect(pcm.length).toBe(call.duration * RATE);
      // One voiced stretch per turn, apart by silences of at least 0.3 s.
      expect(voicedStretches(pcm, 0.25 * RATE)).toBe(call.transcription.length);
      // And none of the turns is speech in it.
      expect(await spokenTurnOffsets(pcm, call.transcription.slice(1))).toEqual([-1, -1, -1]);
      // espeak-ng back on the PATH: the same call's recording is spoken now (tones were not kept).
      const again = await download(call.recordingUrl ?? '');
      expect(await spokenTurnOffsets(wavSamples(again), call.transcription)).toEqual([
        0,
        expect.any(Number),
        expect.any(Number),
        expect.any(Number),
      ]);
    } finally {
      fs.rmSync(noEspeak, { recursive: true, force: true });
    }
  }, 60_000);
});

/** The number of samples espeak-ng gives each turn in its role's voice (as the recording speaks it). */
async function spokenLengths(turns: TranscriptEntry[]): Promise<number[]> {
  return Promise.all(
    turns.map(
      async (turn) =>
        (await synthesize(turn.content, { voice: RECORDING_VOICES[turn.role], wordsPerMinute: 160 })).length,
    ),
  );
}
