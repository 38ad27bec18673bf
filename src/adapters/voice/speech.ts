/**
 * Offline speech tools for the phone conversation loop, all on 8 kHz 16-bit mono PCM: speech out
 * with espeak-ng, speech in with pocketsphinx (Debian's pocketsphinx_continuous and its en-us
 * model), and an utterance detector that cuts the received audio into turns. The resampler between
 * the tools' rates and the phone line's is src/voice/audio/resample.ts.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { AppError } from '../../domain/errors.js';
import { PHONE_RATE, toInt16 } from '../../voice/audio/pcm.js';
import { resample } from '../../voice/audio/resample.js';
import { decodeWav } from '../../voice/audio/wav.js';

const ESPEAK = 'espeak-ng';
const POCKETSPHINX = 'pocketsphinx_continuous';
/** Where Debian's pocketsphinx-en-us (0.8+5prealpha) puts the model. */
export const DEFAULT_MODEL_DIR = '/usr/share/pocketsphinx/model/en-us';
/** The en-us acoustic model was trained on 16 kHz audio (feat.params: upperf 6800 Hz). */
const MODEL_RATE = 16000;

export type SpeechTool = typeof ESPEAK | typeof POCKETSPHINX;
export type SpeechToolFailure = 'missing' | 'failed' | 'timeout';

/** A speech tool that is not installed, exited with an error, or ran past its timeout. */
export class SpeechToolError extends AppError {
  override name = 'SpeechToolError';
  constructor(
    readonly tool: SpeechTool,
    readonly reason: SpeechToolFailure,
    message: string,
  ) {
    super('PROVIDER_ERROR', `${tool}: ${message}`, { tool, reason });
  }
}

// ---------------------------------------------------------------------------------------------
// Running the tools

interface ToolRun {
  tool: SpeechTool;
  args: string[];
  /** Written to the tool's stdin; without it, stdin is closed. */
  input?: Buffer;
  timeoutMs: number;
}

/** Stdout larger than this is a runaway tool: 64 MB is 25 minutes of espeak-ng's 22 kHz audio. */
const MAX_STDOUT_BYTES = 64 * 1024 * 1024;
/** Only the end of stderr is kept, for the error message. */
const STDERR_TAIL = 2000;

/** Runs a tool without a shell, feeding `input` on stdin, and collects its stdout. */
function runTool({ tool, args, input, timeoutMs }: ToolRun): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const child = spawn(tool, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let failure: SpeechToolError | undefined;
    const fail = (reason: SpeechToolFailure, message: string) => {
      failure ??= new SpeechToolError(tool, reason, message);
      child.kill('SIGKILL');
    };
    const timer = setTimeout(() => fail('timeout', `no result within ${timeoutMs} ms`), timeoutMs);

    child.on('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        error.code === 'ENOENT'
          ? new SpeechToolError(tool, 'missing', 'not installed (not found on PATH)')
          : new SpeechToolError(tool, 'failed', error.message),
      );
    });
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_STDOUT_BYTES) fail('failed', `output over ${MAX_STDOUT_BYTES} bytes`);
      else chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-STDERR_TAIL);
    });
    // The tool may exit before reading all of its input (EPIPE): its exit status tells what happened.
    child.stdin.on('error', () => {});
    if (input) child.stdin.end(input);
    else child.stdin.end();

    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (failure) reject(failure);
      else if (code !== 0) {
        const detail = stderr.trim().split('\n').slice(-3).join(' | ');
        const status = signal ? `killed by ${signal}` : `exited with ${code}`;
        reject(new SpeechToolError(tool, 'failed', detail ? `${status}: ${detail}` : status));
      } else resolve(Buffer.concat(chunks));
    });
  });
}

/**
 * Whether the tool starts, found as spawn finds it (through PATH). Both print their usage or
 * version and exit within milliseconds; only "not found" matters, not the exit status.
 */
function installed(tool: SpeechTool): boolean {
  const probe = spawnSync(tool, tool === ESPEAK ? ['--version'] : [], { stdio: 'ignore', timeout: 5000 });
  return (probe.error as NodeJS.ErrnoException | undefined)?.code !== 'ENOENT';
}

