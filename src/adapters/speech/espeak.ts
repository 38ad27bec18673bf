/**
 * Speech out with espeak-ng: text to 8 kHz mono PCM, with a cache of recent prompts.
 */
import { PHONE_RATE } from '../../voice/audio/pcm.js';
import { resample } from '../../voice/audio/resample.js';
import { decodeWav } from '../../voice/audio/wav.js';
import { ESPEAK, runTool, SpeechToolError } from './tools.js';

export interface SynthesizeOptions {
  /** An espeak-ng voice, e.g. 'en-us', 'en-gb', 'en-us+f3'. */
  voice?: string;
  /** Speaking rate; espeak-ng accepts 80 to 450. */
  wordsPerMinute?: number;
  timeoutMs?: number;
}

const DEFAULT_VOICE = 'en-us';
const DEFAULT_WPM = 160;
/** espeak-ng renders many times faster than real time; 20 s covers a long prompt on a busy host. */
const SYNTHESIS_TIMEOUT_MS = 20_000;
/** About two minutes of speech at 160 words per minute; an agent's turn is far shorter. */
const MAX_TEXT_LENGTH = 2000;
/** Agents repeat their prompts; 64 entries of a few seconds each is about 5 MB at most. */
const CACHE_ENTRIES = 64;
const VOICE_PATTERN = /^[a-z0-9][a-z0-9_+-]{0,39}$/i;

/** A least-recently-used map of bounded size (a Map iterates in insertion order). */
class LruCache<K, V> {
  readonly #entries = new Map<K, V>();
  constructor(readonly capacity: number) {}

  get(key: K): V | undefined {
    const value = this.#entries.get(key);
    if (value !== undefined) {
      this.#entries.delete(key);
      this.#entries.set(key, value);
    }
    return value;
  }

  set(key: K, value: V): void {
    this.#entries.delete(key);
    this.#entries.set(key, value);
    for (const oldest of this.#entries.keys()) {
      if (this.#entries.size <= this.capacity) break;
      this.#entries.delete(oldest);
    }
  }

  /** Removes the entry only if it still holds `value` (it may have been evicted and replaced). */
  deleteIf(key: K, value: V): void {
    if (this.#entries.get(key) === value) this.#entries.delete(key);
  }

  get size(): number {
    return this.#entries.size;
  }
}

/** Finished or in-flight syntheses: two callers asking for the same prompt share one espeak-ng run. */
const speechCache = new LruCache<string, Promise<Int16Array>>(CACHE_ENTRIES);

/** Number of prompts held in the synthesis cache (for tests and metrics). */
export function synthesisCacheSize(): number {
  return speechCache.size;
}

/**
 * Speaks text with espeak-ng and returns 8 kHz mono PCM (espeak-ng's 22 050 Hz output, low-pass
 * filtered and resampled). The text goes on stdin, so quotes, leading dashes and angle brackets
 * are read as text (SSML is only parsed with -m, which is not given).
 */
export function synthesize(text: string, options: SynthesizeOptions = {}): Promise<Int16Array> {
  const voice = options.voice ?? DEFAULT_VOICE;
  const wpm = options.wordsPerMinute ?? DEFAULT_WPM;
  if (!VOICE_PATTERN.test(voice)) {
    return Promise.reject(new RangeError(`synthesize: invalid voice name ${JSON.stringify(voice)}`));
  }
  if (!Number.isInteger(wpm) || wpm < 80 || wpm > 450) {
    return Promise.reject(new RangeError(`synthesize: wordsPerMinute must be 80 to 450, got ${wpm}`));
  }
  if (text.length > MAX_TEXT_LENGTH) {
    return Promise.reject(new RangeError(`synthesize: text over ${MAX_TEXT_LENGTH} characters`));
  }
  if (text.trim() === '') return Promise.resolve(new Int16Array(0));

  const key = JSON.stringify([voice, wpm, text]);
  let pending = speechCache.get(key);
  if (!pending) {
    pending = runTool({
      tool: ESPEAK,
      // -b 1: the text is UTF-8; --stdin: read it all at once, up to the end of the stream.
      args: ['-v', voice, '-s', String(wpm), '-b', '1', '--stdin', '--stdout'],
      input: Buffer.from(text, 'utf8'),
      timeoutMs: options.timeoutMs ?? SYNTHESIS_TIMEOUT_MS,
    }).then((wav) => {
      const { rate, samples } = readWav(wav);
      return resample(samples, rate, PHONE_RATE);
    });
    const stored = pending;
    speechCache.set(key, stored);
    // A failure is not remembered: the next call tries again.
    stored.catch(() => speechCache.deleteIf(key, stored));
  }
  // A copy, so that a caller changing its buffer does not change the cached prompt.
  return pending.then((samples) => samples.slice());
}

/** Reads espeak-ng's WAV output (see decodeWav: the data runs to the end of the pipe's output). */
function readWav(wav: Buffer): { rate: number; samples: Int16Array } {
  try {
    return decodeWav(wav);
  } catch (error) {
    throw new SpeechToolError(ESPEAK, 'failed', `output: ${error instanceof Error ? error.message : error}`);
  }
}
