/**
 * Speech of the far end over the agent's, for `Listening` (which owns it): speech that starts
 * while the agent talks is an overlap. It interrupts the agent (a barge-in) once it has lasted
 * `minSpeechMs` and what it says has a word other than a backchannel; a "yeah" lets the agent talk
 * on. An overlap that did not interrupt is a backchannel candidate when it ends.
 */
import type { Logger } from 'pino';
import { isBackchannel } from '../domain/dialogue.js';

/** The quick transcription that confirms a barge-in gets this long; none in time is no barge-in yet. */
const BARGE_IN_STT_MS = 2000;
/** The least overlap a barge-in check transcribes (with the pre-roll, a third of a second). */
const MIN_OVERLAP_AUDIO_MS = 150;
/** Speech-to-text's answer time assumed before the call has measured one. */
const INITIAL_STT_ESTIMATE_MS = 150;
/** Audio before the detected start that goes with the overlap's transcription (the first syllable). */
const PRE_ROLL_MS = 200;

/** When speech over the agent interrupts it (the agent's `interruption` settings). */
export interface InterruptionSettings {
  /** How long after its start speech over the agent may stop it, at the earliest. */
  minSpeechMs: number;
  /** Backchannels ("yeah", "uh huh"): said alone over the agent, they do not stop it. */
  ignoreWords: string[];
}

/** A stretch of the agent's speech that the far end may interrupt (`Listening.agentSpeaks`). */
export interface AgentSpeech {
  /** The far end interrupted it. */
  readonly interrupted: boolean;
}

/** The far end interrupted the agent's `speech`: the engine stops it. */
export interface Interruption {
  speech: AgentSpeech;
  /** Wall-clock ms the interrupting speech started. */
  startedAt: number;
}

export interface OverlapsOptions {
  settings: InterruptionSettings;
  /** The words of the received audio since wall-clock ms `from` (a quick check of an overlap). */
  transcribeSince(from: number, signal: AbortSignal): Promise<string>;
  onInterruption(event: Interruption): void;
  /** The call's: a check's transcription stops with it. */
  signal: AbortSignal;
  logger?: Logger | undefined;
}

interface Speech {
  interrupted: boolean;
}

/** Callee speech that started while the agent was speaking. */
interface Overlap {
  /** The agent's speech it overlaps: only that one may be interrupted by it. */
  speech: Speech;
  startedAt: number;
  ended: boolean;
  confirmed: boolean;
  checking: boolean;
  timer: NodeJS.Timeout | null;
}

/** The far end's speech as the detector ended it (a `HeardTurn` of Listening). */
export interface EndedSpeech {
  /** Its words; rejects when speech-to-text fails. */
  words: Promise<string>;
  /** Wall-clock ms the last speech frame arrived. */
  speechEndedAt: number;
  /** How long the transcription took, once `words` settled with them. */
  sttMs: number | null;
}

export class Overlaps {
  private overlap: Overlap | null = null;
  /** The agent's speech in progress. */
  private speech: Speech | null = null;
  private sttEstimateMs = INITIAL_STT_ESTIMATE_MS;
  private closed = false;
  private readonly settings: InterruptionSettings;
  private readonly log: Logger | undefined;

  constructor(private readonly options: OverlapsOptions) {
    this.settings = options.settings;
    this.log = options.logger;
  }

  /** The agent starts speaking; until `agentDone`, speech of the far end may interrupt it. */
  agentSpeaks(): AgentSpeech {
    const speech: Speech = { interrupted: false };
    this.speech = speech;
    return speech;
  }

  /** The agent's speech is over: speech that started over it and goes on is a turn of its own now. */
  agentDone(speech: AgentSpeech): void {
    if (this.speech === speech) this.speech = null;
    const overlap = this.overlap;
    if (overlap && !overlap.confirmed) {
      if (overlap.timer) clearTimeout(overlap.timer);
      this.overlap = null;
    }
  }

  /** The far end started speaking: over the agent's speech, an overlap begins. */
  speechStarted(startedAt: number): void {
    const speech = this.speech;
    if (!speech || speech.interrupted || this.overlap) return;
    const overlap: Overlap = {
      speech,
      startedAt,
      ended: false,
      confirmed: false,
      checking: false,
      timer: null,
    };
    this.overlap = overlap;
    const { minSpeechMs, ignoreWords } = this.settings;
    // Without backchannels to tell apart the stop comes at minSpeechMs. With them, the first
    // transcription is sent early enough to be back at about minSpeechMs, not one STT later.
    const firstCheckAt =
      ignoreWords.length === 0
        ? startedAt + minSpeechMs
        : startedAt + Math.max(MIN_OVERLAP_AUDIO_MS, minSpeechMs - this.sttEstimateMs);
    overlap.timer = setTimeout(() => void this.checkOverlap(overlap), Math.max(0, firstCheckAt - Date.now()));
  }