interface ModelFiles {
  hmm: string;
  lm: string;
  dict: string;
}

function modelFiles(modelDir: string): ModelFiles {
  return {
    hmm: path.join(modelDir, 'en-us'),
    lm: path.join(modelDir, 'en-us.lm.bin'),
    dict: path.join(modelDir, 'cmudict-en-us.dict'),
  };
}

export interface SpeechToolsStatus {
  espeak: boolean;
  pocketsphinx: boolean;
  /** What to install, e.g. 'espeak-ng' or 'pocketsphinx-en-us (/usr/share/pocketsphinx/model/en-us)'. */
  missing: string[];
}

/** Whether espeak-ng and pocketsphinx (with its en-us model) are installed. */
export function speechToolsAvailable(options: { modelDir?: string } = {}): SpeechToolsStatus {
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  const missing: string[] = [];
  const espeak = installed(ESPEAK);
  if (!espeak) missing.push(ESPEAK);
  const binary = installed(POCKETSPHINX);
  if (!binary) missing.push(`pocketsphinx (${POCKETSPHINX})`);
  const model = Object.values(modelFiles(modelDir)).every((file) => fs.existsSync(file));
  if (!model) missing.push(`pocketsphinx-en-us (${modelDir})`);
  return { espeak, pocketsphinx: binary && model, missing };
}

// ---------------------------------------------------------------------------------------------
// Speech out: espeak-ng

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

// ---------------------------------------------------------------------------------------------
// Speech in: pocketsphinx

/** Counts permits; callers past the limit wait in order of arrival. */
export class Semaphore {
  #limit: number;
  #active = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(limit: number) {
    this.#limit = Semaphore.#check(limit);
  }

  static #check(limit: number): number {
    if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`Semaphore: limit ${limit}`);
    return limit;
  }

  get limit(): number {
    return this.#limit;
  }

  /** A higher limit starts waiters at once; a lower one takes effect as running tasks finish. */
  set limit(limit: number) {
    this.#limit = Semaphore.#check(limit);
    while (this.#active < this.#limit && this.#waiting.length > 0) {
      this.#active++;
      this.#waiting.shift()?.();
    }
  }

  get active(): number {
    return this.#active;
  }

  get queued(): number {
    return this.#waiting.length;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.#active >= this.#limit) await new Promise<void>((resolve) => this.#waiting.push(resolve));
    else this.#active++;
    try {
      return await task();
    } finally {
      this.#release();
    }
  }

  #release(): void {
    // While under the limit the permit passes straight to the next waiter.
    const next = this.#active <= this.#limit ? this.#waiting.shift() : undefined;
    if (next) next();
    else this.#active--;
  }
}

/** pocketsphinx uses one core per process; more processes than cores only slow each one down. */
const transcriptions = new Semaphore(os.availableParallelism());

/** Sets how many pocketsphinx processes may run at once (the default is the number of cores). */
export function setTranscriptionConcurrency(limit: number): void {
  transcriptions.limit = limit;
}

/** Transcriptions running and waiting for a free pocketsphinx slot. */
export function transcriptionLoad(): { running: number; queued: number } {
  return { running: transcriptions.active, queued: transcriptions.queued };
}

export interface TranscribeOptions {
  /** Rate of `pcm`; 8000 (the phone line) unless given. */
  sampleRate?: number;
  /** Directory of the en-us model (acoustic model, language model and dictionary). */
  modelDir?: string;
  /** Kills pocketsphinx after this long; the default grows with the audio's length. */
  timeoutMs?: number;
}

/**
 * Measured here (2 cores): loading the model takes 0.3 s, and a whole transcription of 3 s of
 * phone audio 1.1 to 1.9 s; the timeout leaves room for a machine many times busier.
 */
