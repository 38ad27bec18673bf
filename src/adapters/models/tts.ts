/**
 * Text-to-speech: any OpenAI-compatible `/v1/audio/speech` (OpenAI, Groq, speaches,
 * Kokoro-FastAPI, LocalAI, vLLM), streamed and resampled to the phone line's 8 kHz as it arrives;
 * espeak-ng offline when none is configured.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Agent, request } from 'undici';
import { PHONE_RATE } from '../../voice/audio/pcm.js';
import { Resampler } from '../../voice/audio/resample.js';
import type { SpeechOptions, TextToSpeech } from '../../voice/contracts.js';
import { synthesize } from '../speech/espeak.js';
import { ModelError } from './errors.js';
import { authHeaders, endpointUrl, RequestDeadline, requestFailure, throwStatus } from './http.js';
import { DEFAULT_ESPEAK_VOICE, espeakVoice } from './languages.js';

/** OpenAI's `pcm` format: 24 kHz, 16-bit little-endian, mono, no header. */
export const OPENAI_PCM_RATE = 24_000;
/** The voice sent when the agent has no voiceId: one every OpenAI-compatible server in the docs has. */
export const DEFAULT_OPENAI_VOICE = 'alloy';

export interface OpenAiTextToSpeechOptions {
  /** Base URL (…/v1) or the speech URL itself. */
  url: string;
  apiKey?: string | null;
  model: string;
  /** Voice when the agent has no voiceId. Default 'alloy'. */
  defaultVoice?: string;
  /** Rate of headerless `pcm` answers. Default 24 000, as OpenAI, Kokoro-FastAPI and speaches send. */
  pcmRate?: number;
  /** Milliseconds from the request to the first audio byte. Default 10 000. */
  firstByteTimeoutMs?: number;
  /** Milliseconds allowed between two pieces of audio. Default 10 000. */
  idleTimeoutMs?: number;
}

/** The format of an answer, learnt from its first bytes: a WAV header, or raw PCM. */
type Decoding = { kind: 'pending' } | { kind: 'pcm'; channels: number; resampler: Resampler };

/** A WAV header longer than this is not one a speech server sends. */
const MAX_WAV_HEADER = 64 * 1024;

/**
 * Turns a speech answer's bytes (any chunking, samples cut between chunks) into 8 kHz PCM pieces:
 * raw 16-bit PCM at `pcmRate`, or a streamed WAV file whose header gives rate and channels.
 */
export class SpeechDecoder {
  #decoding: Decoding = { kind: 'pending' };
  #held = Buffer.alloc(0);

  constructor(readonly pcmRate: number) {}

  push(bytes: Uint8Array): Int16Array {
    this.#held = this.#held.length === 0 ? Buffer.from(bytes) : Buffer.concat([this.#held, bytes]);
    const decoding = this.#decoding.kind === 'pcm' ? this.#decoding : this.#start();
    if (!decoding) return new Int16Array(0);
    this.#decoding = decoding;
    return this.#samples(decoding);
  }

