/**
 * Answering-machine detection on the first seconds of the audio received when a call is
 * answered. People answer with a short greeting ("Hello?") and then wait; machines play a long,
 * continuous greeting, often ended by a beep. So: a short burst of speech followed by silence is a
 * person; speech that runs on (with only the short pauses between words and sentences) or a
 * steady tone is a machine.
 */

export type AmdVerdict =
  | { kind: 'human'; atMs: number; reason: string }
  | { kind: 'machine'; atMs: number; reason: string }
  | { kind: 'unknown'; atMs: number; reason: string };

export interface AmdOptions {
  /** Frame length for the energy measure. */
  frameMs?: number;
  /** RMS (of 16-bit samples) above which a frame is voiced. */
  voiceRms?: number;
  /** Pauses shorter than this inside speech do not end it (between words and sentences). */
  maxPauseMs?: number;
  /** A greeting at most this long, then `silenceMs` of silence, is a person. */
  humanGreetingMs?: number;
  silenceMs?: number;
  /** Speech running longer than this is a recorded greeting. */
  machineGreetingMs?: number;
  /** Give up (unknown) after this much audio without a decision. */
  maxMs?: number;
}

const DEFAULTS: Required<AmdOptions> = {
  frameMs: 20,
  voiceRms: 500,
  maxPauseMs: 700,
  humanGreetingMs: 1500,
  silenceMs: 800,
  machineGreetingMs: 2500,
  maxMs: 6000,
};

/** Power of one frequency in a frame (Goertzel), relative to the frame's total power (0 to 1). */
export function toneShare(frame: Int16Array, sampleRate: number, frequency: number): number {
  const k = 2 * Math.cos((2 * Math.PI * frequency) / sampleRate);
  let s1 = 0;
  let s2 = 0;
  let total = 0;
  for (const sample of frame) {
    const s = sample + k * s1 - s2;
    s2 = s1;
    s1 = s;
    total += sample * sample;
  }
  if (total === 0) return 0;
  const power = s1 * s1 + s2 * s2 - k * s1 * s2;
  return Math.min(1, (2 * power) / (frame.length * total));
}

const BEEP_FREQUENCIES = [440, 500, 850, 1000, 1400, 2000];
/** A tone this long, holding most of the frame's power, is a beep. */
const BEEP_MS = 200;

/** Classifies the start of an answered call's received audio (16-bit mono PCM). */
export function detectAnsweringMachine(
  samples: Int16Array,
  sampleRate: number,
  options: AmdOptions = {},
): AmdVerdict {
  const o = { ...DEFAULTS, ...options };
  const frameLength = Math.round((sampleRate * o.frameMs) / 1000);
  let speechStart: number | null = null;
  let lastVoice = -1;
  let toneRun = 0;
  for (let index = 0; (index + 1) * frameLength <= samples.length; index++) {
    const at = index * o.frameMs;
    if (at > o.maxMs) break;
    const frame = samples.subarray(index * frameLength, (index + 1) * frameLength);
    let sum = 0;
    for (const sample of frame) sum += sample * sample;
    const rms = Math.sqrt(sum / frame.length);
    const voiced = rms >= o.voiceRms;

    const tonal = voiced && BEEP_FREQUENCIES.some((f) => toneShare(frame, sampleRate, f) > 0.8);
    toneRun = tonal ? toneRun + o.frameMs : 0;
    if (toneRun >= BEEP_MS) return { kind: 'machine', atMs: at + o.frameMs, reason: 'a beep' };

    if (voiced) {
      if (speechStart === null || at - lastVoice > o.maxPauseMs) {
        // A new stretch of speech: a person who said hello and then spoke again is still a person
        // if the first stretch already decided it, so only the first stretch matters here.
        speechStart ??= at;
      }
      lastVoice = at;
      if (at + o.frameMs - speechStart > o.machineGreetingMs) {
        return { kind: 'machine', atMs: at + o.frameMs, reason: 'a long greeting' };
      }
    } else if (speechStart !== null) {
      const greeting = lastVoice + o.frameMs - speechStart;
      if (at + o.frameMs - (lastVoice + o.frameMs) >= o.silenceMs) {
        return greeting <= o.humanGreetingMs
          ? { kind: 'human', atMs: at + o.frameMs, reason: 'a short greeting, then silence' }
          : { kind: 'machine', atMs: at + o.frameMs, reason: 'a long greeting' };
      }
    }
  }
  const heard = Math.min(Math.floor(samples.length / frameLength) * o.frameMs, o.maxMs);
  return speechStart === null
    ? { kind: 'unknown', atMs: heard, reason: 'silence' }
    : { kind: 'unknown', atMs: heard, reason: 'not enough audio to tell' };
}