const TRANSCRIBE_BASE_TIMEOUT_MS = 15_000;
/** Frames quieter than -50 dBFS (RMS 104, as the utterance detector's floor) are not speech. */
const SPEECH_FLOOR_RMS = 104;
/**
 * Narrowband audio is given two noises before decoding, levels relative to the speech: one in the
 * missing band above 4 kHz (-18 dB), and a white one over the whole band (-25 dB), as on a real
 * line, so that the gaps of digital silence look like quiet rather than like nothing the model
 * has seen. Measured on 24 espeak-ng sentences at 8 kHz (3 voices and speeds, 129 words), cut by
 * the UtteranceDetector: plain upsampling recognised 11 words, these two noises 56; the high band
 * alone 32, the white noise alone 52, white at -35 dB 37 and at -15 dB 35. Running the model at
 * -samprate 8000 (-nfft 256, filters cut to 3.5 kHz) recognised 5 of 124 in an earlier round.
 */
const HIGH_BAND_NOISE_DB = -18;
const WHITE_NOISE_DB = -25;

/** RMS of the 20 ms frames louder than the speech floor; 0 when there are none. */
function speechLevel(pcm: Int16Array, rate: number): number {
  const frame = Math.max(1, Math.round(rate / 50));
  let sum = 0;
  let count = 0;
  for (let start = 0; start < pcm.length; start += frame) {
    const end = Math.min(pcm.length, start + frame);
    let energy = 0;
    for (let i = start; i < end; i++) energy += (pcm[i] ?? 0) ** 2;
    energy /= end - start;
    if (energy >= SPEECH_FLOOR_RMS ** 2) {
      sum += energy;
      count++;
    }
  }
  return count === 0 ? 0 : Math.sqrt(sum / count);
}

/** Deterministic white noise (xorshift32), so that a transcription is repeatable. */
function whiteNoise(length: number, seed: number): Int16Array {
  const out = new Int16Array(length);
  let state = seed;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = state % 8192;
  }
  return out;
}

/** Adds `noise` to `audio` in place, `db` below `speechRms`; `mirror` negates every other sample. */
function mixNoise(
  audio: Int16Array,
  noise: Int16Array,
  speechRms: number,
  db: number,
  mirror: boolean,
): void {
  const noiseRms = Math.sqrt(noise.reduce((sum, v) => sum + v * v, 0) / Math.max(1, noise.length));
  if (noiseRms === 0) return;
  const gain = (speechRms * 10 ** (db / 20)) / noiseRms;
  for (let i = 0; i < audio.length; i++) {
    const sign = mirror && i % 2 === 1 ? -1 : 1;
    audio[i] = toInt16((audio[i] ?? 0) + sign * (noise[i] ?? 0) * gain);
  }
}

/**
 * Prepares narrowband audio (upsampled from `sourceRate`) for the wideband model: without energy
 * above the source's Nyquist frequency the model's top filters see next to nothing and its
 * cepstra are far from anything it was trained on. The high-band noise is white noise
 * band-limited by the resampler and mirrored to the top of the band (multiplying by (-1)^n moves
 * f to 8 kHz - f).
 */
function addLineNoise(audio: Int16Array, sourceRate: number, speechRms: number): void {
  const missingRate = MODEL_RATE - sourceRate;
  if (missingRate >= 200) {
    const length = Math.ceil((audio.length * missingRate) / MODEL_RATE) + 1;
    const band = resample(whiteNoise(length, 0x2545f491), missingRate, MODEL_RATE);
    mixNoise(audio, band, speechRms, HIGH_BAND_NOISE_DB, true);
  }
  mixNoise(audio, whiteNoise(audio.length, 0x1234567), speechRms, WHITE_NOISE_DB, false);
}

/**
 * Transcribes one utterance with pocketsphinx and returns the recognised words in lower case
 * ('' for none). The en-us model is wideband (16 kHz, filter bank up to 6.8 kHz), so phone audio
 * is upsampled to 16 kHz and given some line noise (see `addLineNoise`). pocketsphinx_continuous
 * reads it as headerless 16-bit samples (`-infile` naming a file not ending in .wav) from a
 * temporary file: it fopen()s the path, which fails on the socket Node gives a child as stdin.
 */
