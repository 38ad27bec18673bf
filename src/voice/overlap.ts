/**
 * Speech of the far end over the agent's: the LLM engine's barge-in rules, on its turns of speech.
 * Speech that starts while the agent talks is an overlap. It stops the agent (a barge-in) once it
 * has lasted `minSpeechMs` and what it says has a word other than a backchannel; a "yeah" lets the
 * agent talk on. An overlap the checks did not confirm is a backchannel candidate when it ends.
 */
import type { Logger } from 'pino';
import { isBackchannel } from '../domain/dialogue.js';
import type { HeardTurn, Listening } from './listening.js';

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
  /** Speech shorter than this never stops the agent. */
  minSpeechMs: number;
  /** Backchannels ("yeah", "uh huh"): said alone over the agent, they do not stop it. */
  ignoreWords: string[];
}

/** What the overlap rules need of the engine whose speech they may stop. */
export interface OverlapHost<Turn extends { interrupted: boolean }> {
  /** The agent turn in progress, or null. */
  active(): Turn | null;
  /** The conversation is over: nothing is stopped any more. */
  finished(): boolean;
  /** The far end barged in on `turn` (its speech started at `startedAt`): stop it. */
  stop(turn: Turn, startedAt: number): void;
  listening(): Listening | null;
}

/** Callee speech that started while the agent's turn was in progress. */
interface Overlap<Turn> {
  /** The agent turn it overlaps: only that one may be stopped by it. */
  turn: Turn;
  startedAt: number;
  ended: boolean;
  confirmed: boolean;
  checking: boolean;
  timer: NodeJS.Timeout | null;
}

export class Overlaps<Turn extends { interrupted: boolean }> {
  private overlap: Overlap<Turn> | null = null;
  private sttEstimateMs = INITIAL_STT_ESTIMATE_MS;

  constructor(
    private readonly host: OverlapHost<Turn>,
    private readonly settings: InterruptionSettings,
    /** The call's: a check's transcription stops with it. */
    private readonly signal: AbortSignal,
    private readonly log: Logger | undefined,
  ) {}

  /** The far end started speaking: over an agent turn in progress, an overlap begins. */
  speechStarted(startedAt: number): void {
    const active = this.host.active();
    if (!active || active.interrupted || this.overlap) return;
    const overlap: Overlap<Turn> = {
      turn: active,
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
   * The far end's turn ended. Returns whether it was speech over the agent that did not stop it
   * (a backchannel among such is dropped by the engine).
   */
  speechEnded(turn: HeardTurn): boolean {
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

  /** An agent turn is over: speech that started over it and goes on is a turn of its own now. */
  done(): void {
    const overlap = this.overlap;
    if (overlap && !overlap.confirmed) {
      if (overlap.timer) clearTimeout(overlap.timer);
      this.overlap = null;
    }
  }

  close(): void {
    if (this.overlap?.timer) clearTimeout(this.overlap.timer);
  }

  /**
   * The callee speaks over the agent: a barge-in once they have spoken for minSpeechMs and what
   * they said has a word other than a backchannel. The overlap is transcribed (quickly: it is
   * short) and checked again while the callee goes on, so "yeah" lets the agent talk on and
   * "yeah, but wait" stops it.
   */
  private async checkOverlap(overlap: Overlap<Turn>): Promise<void> {
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
      const signal = AbortSignal.any([this.signal, AbortSignal.timeout(BARGE_IN_STT_MS)]);
      const listening = this.host.listening();
      if (listening)
        words = await listening.transcribe(listening.audioSince(overlap.startedAt - PRE_ROLL_MS), signal);
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

  /** The overlap's agent turn is still the one in progress, and still talking. */
  private overlapsNow(overlap: Overlap<Turn>): boolean {
    return !this.host.finished() && this.host.active() === overlap.turn && !overlap.turn.interrupted;
  }

  private bargeIn(overlap: Overlap<Turn>): void {
    if (!this.overlapsNow(overlap)) return;
    overlap.confirmed = true;
    overlap.turn.interrupted = true;
    this.host.stop(overlap.turn, overlap.startedAt);
  }
}
