/**
 * The one listening path of the engines that hear audio (scripted, llm): the call's voice activity
 * detector (`models.detector`) cuts the received audio into turns, and each turn is transcribed
 * with the call's speech-to-text (`models.stt`) as soon as it ends. The last seconds of audio can
 * be kept, so that an engine can look at speech still under way (the LLM engine's barge-in check).
 * What a turn means, and what speech over the agent does, is the engine's to decide.
 */
import { concatPcm } from './audio/pcm.js';
import type { ConversationSession, SpeechDetector, SpeechDetectorOptions } from './contracts.js';

/** A turn of the far end, as soon as the detector ended it. */
export interface HeardTurn {
  /** Its words ('' for none); rejects when speech-to-text fails. */
  words: Promise<string>;
  /** Wall-clock ms the last speech frame arrived on the wire. */
  speechEndedAt: number;
  /** From that frame to the detector's decision that the turn was over. */
  endpointingMs: number;
  /** How long the transcription took, once `words` settled with them. */
  sttMs: number | null;
}

export interface ListeningOptions
  extends Pick<
    SpeechDetectorOptions,
    'endSilenceMs' | 'maxTurnMs' | 'minSpeechMs' | 'leadingMs' | 'trailingMs'
  > {
  /** The far end started speaking (`startedAt`: when its first speech arrived). */
  onSpeechStart(startedAt: number): void;
  onTurn(turn: HeardTurn): void;
  /** The detector threw on a frame: nothing more is heard after it. */
  onError(error: unknown): void;
  /** Received audio kept for `audioSince`, in ms (default 0: none). */
  keepAudioMs?: number;
}

export class Listening {
  readonly #received: Array<{ frame: Int16Array; at: number }> = [];
  #detector: SpeechDetector | null = null;
  #stop: (() => void) | null = null;

  private constructor(
    private readonly session: ConversationSession,
    private readonly keepAudioMs: number,
  ) {}

  /** Starts listening to the session's audio; `close` stops it. */
  static async start(session: ConversationSession, options: ListeningOptions): Promise<Listening> {
    const listening = new Listening(session, options.keepAudioMs ?? 0);
    const detector = await session.models.detector({
      endSilenceMs: options.endSilenceMs,
      maxTurnMs: options.maxTurnMs,
      ...(options.minSpeechMs !== undefined ? { minSpeechMs: options.minSpeechMs } : {}),
      ...(options.leadingMs !== undefined ? { leadingMs: options.leadingMs } : {}),
      ...(options.trailingMs !== undefined ? { trailingMs: options.trailingMs } : {}),
      onSpeechStart: ({ startedAt }) => options.onSpeechStart(startedAt),
      onSpeechEnd: (event) => options.onTurn(listening.#turn(event)),
    });
    listening.#detector = detector;
    listening.#stop = session.onAudio((frame, receivedAt) => {
      listening.#keep(frame, receivedAt);
      try {
        detector.push(frame, receivedAt);
      } catch (error) {
        options.onError(error);
      }
    });
    return listening;
  }

  /** The words of `audio` in the agent's language (the call's speech-to-text). */
  transcribe(audio: Int16Array, signal: AbortSignal = this.session.signal): Promise<string> {
    return this.session.models.stt.transcribe(audio, { language: this.session.agent.language, signal });
  }

  /** The received audio kept since wall-clock ms `from`. */
  audioSince(from: number): Int16Array {
    return concatPcm(this.#received.filter((entry) => entry.at >= from).map((entry) => entry.frame));
  }

  /** Stops listening and closes the detector. */
  async close(): Promise<void> {
    this.#stop?.();
    this.#stop = null;
    await this.#detector?.close().catch(() => undefined);
  }

  /** A turn the detector ended, its transcription started at once. */
  #turn(event: { audio: Int16Array; speechEndedAt: number; endpointedAt: number }): HeardTurn {
    const turn: HeardTurn = {
      words: Promise.resolve(''),
      speechEndedAt: event.speechEndedAt,
      endpointingMs: Math.max(0, event.endpointedAt - event.speechEndedAt),
      sttMs: null,
    };
    const started = Date.now();
    turn.words = this.transcribe(event.audio).then((text) => {
      turn.sttMs = Date.now() - started;
      return text;
    });
    // Awaited by the engine when it gets there; marked handled now so a failure waits for it.
    turn.words.catch(() => undefined);
    return turn;
  }

  #keep(frame: Int16Array, at: number): void {
    if (this.keepAudioMs <= 0) return;
    this.#received.push({ frame, at });
    while (this.#received.length > 0 && (this.#received[0]?.at ?? at) < at - this.keepAudioMs)
      this.#received.shift();
  }
}