  flush(): Int16Array {
    if (this.#decoding.kind === 'pending') {
      if (this.#held.length === 0) return new Int16Array(0);
      // Fewer than 12 bytes in all, or a header cut short: not audio worth a word.
      if (this.#held.toString('ascii', 0, 4) === 'RIFF' || this.#held.length < 12) return new Int16Array(0);
      this.#decoding = { kind: 'pcm', channels: 1, resampler: new Resampler(this.pcmRate, PHONE_RATE) };
    }
    const decoding = this.#decoding;
    const last = this.#samples(decoding);
    const tail = decoding.resampler.flush();
    const out = new Int16Array(last.length + tail.length);
    out.set(last);
    out.set(tail, last.length);
    return out;
  }

  /** Decides the format once enough bytes are in; undefined while a WAV header is incomplete. */
  #start(): Extract<Decoding, { kind: 'pcm' }> | undefined {
    const bytes = this.#held;
    if (bytes.length < 12) return undefined;
    if (bytes.toString('ascii', 0, 4) !== 'RIFF') {
      return { kind: 'pcm', channels: 1, resampler: new Resampler(this.pcmRate, PHONE_RATE) };
    }
    if (bytes.toString('ascii', 8, 12) !== 'WAVE') throw new Error('a RIFF answer that is not WAVE');
    let rate = 0;
    let channels = 1;
    let at = 12;
    while (at + 8 <= bytes.length) {
      const id = bytes.toString('ascii', at, at + 4);
      const size = bytes.readUInt32LE(at + 4);
      if (id === 'data') {
        if (rate === 0) throw new Error('a WAV answer without its format before the data');
        this.#held = bytes.subarray(at + 8);
        return { kind: 'pcm', channels, resampler: new Resampler(rate, PHONE_RATE) };
      }
      if (at + 8 + size > bytes.length) break;
      if (id === 'fmt ') {
        const format = bytes.readUInt16LE(at + 8);
        channels = bytes.readUInt16LE(at + 10);
        rate = bytes.readUInt32LE(at + 12);
        const bits = bytes.readUInt16LE(at + 22);
        if ((format !== 1 && format !== 0xfffe) || bits !== 16 || channels < 1 || rate <= 0) {
          throw new Error(`an unsupported WAV answer (${format}/${channels}ch/${bits}bit; 16-bit PCM only)`);
        }
      }
      at += 8 + size + (size % 2);
    }
    if (bytes.length > MAX_WAV_HEADER) throw new Error('a WAV answer whose header does not end');
    return undefined;
  }

  /** Whole sample frames held, mixed to mono and resampled; an odd byte waits for the next chunk. */
  #samples(decoding: Extract<Decoding, { kind: 'pcm' }>): Int16Array {
    const frameBytes = 2 * decoding.channels;
    const frames = Math.floor(this.#held.length / frameBytes);
    if (frames === 0) return new Int16Array(0);
    const mono = new Int16Array(frames);
    for (let i = 0; i < frames; i++) {
      let sum = 0;
      for (let c = 0; c < decoding.channels; c++) sum += this.#held.readInt16LE(i * frameBytes + 2 * c);
      mono[i] = Math.round(sum / decoding.channels);
    }
    this.#held = this.#held.subarray(frames * frameBytes);
    return decoding.resampler.push(mono);
  }
}

/** How servers refuse a response_format they do not have (a validation error). */
const REFUSED_FORMAT = new Set([400, 415, 422]);

/** Content types that are audio this client cannot decode (the server ignored response_format). */
const COMPRESSED = /mpeg|mp3|ogg|opus|aac|flac|webm/i;

/** Speaks through an OpenAI-compatible speech server, asking for `pcm` and streaming it out. */
export class OpenAiTextToSpeech implements TextToSpeech {
  readonly name: string;
  readonly #endpoint: string;
  readonly #http = new Agent({ keepAliveTimeout: 30_000, connect: { timeout: 5_000 } });
  /** 'pcm' until the server refuses it. */
  #format: 'pcm' | 'wav' = 'pcm';

  constructor(private readonly options: OpenAiTextToSpeechOptions) {
    this.name = `openai:${options.model}`;
    this.#endpoint = endpointUrl(options.url, '/audio/speech');
  }