export function transcribe(pcm: Int16Array, options: TranscribeOptions = {}): Promise<string> {
  const rate = options.sampleRate ?? PHONE_RATE;
  const modelDir = options.modelDir ?? DEFAULT_MODEL_DIR;
  const files = modelFiles(modelDir);
  // Checked here because with -logfn /dev/null pocketsphinx would only say "exited with 1".
  if (!Object.values(files).every((file) => fs.existsSync(file))) {
    const message = `en-us model not found in ${modelDir} (install pocketsphinx-en-us)`;
    return Promise.reject(new SpeechToolError(POCKETSPHINX, 'missing', message));
  }
  const level = speechLevel(pcm, rate);
  if (level === 0) return Promise.resolve('');
  const audio = resample(pcm, rate, MODEL_RATE);
  if (rate < MODEL_RATE) addLineNoise(audio, rate, level);
  const timeoutMs = options.timeoutMs ?? TRANSCRIBE_BASE_TIMEOUT_MS + (2 * 1000 * audio.length) / MODEL_RATE;
  const input = Buffer.from(audio.buffer, audio.byteOffset, audio.byteLength);
  return transcriptions.run(async () => {
    const file = path.join(os.tmpdir(), `outdial-asr-${randomUUID()}.raw`);
    try {
      await fs.promises.writeFile(file, input, { flag: 'wx', mode: 0o600 });
      const output = await runTool({
        tool: POCKETSPHINX,
        args: [
          '-infile',
          file,
          '-hmm',
          files.hmm,
          '-lm',
          files.lm,
          '-dict',
          files.dict,
          '-samprate',
          String(MODEL_RATE),
          '-logfn',
          '/dev/null',
        ],
        timeoutMs,
      });
      return parseHypotheses(output.toString('utf8'));
    } finally {
      await fs.promises.rm(file, { force: true });
    }
  });
}

/**
 * pocketsphinx_continuous prints one hypothesis line per stretch of speech its own VAD finds, and
 * with -logfn /dev/null nothing else; log-looking lines are skipped anyway, in case a build writes
 * them to stdout. Noise and filler tokens such as <sil>, [NOISE] or ++breath++ are dropped, and
 * alternate pronunciations ("read(2)") lose their suffix.
 */
export function parseHypotheses(stdout: string): string {
  const words: string[] = [];
  for (const line of stdout.split(/\r?\n/)) {
    if (/^(INFO|WARN|WARNING|ERROR|FATAL|DEBUG|SYSTEM_ERROR)\b/.test(line.trim())) continue;
    if (/^\s*[A-Za-z_]+\.c\(\d+\)/.test(line)) continue;
    for (const token of line.trim().split(/\s+/)) {
      if (!token || /^(<.*>|\[.*\]|\+\+.*\+\+)$/.test(token)) continue;
      words.push(token.replace(/\(\d+\)$/, '').toLowerCase());
    }
  }
  return words.join(' ');
}

// ---------------------------------------------------------------------------------------------
// Turn taking: where an utterance starts and ends

export interface UtteranceDetectorOptions {
  /** Rate of the frames pushed; 8000 unless given. */
  sampleRate?: number;
  /** Silence after speech that ends the utterance. */
  endSilenceMs?: number;
  /** An utterance is cut (and handed back) at this length, leading context included. */
  maxUtteranceMs?: number;
  /** Audio kept from before the start, so that soft first consonants are not lost. */
  leadingMs?: number;
  /** Silence kept after the last speech of an utterance. */
  trailingMs?: number;
  /** Voiced audio needed to start an utterance: a click or a cough shorter than this is not one. */
  minSpeechMs?: number;
  /** A frame is voiced when its level is this far above the noise floor... */
  marginDb?: number;
  /** ...and above this absolute level (dB relative to full scale). */
  minLevelDb?: number;
}

export interface UtteranceEvent {
  /** An utterance began with this frame. */
  started?: boolean;
  /** A finished utterance: leading context, the speech, and `trailingMs` of what followed. */
  utterance?: Int16Array;
  /** Why it ended: enough silence, or the length limit. */
  reason?: 'silence' | 'max-length';
}

