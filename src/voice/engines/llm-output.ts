/**
 * How the LLM engine's words reach the callee: on an audio call each sentence goes to
 * text-to-speech as soon as it is complete and its audio is played as it streams in, the next
 * sentence synthesized while the previous one plays; on a text call the reply is said as one line.
 * Both can be stopped (barge-in) and tell which words the callee actually heard.
 */
import { heardWords } from '../../domain/dialogue.js';
import type { ConversationSession, PlayResult, TextToSpeech } from '../contracts.js';

/** A model or speech step that gave nothing for too long. */
export class StallError extends Error {
  override name = 'StallError';
}

/** Resolves when `signal` aborts (never rejects). */
export function abortedPromise(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/**
 * `promise`, or a StallError after `ms`, or the signal's reason when it aborts first: an await that
 * can never hold a call forever, whatever the thing awaited does.
 */
export function bounded<T>(promise: Promise<T>, ms: number, signal: AbortSignal, what: string): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason ?? new Error('aborted'));
  return new Promise<T>((resolve, reject) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    };
    const onAbort = () => {
      done();
      reject(signal.reason ?? new Error('aborted'));
    };
    const timer = setTimeout(() => {
      done();
      reject(new StallError(`${what}: no answer within ${ms} ms`));
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        done();
        resolve(value);
      },
      (error: unknown) => {
        done();
        reject(error);
      },
    );
  });
}

/**
 * Iterates a stream made with `open(signal)`, failing with a StallError when no item comes for
 * `idleMs` (the first one included) and stopping when `parent` aborts, even from a source that
 * ignores its signal. The source's own signal is aborted either way, so its request is cancelled.
 */
