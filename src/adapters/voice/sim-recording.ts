import type { TranscriptEntry } from '../../domain/call.js';
import { PHONE_RATE } from '../../voice/audio/pcm.js';
import { encodeWav, wavHeader } from '../../voice/audio/wav.js';
import { synthesize } from '../speech/espeak.js';
import { Semaphore, SpeechToolError } from '../speech/tools.js';

/**
 * The simulator's recording of a call: its transcript spoken with espeak-ng, the agent and the
 * callee in two voices with a pause between turns, as 8 kHz 16-bit mono WAV. Without espeak-ng
 * the voiced tones of `synthesizeConversationWav` (below) stand in.
 */

/** The agent speaks in espeak-ng's American English voice, the callee in a female variant of it. */
export const RECORDING_VOICES: Record<TranscriptEntry['role'], string> = {
  assistant: 'en-us',
  user: 'en-us+f3',
};
/** A phone conversation's pace: 160 words a minute, 0.5 s between turns. */
const WORDS_PER_MINUTE = 160;
const PAUSE_SECONDS = 0.5;
/** Longest recording made: ten minutes of 8 kHz 16-bit mono is 9.6 MB. */
const MAX_SECONDS = 600;
/**
 * espeak-ng runs are child processes, but each turn's audio is resampled on the event loop (a few
 * ms per second of speech): two recordings at a time keep a burst of downloads from taking it over.
 */
const recordings = new Semaphore(2);

/**
 * The transcript spoken, at least `durationSeconds` long (silence after the last turn when the
 * speech is shorter), at most ten minutes; `spoken` false when tones stood in: espeak-ng is not
 * installed, or it failed or ran out of time (a busy host), when the recording is still served
 * but should not be kept.
 */
export async function spokenConversationWav(
  turns: TranscriptEntry[],
  durationSeconds: number,
): Promise<{ wav: Buffer; spoken: boolean }> {
  try {
    return { wav: await recordings.run(() => speak(turns, durationSeconds)), spoken: true };
  } catch (error) {
    if (error instanceof SpeechToolError) {
      return { wav: synthesizeConversationWav(turns, durationSeconds), spoken: false };
    }
    throw error;
  }
}

async function speak(turns: TranscriptEntry[], durationSeconds: number): Promise<Buffer> {
  const maxSamples = MAX_SECONDS * PHONE_RATE;
  const pause = Math.round(PAUSE_SECONDS * PHONE_RATE);
  const parts: Int16Array[] = [];
  let length = 0;
  for (const turn of turns) {
    if (length >= maxSamples) break;
    const text = turn.content.trim();
    if (text === '') continue;
    // One turn at a time (each a few seconds of audio), so the loop is never held for a whole call.
    const speech = await synthesize(text.slice(0, 2000), {
      voice: RECORDING_VOICES[turn.role],
      wordsPerMinute: WORDS_PER_MINUTE,
    });
    if (length > 0) length += pause; // the pause is the zeroes between parts
    parts.push(speech);
    length += speech.length;
  }
  const wanted = Math.min(MAX_SECONDS, Math.max(durationSeconds, 1)) * PHONE_RATE;
  const total = Math.min(Math.max(length, Math.round(wanted)), maxSamples);
  const body = Buffer.alloc(total * 2);
  let at = 0;
  for (const part of parts) {
    if (at >= total) break;
    const samples = part.subarray(0, total - at);
    Buffer.from(samples.buffer, samples.byteOffset, samples.length * 2).copy(body, at * 2);
    at += samples.length + pause;
  }
  return Buffer.concat([wavHeader(body.length, 1, PHONE_RATE), body]);
}

/** Seconds the transcript takes spoken at a phone conversation's pace (160 words a minute, 0.5 s pauses). */
export function spokenSeconds(turns: TranscriptEntry[]): number {
  const words = turns.reduce((sum, turn) => sum + (turn.content.match(/\S+/g)?.length ?? 0), 0);
  return (words * 60) / WORDS_PER_MINUTE + PAUSE_SECONDS * Math.max(turns.length - 1, 0);
}

/**
 * A stand-in recording: each transcript turn becomes a voiced tone (the agent lower, the contact
 * higher) whose length follows the turn's words, separated by short silences, stretched over the
 * call's duration. It is real 8 kHz PCM that any audio player plays.
 */
export function synthesizeConversationWav(turns: TranscriptEntry[], durationSeconds: number): Buffer {
  const seconds = Math.min(Math.max(durationSeconds, 1), MAX_SECONDS);
  const totalSamples = Math.round(seconds * PHONE_RATE);
  const pcm = new Int16Array(totalSamples);
  const weights = turns.map((turn) => Math.max(turn.content.split(/\s+/).length, 1));
  const totalWeight = weights.reduce((a, b) => a + b, 0) || 1;
  // 0.3 s between turns, less on a short call: four turns in a 1 s call would otherwise leave no
  // room for any tone at all (the gaps take at most a quarter of the recording).
  const gap = Math.min(
    Math.round(0.3 * PHONE_RATE),
    Math.floor(totalSamples / (4 * Math.max(turns.length, 1))),
  );
  const usable = Math.max(totalSamples - gap * turns.length, 0);
  let cursor = 0;
  turns.forEach((turn, index) => {
    const length = Math.floor((usable * (weights[index] ?? 1)) / totalWeight);
    const base = turn.role === 'assistant' ? 180 : 260;
    for (let i = 0; i < length && cursor + i < totalSamples; i++) {
      const t = i / PHONE_RATE;
      // A little vibrato and a syllable-rate envelope so it sounds like speech rather than a test tone.
      const freq = base + 25 * Math.sin(2 * Math.PI * 5 * t);
      const envelope = 0.55 + 0.45 * Math.sin(2 * Math.PI * 4 * t);
      pcm[cursor + i] = Math.round(9000 * envelope * Math.sin(2 * Math.PI * freq * t));
    }
    cursor += length + gap;
  });
  return encodeWav(pcm);
}