const DETECTOR_DEFAULTS: Required<UtteranceDetectorOptions> = {
  sampleRate: PHONE_RATE,
  endSilenceMs: 700,
  maxUtteranceMs: 15_000,
  leadingMs: 200,
  trailingMs: 200,
  minSpeechMs: 60,
  // Speech syllables sit 20-40 dB above a phone line's hiss; 10 dB keeps soft endings voiced.
  marginDb: 10,
  // -50 dBFS is an RMS of about 100: quieter is line noise, not a voice.
  minLevelDb: -50,
};

/** The noise floor falls fast (to track quiet gaps between words) and rises slowly, 3 dB a second. */
const FLOOR_FALL = 0.3;
const FLOOR_RISE_DB_PER_SECOND = 3;
const SILENCE_DB = -96;

function levelDb(frame: Int16Array): number {
  if (frame.length === 0) return SILENCE_DB;
  let sum = 0;
  for (const sample of frame) sum += sample * sample;
  const rms = Math.sqrt(sum / frame.length) / 32768;
  return rms > 0 ? Math.max(SILENCE_DB, 20 * Math.log10(rms)) : SILENCE_DB;
}

/**
 * Whether a frame is voiced, by its level against an adaptive noise floor: the energy voice
 * activity of the utterance detector, and of the LLM engine when Silero VAD cannot load.
 */
export class EnergyVoicing {
  readonly #sampleRate: number;
  readonly #marginDb: number;
  readonly #minLevelDb: number;
  /** The line's noise level; the first frame sets it (nobody speaks in the first 20 ms of a call). */
  #floorDb: number | null = null;

  constructor(options: Pick<UtteranceDetectorOptions, 'sampleRate' | 'marginDb' | 'minLevelDb'> = {}) {
    this.#sampleRate = options.sampleRate ?? DETECTOR_DEFAULTS.sampleRate;
    this.#marginDb = options.marginDb ?? DETECTOR_DEFAULTS.marginDb;
    this.#minLevelDb = options.minLevelDb ?? DETECTOR_DEFAULTS.minLevelDb;
  }

  voiced(frame: Int16Array): boolean {
    const level = levelDb(frame);
    const floor = this.#floorDb ?? level;
    const voiced = level >= this.#minLevelDb && level >= floor + this.#marginDb;
    if (level < floor) this.#floorDb = floor + (level - floor) * FLOOR_FALL;
    else {
      const rise = (FLOOR_RISE_DB_PER_SECOND * frame.length) / this.#sampleRate;
      this.#floorDb = Math.min(level, floor + rise);
    }
    return voiced;
  }

  /** Forgets the learnt noise floor. */
  reset(): void {
    this.#floorDb = null;
  }
}

/**
 * Energy-based voice activity with an adaptive noise floor. Feed it the received audio in frames
 * (20 ms, 160 samples at 8 kHz, is usual; any length works): it says when an utterance starts and
 * hands back the whole utterance once `endSilenceMs` of silence follows it, or once it reaches
 * `maxUtteranceMs` (then the next voiced frames start a new one).
 */
export class UtteranceDetector {
  readonly #o: Required<UtteranceDetectorOptions>;
  /** The durations of the options, in samples. */
  readonly #endSilence: number;
  readonly #limit: number;
  readonly #leading: number;
  readonly #trailing: number;
  readonly #minSpeech: number;
  readonly #voicing: EnergyVoicing;
  /** Recent frames while idle, for the leading context. */
  #recent: Int16Array[] = [];
  #recentSamples = 0;
  /** Voiced audio seen while idle, not yet long enough to start. */
  #candidateSamples = 0;
  /** The utterance so far, when in one. */
  #frames: Int16Array[] | null = null;
  #samples = 0;
  /** Samples since the last voiced frame, and the utterance's length at that frame. */
  #silentSamples = 0;
  #voicedEnd = 0;