  synthesize(text: string, options: SpeechOptions = {}): AsyncIterable<Int16Array> {
    return this.#speak(text, options, {
      firstTimeout: this.options.firstByteTimeoutMs ?? 10_000,
      idleTimeout: this.options.idleTimeoutMs ?? 10_000,
    });
  }

  /**
   * A dependency probe (ports.ts `DependencyProber`): a real synthesis of "OK", answered when its
   * first audio arrives (the rest is not waited for). Rejects with a ModelError naming the status,
   * the network failure, or the `timeoutMs` (default 5000).
   */
  async probe(options: { timeoutMs?: number } = {}): Promise<void> {
    const timeoutMs = options.timeoutMs ?? 5000;
    for await (const _audio of this.#speak('OK', {}, { firstTimeout: timeoutMs, idleTimeout: timeoutMs })) {
      return;
    }
    throw new ModelError('tts', 'malformed', `${this.#endpoint} answered no audio`);
  }

  async *#speak(
    text: string,
    options: SpeechOptions,
    { firstTimeout, idleTimeout }: { firstTimeout: number; idleTimeout: number },
  ): AsyncIterable<Int16Array> {
    options.signal?.throwIfAborted();
    if (text.trim() === '') return;
    let timeoutMs = firstTimeout;
    const deadline = new RequestDeadline(options.signal, firstTimeout);
    const body = (format: 'pcm' | 'wav') =>
      JSON.stringify({
        model: this.options.model,
        input: text,
        voice: options.voiceId?.trim() || (this.options.defaultVoice ?? DEFAULT_OPENAI_VOICE),
        ...(typeof options.speed === 'number' && Number.isFinite(options.speed)
          ? { speed: options.speed }
          : {}),
        response_format: format,
      });
    const post = (format: 'pcm' | 'wav') =>
      request(this.#endpoint, {
        method: 'POST',
        body: body(format),
        dispatcher: this.#http,
        headers: { 'content-type': 'application/json', ...authHeaders(this.options.apiKey) },
        signal: deadline.signal,
      });
    try {
      let response = await post(this.#format);
      // A server without raw pcm (Groq sends wav at 48 kHz) refuses it: asked again for wav, and
      // from then on.
      if (this.#format === 'pcm' && REFUSED_FORMAT.has(response.statusCode)) {
        await response.body.dump();
        response = await post('wav');
        if (response.statusCode >= 200 && response.statusCode < 300) this.#format = 'wav';
      }
      if (response.statusCode < 200 || response.statusCode >= 300) {
        await throwStatus('tts', this.#endpoint, response);
      }
      const type = String(response.headers['content-type'] ?? '');
      if (COMPRESSED.test(type)) {
        throw new ModelError('tts', 'malformed', `${this.#endpoint} answered ${type}, not pcm or wav`);
      }
      const decoder = new SpeechDecoder(this.options.pcmRate ?? OPENAI_PCM_RATE);
      const decode = (step: () => Int16Array) => {
        try {
          return step();
        } catch (error) {
          throw new ModelError('tts', 'malformed', `${this.#endpoint} answered ${(error as Error).message}`);
        }
      };
      for await (const chunk of response.body) {
        const pcm = decode(() => decoder.push(chunk as Buffer));
        // No deadline while the consumer holds the audio (it may wait for the line).
        deadline.pause();
        if (pcm.length > 0) yield pcm;
        timeoutMs = idleTimeout;
        deadline.extend(idleTimeout);
      }
      const rest = decode(() => decoder.flush());
      deadline.pause();
      if (rest.length > 0) yield rest;
    } catch (error) {
      throw requestFailure('tts', this.#endpoint, deadline, error, timeoutMs);
    } finally {
      deadline.cancel();
    }
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

/** espeak-ng speaks 160 words a minute at voiceSpeed 1; it accepts 80 to 450. */
const ESPEAK_BASE_WPM = 160;

/** voiceSpeed (0.25 to 4, 1 normal) as espeak-ng's words per minute. */
export function wordsPerMinute(speed: number | null | undefined): number {
  const factor = typeof speed === 'number' && Number.isFinite(speed) && speed > 0 ? speed : 1;
  return Math.round(Math.min(450, Math.max(80, ESPEAK_BASE_WPM * factor)));
}

let installedVoices: Promise<ReadonlySet<string>> | undefined;

/**
 * The voices espeak-ng has (`espeak-ng --voices`: 'hi', 'en-gb-x-rp', ...), read once, off the
 * event loop (the first fallback speech may come in the middle of other calls); none when
 * espeak-ng is missing.
 */
function espeakVoices(): Promise<ReadonlySet<string>> {
  installedVoices ??= promisify(execFile)('espeak-ng', ['--voices'], { encoding: 'utf8', timeout: 5000 })
    .then(({ stdout }) => stdout)
    .catch(() => '')
    .then(
      (listing) =>
        new Set(
          listing
            .split('\n')
            .slice(1)
            .map((line) => line.trim().split(/\s+/)[1]?.toLowerCase())
            .filter((name): name is string => Boolean(name)),
        ),
    );
  return installedVoices;
}

/**
 * The offline fallback: espeak-ng in the voice of the agent's language (languages.ts), at the
 * agent's voiceSpeed. A voiceId that names an espeak-ng voice ('en-gb-x-rp', 'hi+f3') is used
 * as it is; a provider's voice name ('alloy') is not one, and the language decides.
 */
export class EspeakTextToSpeech implements TextToSpeech {
  readonly name = 'espeak-ng';

  async voiceFor(options: { voiceId?: string | null; language?: string | null }): Promise<string> {
    const voices = await espeakVoices();
    const requested = options.voiceId?.trim().toLowerCase();
    if (requested && voices.has(requested.split('+')[0] ?? '')) return requested;
    return voices.size === 0 ? DEFAULT_ESPEAK_VOICE : espeakVoice(options.language, voices);
  }

  async *synthesize(text: string, options: SpeechOptions = {}): AsyncIterable<Int16Array> {
    options.signal?.throwIfAborted();
    const pcm = await synthesize(text, {
      voice: await this.voiceFor(options),
      wordsPerMinute: wordsPerMinute(options.speed),
    });
    options.signal?.throwIfAborted();
    if (pcm.length > 0) yield pcm;
  }
}
