import type { DialAgent } from '../../ports.js';
import { concatPcm } from '../audio/pcm.js';
import type { ConversationEngine, ConversationSession, SpeechOptions } from '../contracts.js';
import { type HeardTurn, Listening } from '../listening.js';

/** What the agent says, from its basicDetails: `greeting`, `prompts` (one per turn), `closing`. */
export interface AgentScript {
  greeting: string;
  prompts: string[];
  closing: string;
  /** How long to wait for the other side to start answering before going on (ms). */
  noInputTimeoutMs: number | null;
}

const DEFAULT_SCRIPT: AgentScript = {
  greeting: 'Hello {contactName}, this is {agentName}. Do you have a moment to talk?',
  prompts: ['Thank you. Would you like to hear more about what we offer?'],
  closing: 'Thank you for your time. Goodbye.',
  noInputTimeoutMs: null,
};

/** The agent's script with {agentName} and {contactName} filled in; defaults where it says nothing. */
export function agentScript(agent: DialAgent, contact: { name: string }): AgentScript {
  const details = agent.details;
  const names: Record<string, string> = {
    agentName: agent.agentName ?? agent.name,
    contactName: contact.name || 'there',
  };
  const fill = (text: string) =>
    text.replace(/\{(agentName|contactName)\}/g, (_, key: string) => names[key] ?? '');
  const text = (value: unknown, fallback: string) =>
    fill(typeof value === 'string' && value.trim() !== '' ? value : fallback);
  const prompts = Array.isArray(details.prompts)
    ? details.prompts.filter((p): p is string => typeof p === 'string' && p.trim() !== '')
    : DEFAULT_SCRIPT.prompts;
  const wait = Number(details.noInputTimeoutMs);
  return {
    greeting: text(details.greeting, DEFAULT_SCRIPT.greeting),
    prompts: prompts.map(fill),
    closing: text(details.closing, DEFAULT_SCRIPT.closing),
    noInputTimeoutMs: Number.isFinite(wait) && wait >= 500 ? Math.min(wait, 60_000) : null,
  };
}

export interface ScriptedEngineOptions {
  /** How long to wait for the other side to start answering before going on. */
  noInputMs?: number;
  /** Silence that ends an answer. */
  endSilenceMs?: number;
}

/** The scripted engine's turn-taking: an answer is speech of 60 ms or more, cut at 15 s. */
const MIN_SPEECH_MS = 60;
const MAX_ANSWER_MS = 15_000;
/** Audio kept around an answer, so that its first and last sounds reach speech-to-text. */
const CONTEXT_MS = 200;

/**
 * The scripted engine (OUTDIAL_CONVERSATION_ENGINE=scripted, formerly `offline`), the default
 * without an LLM: the call's text-to-speech speaks the agent's greeting and prompts (espeak-ng
 * unless OUTDIAL_TTS_URL is set), and its speech-to-text transcribes what the other side says
 * (pocketsphinx unless OUTDIAL_STT_URL is set), one turn after the other. What the other side
 * says while the agent speaks is kept and answered next, so nothing it says is lost to the turn
 * order.
 */
export class ScriptedConversationEngine implements ConversationEngine {
  readonly name = 'scripted';
  private readonly noInputMs: number;
  private readonly endSilenceMs: number;

  constructor(options: ScriptedEngineOptions = {}) {
    this.noInputMs = options.noInputMs ?? 6000;
    this.endSilenceMs = options.endSilenceMs ?? 700;
  }

  async converse(session: ConversationSession): Promise<void> {
    const script = agentScript(session.agent, session.contact);
    const details = session.agent.details;
    const speed = Number(details.voiceSpeed);
    const voice: SpeechOptions = {
      voiceId: typeof details.voiceId === 'string' ? details.voiceId : null,
      speed: Number.isFinite(speed) && speed > 0 ? speed : null,
      language: session.agent.language,
      signal: session.signal,
    };
    const answers = new AnswerQueue();
    const listening = await Listening.start(session, {
      endSilenceMs: this.endSilenceMs,
      maxTurnMs: MAX_ANSWER_MS,
      minSpeechMs: MIN_SPEECH_MS,
      leadingMs: CONTEXT_MS,
      trailingMs: CONTEXT_MS,
      // No `interruption`: a line of the script plays whole, and what is said over it is kept as
      // the next answer (AnswerQueue), so speech over the agent is a turn and never stops it.
      onSpeechStart: () => answers.started(),
      onTurn: (turn) => answers.ended(turn),
      // The detectors models.detector builds do not throw; one that did leaves the script to its
      // no-input waits.
      onError: () => undefined,
    });
    const say = async (text: string) => {
      if (session.signal.aborted) return;
      // A hang-up cancels the synthesis under way: nothing is left to say.
      const pcm = await speech(session, text, voice).catch((error: unknown) => {
        if (session.signal.aborted) return null;
        throw error;
      });
      if (!pcm || session.signal.aborted) return;
      session.addTurn('assistant', text);
      await session.play(pcm);
      answers.spokeAt(Date.now());
    };
    try {
      await say(script.greeting);
      for (const prompt of [...script.prompts, null]) {
        const heard = await answers.next(script.noInputTimeoutMs ?? this.noInputMs, session.signal);
        if (session.signal.aborted) return;
        if (heard) session.addTurn('user', heard);
        if (prompt === null) break;
        await say(prompt);
      }
      await say(script.closing);
    } finally {
      await listening.close();
    }
  }
}

/** A line of the script as one buffer: it is played whole, after it is all synthesized. */
async function speech(session: ConversationSession, text: string, voice: SpeechOptions): Promise<Int16Array> {
  const pieces: Int16Array[] = [];
  for await (const piece of session.models.tts.synthesize(text, voice)) pieces.push(piece);
  return pieces.length === 1 && pieces[0] ? pieces[0] : concatPcm(pieces);
}

/**
 * The answers heard (each transcribed as soon as it ended), handed out in order by `next`, which
 * waits up to `noInputMs` after the agent last spoke.
 */
class AnswerQueue {
  private readonly ready: Array<Promise<string>> = [];
  private speaking = false;
  private lastSpoke = Date.now();
  private wake: (() => void) | null = null;

  started(): void {
    this.speaking = true;
  }

  ended(turn: HeardTurn): void {
    this.speaking = false;
    this.ready.push(turn.words.catch(() => ''));
    this.wake?.();
  }

  spokeAt(at: number): void {
    this.lastSpoke = at;
  }

  /** The next answer's words ('' when it could not be made out), or null when none came. */
  async next(noInputMs: number, signal: AbortSignal): Promise<string | null> {
    for (;;) {
      const first = this.ready.shift();
      if (first) {
        const words = (await first).trim();
        if (words !== '' || this.ready.length === 0) return words;
        continue; // an unintelligible noise: take the next answer if one came
      }
      if (signal.aborted) return null;
      const waited = Date.now() - this.lastSpoke;
      if (!this.speaking && waited >= noInputMs) return null;
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          this.wake = null;
          resolve();
        };
        const timer = setTimeout(done, this.speaking ? 250 : Math.max(noInputMs - waited, 10));
        this.wake = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  }
}