  /**
   * The far end's turn ended. Returns whether it was speech over the agent that did not interrupt
   * it (a backchannel among such is no turn).
   */
  speechEnded(turn: EndedSpeech): boolean {
    const overlap = this.overlap;
    this.overlap = null;
    if (overlap) {
      overlap.ended = true;
      if (overlap.timer) clearTimeout(overlap.timer);
    }
    turn.words
      .then(() => {
        if (turn.sttMs !== null) this.noteSttMs(turn.sttMs);
      })
      .catch(() => undefined);
    const overlapped = overlap !== null && !overlap.confirmed;
    // Words over a reply the quick checks did not catch in time still stop it, once known.
    if (overlapped && overlap) {
      const spokenMs = turn.speechEndedAt - overlap.startedAt;
      turn.words
        .then((text) => {
          const { minSpeechMs, ignoreWords } = this.settings;
          if (spokenMs >= minSpeechMs && text.trim() !== '' && !isBackchannel(text, ignoreWords)) {
            this.bargeIn(overlap);
          }
        })
        .catch(() => undefined);
    }
    return overlapped;
  }

  /** Whether `words`, said over the agent, are only a backchannel. */
  isBackchannel(words: string): boolean {
    return isBackchannel(words, this.settings.ignoreWords);
  }

  /** Nothing interrupts the agent any more. */
  close(): void {
    this.closed = true;
    if (this.overlap?.timer) clearTimeout(this.overlap.timer);
  }

  /**
   * The callee speaks over the agent: a barge-in once they have spoken for minSpeechMs and what
   * they said has a word other than a backchannel. The overlap is transcribed (quickly: it is
   * short) and checked again while the callee goes on, so "yeah" lets the agent talk on and
   * "yeah, but wait" stops it.
   */
  private async checkOverlap(overlap: Overlap): Promise<void> {
    overlap.timer = null;
    if (overlap !== this.overlap || overlap.ended || overlap.checking || !this.overlapsNow(overlap)) return;
    const { minSpeechMs, ignoreWords } = this.settings;
    if (ignoreWords.length === 0) {
      this.bargeIn(overlap);
      return;
    }
    overlap.checking = true;
    let words = '';
    const sent = Date.now();
    try {
      const signal = AbortSignal.any([this.options.signal, AbortSignal.timeout(BARGE_IN_STT_MS)]);
      words = await this.options.transcribeSince(overlap.startedAt - PRE_ROLL_MS, signal);
      this.noteSttMs(Date.now() - sent);
    } catch (error) {
      this.log?.debug({ err: error }, 'the barge-in check could not transcribe the overlap');
    } finally {
      overlap.checking = false;
    }
    if (overlap !== this.overlap || !this.overlapsNow(overlap)) return;
    if (words.trim() !== '' && !isBackchannel(words, ignoreWords)) {
      const dueMs = overlap.startedAt + minSpeechMs - Date.now();
      if (dueMs <= 0) this.bargeIn(overlap);
      // Words already, but not minSpeechMs of speech yet: a short "no" does not stop the agent.
      else
        overlap.timer = setTimeout(() => {
          if (!overlap.ended) this.bargeIn(overlap);
        }, dueMs);
      return;
    }
    const againMs = Math.max(MIN_OVERLAP_AUDIO_MS, minSpeechMs / 2);
    if (!overlap.ended) overlap.timer = setTimeout(() => void this.checkOverlap(overlap), againMs);
  }

  /** Keeps a running estimate of speech-to-text's answer time, for timing the barge-in checks. */
  private noteSttMs(ms: number): void {
    this.sttEstimateMs = Math.min(1000, Math.max(50, 0.7 * this.sttEstimateMs + 0.3 * ms));
  }

  /** The overlap's agent speech is still the one in progress, and not interrupted. */
  private overlapsNow(overlap: Overlap): boolean {
    return !this.closed && this.speech === overlap.speech && !overlap.speech.interrupted;
  }

  private bargeIn(overlap: Overlap): void {
    if (!this.overlapsNow(overlap)) return;
    overlap.confirmed = true;
    overlap.speech.interrupted = true;
    this.options.onInterruption({ speech: overlap.speech, startedAt: overlap.startedAt });
  }
}
