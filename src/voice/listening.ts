/**
 * The one listening path of the engines that hear audio (scripted, llm): the call's voice activity
 * detector (`models.detector`) cuts the received audio into turns, each turn is transcribed with
 * the call's speech-to-text (`models.stt`) as soon as it ends, and, given `interruption` settings,
 * speech over the agent is told apart (`overlap.ts`): a backchannel lets the agent talk on and is
 * no turn, other words interrupt it. The engine hears of it all as events (`onSpeechStart`,
 * `onTurn`, `onInterruption`) and decides what to do: stop speaking, reply. It tells Listening when
 * the agent speaks (`agentSpeaks`, `agentDone`).
 */
import type { Logger } from 'pino';
import { concatPcm } from './audio/pcm.js';
import type { ConversationSession, SpeechDetector, SpeechDetectorOptions } from './contracts.js';
import { type AgentSpeech, type Interruption, type InterruptionSettings, Overlaps } from './overlap.js';

export type { AgentSpeech, Interruption, InterruptionSettings };

/** A turn of the far end, as soon as the detector ended it. */
export interface HeardTurn {
  /** Its words ('' for none, and for a backchannel said over the agent); rejects when speech-to-text fails. */
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
  /** Received audio kept for `audioSince` and the checks of speech over the agent, in ms (default 0: none). */
  keepAudioMs?: number;
  /** When speech over the agent interrupts it; without it, none does (it is only a turn). */
  interruption?: InterruptionSettings;
  /** The far end interrupted the agent's speech (only with `interruption`). */
  onInterruption?(event: Interruption): void;
  logger?: Logger | undefined;
}

export class Listening {
  readonly #received: Array<{ frame: Int16Array; at: number }> = [];
  #detector: SpeechDetector | null = null;
  #stop: (() => void) | null = null;
  readonly #overlaps: Overlaps | null;

  private constructor(
    private readonly session: ConversationSession,
    private readonly keepAudioMs: number,
    options: ListeningOptions,
  ) {
    const { interruption, onInterruption } = options;
    this.#overlaps = interruption
      ? new Overlaps({
          settings: interruption,
          transcribeSince: (from, signal) => this.transcribe(this.audioSince(from), signal),
          onInterruption: (event) => onInterruption?.(event),
          signal: session.signal,
          logger: options.logger,
        })
      : null;
  }

  /** Starts listening to the session's audio; `close` stops it. */
  static async start(session: ConversationSession, options: ListeningOptions): Promise<Listening> {
    const listening = new Listening(session, options.keepAudioMs ?? 0, options);
    const detector = await session.models.detector({
      endSilenceMs: options.endSilenceMs,
      maxTurnMs: options.maxTurnMs,
      ...(options.minSpeechMs !== undefined ? { minSpeechMs: options.minSpeechMs } : {}),
      ...(options.leadingMs !== undefined ? { leadingMs: options.leadingMs } : {}),
      ...(options.trailingMs !== undefined ? { trailingMs: options.trailingMs } : {}),
      onSpeechStart: ({ startedAt }) => {
        options.onSpeechStart(startedAt);
        listening.#overlaps?.speechStarted(startedAt);
      },
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

  /** The agent starts speaking; with `interruption`, the far end may interrupt it until `agentDone`. */
  agentSpeaks(): AgentSpeech {
    return this.#overlaps?.agentSpeaks() ?? { interrupted: false };
  }

  /** The agent's speech is over (played out or stopped). */
  agentDone(speech: AgentSpeech): void {
    this.#overlaps?.agentDone(speech);
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
    this.#overlaps?.close();
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
    const overlaps = this.#overlaps;
    // Said over the agent without interrupting it, a backchannel ("yeah") is no turn.
    if (overlaps?.speechEnded(turn))
      turn.words = turn.words.then((text) => (overlaps.isBackchannel(text) ? '' : text));
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
