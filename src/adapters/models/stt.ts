/**
 * Speech-to-text: any OpenAI-compatible `/v1/audio/transcriptions` (OpenAI, Groq, speaches,
 * whisper.cpp's server, LocalAI, vLLM), and pocketsphinx offline when none is configured.
 */
// undici's own FormData: its request() does not take the one Node's globals come with.
import { Agent, FormData, request } from 'undici';
import { PHONE_RATE } from '../../voice/audio/pcm.js';
import { encodeWav } from '../../voice/audio/wav.js';
import type { SpeechToText } from '../../voice/contracts.js';
import { transcribe } from '../speech/pocketsphinx.js';
import { ModelError } from './errors.js';
import { authHeaders, endpointUrl, RequestDeadline, requestFailure, throwStatus } from './http.js';
import { sttLanguage } from './languages.js';

export interface OpenAiSpeechToTextOptions {
  /** Base URL (…/v1) or the transcriptions URL itself. */
  url: string;
  apiKey?: string | null;
  model: string;
  /**
   * Milliseconds one transcription may take in all. Default 10 000: a hosted whisper answers a
   * 3 s turn in 0.2 to 1 s; a CPU whisper.cpp in a few seconds.
   */
  timeoutMs?: number;
}

/** 300 ms of the phone line's silence: what a probe uploads. */
const PROBE_SAMPLES = (PHONE_RATE * 300) / 1000;

/** Transcribes a turn's 8 kHz audio, uploaded as a WAV file, in the agent's language. */
export class OpenAiSpeechToText implements SpeechToText {
  readonly name: string;
  readonly #endpoint: string;
  readonly #http = new Agent({ keepAliveTimeout: 30_000, connect: { timeout: 5_000 } });

  constructor(private readonly options: OpenAiSpeechToTextOptions) {
    this.name = `openai:${options.model}`;
    this.#endpoint = endpointUrl(options.url, '/audio/transcriptions');
  }

  async transcribe(
    pcm: Int16Array,
    options: { language?: string | null; signal?: AbortSignal } = {},
  ): Promise<string> {
    options.signal?.throwIfAborted();
    if (pcm.length === 0) return '';
    const answer = await this.#post(pcm, {
      language: sttLanguage(options.language),
      signal: options.signal,
      timeoutMs: this.options.timeoutMs ?? 10_000,
    });
    const words = (answer as { text?: unknown } | null)?.text;
    if (typeof words !== 'string') {
      throw new ModelError('stt', 'malformed', `${this.#endpoint} answered without a text`);
    }
    return words.trim();
  }

  /**
   * A dependency probe (ports.ts `DependencyProber`): a real transcription of 300 ms of silence.
   * Any 2xx with a JSON body is an answer (silence may well be ""); rejects with a ModelError
   * naming the status, the network failure, or the `timeoutMs` (default 5000).
   */
  async probe(options: { timeoutMs?: number } = {}): Promise<void> {
    await this.#post(new Int16Array(PROBE_SAMPLES), { timeoutMs: options.timeoutMs ?? 5000 });
  }

  /** Uploads `pcm` as a WAV file and returns the parsed JSON answer. */
  async #post(
    pcm: Int16Array,
    options: { language?: string | null; signal?: AbortSignal | undefined; timeoutMs: number },
  ): Promise<unknown> {
    const form = new FormData();
    form.set(
      'file',
      new Blob([new Uint8Array(encodeWav(pcm, PHONE_RATE))], { type: 'audio/wav' }),
      'turn.wav',
    );
    form.set('model', this.options.model);
    if (options.language) form.set('language', options.language);
    form.set('response_format', 'json');
    const deadline = new RequestDeadline(options.signal, options.timeoutMs);
    try {
      const response = await request(this.#endpoint, {
        method: 'POST',
        body: form,
        dispatcher: this.#http,
        headers: authHeaders(this.options.apiKey),
        signal: deadline.signal,
      });
      if (response.statusCode < 200 || response.statusCode >= 300) {
        await throwStatus('stt', this.#endpoint, response);
      }
      const text = await response.body.text();
      try {
        return JSON.parse(text);
      } catch {
        throw new ModelError(
          'stt',
          'malformed',
          `${this.#endpoint} did not answer JSON: ${text.slice(0, 120)}`,
        );
      }
    } catch (error) {
      throw requestFailure('stt', this.#endpoint, deadline, error, options.timeoutMs);
    } finally {
      deadline.cancel();
    }
  }

  async close(): Promise<void> {
    await this.#http.close();
  }
}

/**
 * The offline fallback: pocketsphinx with its en-us model (whatever the agent's language; a
 * provider is needed for the others). Its failures are SpeechToolErrors.
 */
export class PocketsphinxSpeechToText implements SpeechToText {
  readonly name = 'pocketsphinx';

  /** `timeoutMs`: pocketsphinx is killed after this long (default: transcribe()'s, by audio length). */
  constructor(private readonly options: { timeoutMs?: number } = {}) {}

  async transcribe(
    pcm: Int16Array,
    options: { language?: string | null; signal?: AbortSignal } = {},
  ): Promise<string> {
    options.signal?.throwIfAborted();
    const text = await transcribe(
      pcm,
      this.options.timeoutMs !== undefined ? { timeoutMs: this.options.timeoutMs } : {},
    );
    options.signal?.throwIfAborted();
    return text;
  }
}