  constructor(options: UtteranceDetectorOptions = {}) {
    this.#o = { ...DETECTOR_DEFAULTS, ...options };
    const samples = (ms: number) => Math.round((ms * this.#o.sampleRate) / 1000);
    this.#endSilence = samples(this.#o.endSilenceMs);
    this.#limit = samples(this.#o.maxUtteranceMs);
    this.#leading = samples(this.#o.leadingMs);
    this.#trailing = samples(this.#o.trailingMs);
    this.#minSpeech = samples(this.#o.minSpeechMs);
    this.#voicing = new EnergyVoicing(this.#o);
    if (this.#limit <= this.#leading + this.#minSpeech) {
      throw new RangeError('UtteranceDetector: maxUtteranceMs must exceed leadingMs + minSpeechMs');
    }
  }

  /** Whether an utterance is under way. */
  get inUtterance(): boolean {
    return this.#frames !== null;
  }

  push(frame: Int16Array): UtteranceEvent {
    const voiced = this.#voicing.voiced(frame);
    const copy = frame.slice();
    if (this.#frames === null) return this.#idle(copy, voiced);

    this.#frames.push(copy);
    this.#samples += copy.length;
    if (voiced) {
      this.#silentSamples = 0;
      this.#voicedEnd = this.#samples;
    } else this.#silentSamples += copy.length;

    if (this.#silentSamples >= this.#endSilence) {
      return { utterance: this.#finish(this.#speechEnd()), reason: 'silence' };
    }
    if (this.#samples >= this.#limit) {
      // Cut at the limit, or where the speech stopped if that was more than `trailingMs` ago.
      const keep = this.#silentSamples > this.#trailing ? this.#speechEnd() : this.#limit;
      const all = this.#finish(this.#samples);
      // What follows the cut is context for the next utterance, which starts as soon as the
      // speech is heard to go on (`minSpeechMs`), so no audio falls between the two.
      const step = Math.max(copy.length, 1);
      for (let at = keep; at < all.length; at += step) this.#remember(all.slice(at, at + step));
      return { utterance: all.slice(0, keep), reason: 'max-length' };
    }
    return {};
  }

  /** Ends the call: hands back the utterance under way, if any (its trailing silence trimmed). */
  flush(): Int16Array | undefined {
    return this.#frames === null ? undefined : this.#finish(this.#speechEnd());
  }

  /** Forgets everything, including the learnt noise floor. */
  reset(): void {
    this.#voicing.reset();
    this.#recent = [];
    this.#recentSamples = 0;
    this.#candidateSamples = 0;
    this.#finish(0);
  }

  /** The utterance's length up to `trailingMs` after its last voiced frame. */
  #speechEnd(): number {
    return Math.min(this.#samples, this.#voicedEnd + this.#trailing);
  }

  #remember(frame: Int16Array): void {
    this.#recent.push(frame);
    this.#recentSamples += frame.length;
  }

  #idle(frame: Int16Array, voiced: boolean): UtteranceEvent {
    this.#remember(frame);
    this.#candidateSamples = voiced ? this.#candidateSamples + frame.length : 0;
    // Keep the voiced run so far and up to `leadingMs` before it.
    this.#trimRecent(this.#candidateSamples + this.#leading);
    if (this.#candidateSamples < this.#minSpeech) return {};
    this.#frames = this.#recent;
    this.#samples = this.#recentSamples;
    this.#voicedEnd = this.#samples;
    this.#silentSamples = 0;
    this.#recent = [];
    this.#recentSamples = 0;
    this.#candidateSamples = 0;
    return { started: true };
  }

  /** Drops whole frames from the front while the rest still holds `wanted` samples. */
  #trimRecent(wanted: number): void {
    for (let first = this.#recent[0]; first; first = this.#recent[0]) {
      if (this.#recentSamples - first.length < wanted) break;
      this.#recent.shift();
      this.#recentSamples -= first.length;
    }
  }

  /** Ends the utterance under way, returning its first `keep` samples. */
  #finish(keep: number): Int16Array {
    const out = new Int16Array(keep);
    let at = 0;
    for (const frame of this.#frames ?? []) {
      if (at >= keep) break;
      const part = frame.subarray(0, keep - at);
      out.set(part, at);
      at += part.length;
    }
    this.#frames = null;
    this.#samples = 0;
    this.#silentSamples = 0;
    this.#voicedEnd = 0;
    return out;
  }
}
