import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import { concatPcm } from '../../src/voice/audio/pcm.js';

/** Test audio: 16-bit mono PCM built from silence and tones, 8 kHz unless said otherwise. */

export const silence = (ms: number, rate = 8000) => new Int16Array(Math.round((rate * ms) / 1000));

export const tone = (frequency: number, ms: number, { rate = 8000, amplitude = 8000 } = {}) =>
  Int16Array.from({ length: Math.round((rate * ms) / 1000) }, (_, i) =>
    Math.round(amplitude * Math.sin((2 * Math.PI * frequency * i) / rate)),
  );

export const join = (...parts: Int16Array[]) => concatPcm(parts);

/**
 * Writes what a far end says as sipp plays it: `text` spoken by espeak-ng, as an 8 kHz u-law WAV
 * at `file`; with `beepMs`, a 1 kHz beep of that length follows (an answering machine's tone);
 * with `trailingMs`, that much silence ends it (sipp then keeps sending after the words, as a
 * phone does, instead of stopping its stream).
 * Returns the clip's length, where its speech starts (after espeak-ng's lead-in) and where it
 * ends (before the trailing silence), in ms.
 */
export function writeSpeechWav(
  file: string,
  text: string,
  { beepMs = 0, trailingMs = 0 } = {},
): { durationMs: number; onsetMs: number; endMs: number } {
  const raw = `${file}.raw.wav`;
  execFileSync('espeak-ng', ['-w', raw, text]);
  const ulaw = ['-r', '8000', '-c', '1', '-e', 'u-law'];
  if (beepMs > 0) {
    const beep = `${file}.beep.wav`;
    execFileSync('sox', ['-n', ...ulaw, beep, 'synth', String(beepMs / 1000), 'sine', '1000', 'vol', '0.5']);
    const speech = `${file}.speech.wav`;
    execFileSync('sox', [raw, ...ulaw, speech]);
    execFileSync('sox', [speech, beep, file]);
    fs.rmSync(beep);
    fs.rmSync(speech);
  } else {
    execFileSync('sox', [raw, ...ulaw, file]);
  }
  fs.rmSync(raw);
  if (trailingMs > 0) {
    const padded = `${file}.padded.wav`;
    execFileSync('sox', [file, padded, 'pad', '0', String(trailingMs / 1000)]);
    fs.renameSync(padded, file);
  }
  const pcm = execFileSync('sox', [file, '-t', 's16', '-']);
  const samples = new Int16Array(pcm.buffer, pcm.byteOffset, pcm.length >> 1);
  const loud = (sample: number) => Math.abs(sample) > 500;
  const first = Math.max(samples.findIndex(loud), 0);
  const last = samples.findLastIndex(loud);
  return {
    durationMs: Math.round(samples.length / 8),
    onsetMs: Math.round(first / 8),
    endMs: Math.round((last < 0 ? samples.length : last + 1) / 8),
  };
}
