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
/** The reason of a machine verdict made on a beep (the greeting is over once the tone stops). */
export const BEEP_REASON = 'a beep';
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
    if (toneRun >= BEEP_MS) return { kind: 'machine', atMs: at + o.frameMs, reason: BEEP_REASON };

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

/** Subscribes to received 20 ms frames; returns the unsubscribe (CallTransport.onAudio). */
type Listen = (listener: (frame: Int16Array, receivedAt: number) => void) => () => void;

/**
 * Listens to an answered call's first audio until the detector decides, every 200 ms; after
 * `maxMs` of audio without a decision (silence, or speech that neither ended nor ran long) the
 * verdict is unknown, which callers take for a person. The call ending stops it (unknown).
 */
export function listenForVerdict(listen: Listen, signal: AbortSignal, maxMs: number): Promise<AmdVerdict> {
  const frames: Int16Array[] = [];
  return new Promise<AmdVerdict>((resolve) => {
    let stop = () => {};
    const finish = (verdict: AmdVerdict) => {
      stop();
      signal.removeEventListener('abort', ended);
      resolve(verdict);
    };
    const ended = () => finish({ kind: 'unknown', atMs: frames.length * 20, reason: 'the call ended' });
    if (signal.aborted) {
      ended();
      return;
    }
    stop = listen((frame) => {
      frames.push(frame);
      if (frames.length % 10 !== 0) return;
      const heard = new Int16Array(frames.length * frame.length);
      frames.forEach((f, i) => {
        heard.set(f, i * frame.length);
      });
      const verdict = detectAnsweringMachine(heard, 8000, { maxMs });
      if (verdict.kind !== 'unknown' || frames.length * 20 >= maxMs) finish(verdict);
    });
    signal.addEventListener('abort', ended, { once: true });
  });
}

export interface GreetingEndOptions {
  /** Silence after speech that ends a greeting without a beep (default 1500 ms). */
  silenceMs?: number;
  /** Give up waiting after this long and go on (default 30 s). */
  maxWaitMs?: number;
  /** The verdict already heard the beep: the greeting ends when the tone stops. */
  beepHeard?: boolean;
}

/**
 * After a machine verdict: waits for the end of the greeting, that is the end of its beep (a
 * tone of 200 ms or more, then anything else), or `silenceMs` of silence, or `maxWaitMs`.
 * Resolves with what ended it; the call ending resolves it too ('ended').
 */
export function waitForGreetingEnd(
  listen: Listen,
  signal: AbortSignal,
  options: GreetingEndOptions = {},
): Promise<'beep' | 'silence' | 'timeout' | 'ended'> {
  const silenceMs = options.silenceMs ?? 1500;
  const maxWaitMs = options.maxWaitMs ?? 30_000;
  return new Promise((resolve) => {
    let stop = () => {};
    let toneMs = 0;
    let beep = options.beepHeard ?? false;
    let quietMs = 0;
    let heardMs = 0;
    const finish = (why: 'beep' | 'silence' | 'timeout' | 'ended') => {
      stop();
      signal.removeEventListener('abort', ended);
      resolve(why);
    };
    const ended = () => finish('ended');
    if (signal.aborted) {
      ended();
      return;
    }
    stop = listen((frame) => {
      heardMs += 20;
      if (heardMs >= maxWaitMs) return finish('timeout');
      let sum = 0;
      for (const sample of frame) sum += sample * sample;
      const voiced = Math.sqrt(sum / frame.length) >= DEFAULTS.voiceRms;
      const tonal = voiced && BEEP_FREQUENCIES.some((f) => toneShare(frame, 8000, f) > 0.8);
      if (tonal) {
        toneMs += 20;
        if (toneMs >= BEEP_MS) beep = true;
        quietMs = 0;
        return;
      }
      toneMs = 0;
      if (beep) return finish('beep');
      quietMs = voiced ? 0 : quietMs + 20;
      if (quietMs >= silenceMs) finish('silence');
    });
    signal.addEventListener('abort', ended, { once: true });
  });
}