export async function* guardedStream<T>(
  open: (signal: AbortSignal) => AsyncIterable<T>,
  parent: AbortSignal,
  idleMs: number,
  what: string,
): AsyncGenerator<T> {
  const controller = new AbortController();
  const onParent = () => controller.abort(parent.reason);
  if (parent.aborted) onParent();
  else parent.addEventListener('abort', onParent, { once: true });
  const iterator = open(controller.signal)[Symbol.asyncIterator]();
  try {
    for (;;) {
      let next: IteratorResult<T>;
      try {
        next = await bounded(iterator.next(), idleMs, controller.signal, what);
      } catch (error) {
        controller.abort(error);
        throw error;
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    parent.removeEventListener('abort', onParent);
    if (!controller.signal.aborted) controller.abort();
    // Lets the source close its request; a source stuck in a read is not waited for.
    void iterator.return?.()?.catch(() => undefined);
  }
}

/** What the callee heard of a reply. */
export interface Heard {
  /** The words that went out (whole sentences, and the heard share of a cut one). */
  text: string;
  /** Stopped before all of it went out. */
  interrupted: boolean;
}

/** The agent's words on their way out, one reply at a time. */
export interface ReplyOutput {
  /** A complete sentence (or the whole line) to say after the ones before it. */
  add(sentence: string): void;
  /** Waits until everything added went out (or was stopped); throws when speech failed. */
  finish(): Promise<Heard>;
  /** Stops at once: queued audio dropped, synthesis cancelled. */
  stop(): void;
}

export interface AudioReplyOptions {
  session: ConversationSession;
  tts: TextToSpeech;
  /** The reply's end: the turn was interrupted or the call is over. */
  signal: AbortSignal;
  /** The language spoken, when not the agent's (the apology is English). */
  language?: string | null;
  /** Longest wait for text-to-speech's next chunk (the first included). */
  idleMs: number;
  /** The first sentence's wait from request to first audio byte. */
  onFirstByte?: (ms: number) => void;
  /** The wall-clock ms the reply's first packet went on the wire. */
  onFirstPacket?: (sentAt: number) => void;
}

/** ms of 8 kHz audio per sample. */
const MS_PER_SAMPLE = 1000 / 8000;
/** Length of speech not synthesized yet, estimated from its text (espeak-ng at 160 wpm: ~65 ms a character). */
const MS_PER_CHARACTER = 65;

interface SentenceAudio {
  text: string;
  chunks: Int16Array[];
  samples: number;
  synthesized: boolean;
  plays: Array<Promise<PlayResult>>;
  wake: (() => void) | null;
}

/**
 * Sentences to speech to the line, pipelined: synthesis runs one sentence at a time, ahead of
 * playback; each chunk is queued on the transport the moment it arrives, so the first audio goes
 * out with the first chunk of the first sentence, and the line never waits for a whole reply.
 */
export class AudioReply implements ReplyOutput {
  private readonly sentences: SentenceAudio[] = [];
  private synthesis: Promise<void> = Promise.resolve();
  private queueing: Promise<void> = Promise.resolve();
  private readonly controller = new AbortController();
  private readonly signal: AbortSignal;
  private failure: unknown = null;
  private stopped = false;
  private firstByte = true;
  private firstPacket = true;

  constructor(private readonly options: AudioReplyOptions) {
    this.signal = AbortSignal.any([options.signal, this.controller.signal]);
  }

  add(text: string): void {
    const sentence: SentenceAudio = {
      text: text.trim(),
      chunks: [],
      samples: 0,
      synthesized: false,
      plays: [],
      wake: null,
    };
    if (sentence.text === '') return;
    this.sentences.push(sentence);
    this.synthesis = this.synthesis.then(() => this.synthesize(sentence));
    this.queueing = this.queueing.then(() => this.queue(sentence));
  }

  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.options.session.stopPlayback();
    this.controller.abort();
    for (const sentence of this.sentences) sentence.wake?.();
  }

  async finish(): Promise<Heard> {
    const over = abortedPromise(this.options.session.signal);
    await Promise.race([Promise.all([this.synthesis, this.queueing]), over]);
    const results = await Promise.race([
      Promise.all(this.sentences.map((sentence) => Promise.all(sentence.plays))),
      over.then(() => null),
    ]);
    if (this.failure !== null && !this.stopped && !this.options.signal.aborted) throw this.failure;
    const heard: string[] = [];
    let interrupted = this.stopped || results === null;
    for (const [index, sentence] of this.sentences.entries()) {
      const played = results?.[index] ?? [];
      const cut = played.length < sentence.chunks.length || played.some((result) => result.interrupted);
      if (!cut && sentence.synthesized && results !== null) {
        heard.push(sentence.text);
        continue;
      }
      interrupted = true;
      const playedMs = played.reduce((sum, result) => sum + result.playedMs, 0);
      const audioMs = sentence.synthesized
        ? sentence.samples * MS_PER_SAMPLE
        : Math.max(sentence.samples * MS_PER_SAMPLE, sentence.text.length * MS_PER_CHARACTER);
      const words = heardWords(sentence.text, playedMs, audioMs);
      if (words !== '') heard.push(words);
      break;
    }
    return { text: heard.join(' '), interrupted };
  }

  private async synthesize(sentence: SentenceAudio): Promise<void> {
    const { session, tts, idleMs } = this.options;
    const details = session.agent.details;
    const started = Date.now();
    try {
      if (this.signal.aborted || this.failure !== null) return;
      const stream = guardedStream(
        (signal) =>
          tts.synthesize(sentence.text, {
            voiceId: typeof details.voiceId === 'string' ? details.voiceId : null,
            speed: typeof details.voiceSpeed === 'number' ? details.voiceSpeed : null,
            language: this.options.language !== undefined ? this.options.language : session.agent.language,
            signal,
          }),
        this.signal,
        idleMs,
        `text-to-speech (${tts.name})`,
      );
      for await (const chunk of stream) {
        if (chunk.length === 0) continue;
        if (this.firstByte) {
          this.firstByte = false;
          this.options.onFirstByte?.(Date.now() - started);
        }
        sentence.chunks.push(chunk);
        sentence.samples += chunk.length;
        sentence.wake?.();
      }
      sentence.synthesized = true;
    } catch (error) {
      if (!this.signal.aborted) this.failure ??= error;
    } finally {
      sentence.wake?.();
    }
  }

  /** Queues the sentence's chunks on the transport as they arrive, after the previous sentence's. */
  private async queue(sentence: SentenceAudio): Promise<void> {
    const { session } = this.options;
    let next = 0;
    for (;;) {
      if (this.stopped || this.signal.aborted || this.failure !== null) return;
      const chunk = sentence.chunks[next];
      if (chunk) {
        next++;
        const first = this.firstPacket;
        this.firstPacket = false;
        sentence.plays.push(
          session.play(chunk, first ? (sentAt) => this.options.onFirstPacket?.(sentAt) : undefined),
        );
        continue;
      }
      // Synthesis ends by finishing, failing or being cancelled: each is seen above or here.
      if (sentence.synthesized) return;
      await new Promise<void>((resolve) => {
        sentence.wake = resolve;
      });
      sentence.wake = null;
    }
  }
}

/** A text call's reply: its sentences said as one line when the reply is complete. */
export class TextReply implements ReplyOutput {
  private readonly parts: string[] = [];
  private stopped = false;
  private said: Heard | null = null;

  constructor(private readonly session: ConversationSession) {}

  add(sentence: string): void {
    const text = sentence.trim();
    if (text !== '') this.parts.push(text);
  }

  stop(): void {
    this.stopped = true;
  }

  async finish(): Promise<Heard> {
    if (this.said) return this.said;
    if (this.stopped || this.session.signal.aborted) return { text: '', interrupted: true };
    const line = this.parts.join(' ');
    if (line !== '') this.session.sayText(line);
    this.said = { text: line, interrupted: false };
    return this.said;
  }
}
