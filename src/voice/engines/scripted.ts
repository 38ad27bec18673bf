import { UtteranceDetector } from '../../adapters/models/vad.js';
import { synthesize } from '../../adapters/speech/espeak.js';
import { transcribe } from '../../adapters/speech/pocketsphinx.js';
import type { DialAgent } from '../../ports.js';
import type { ConversationEngine, ConversationSession } from '../contracts.js';

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

const DEFAULT_VOICE = 'en-us';

/** espeak-ng voices for an agent's language ('en-US' -> 'en-us'); English when none is set. */
function voiceFor(language: string | null): string {
  return (language ?? DEFAULT_VOICE).toLowerCase().replace('_', '-');
}

/**
 * The scripted engine (OUTDIAL_CONVERSATION_ENGINE=scripted, formerly `offline`), the default
 * without an LLM: espeak-ng speaks the agent's greeting and prompts, pocketsphinx transcribes
 * what the other side says, one turn after the other. What the other side says while the agent
 * speaks is kept and answered next, so nothing it says is lost to the turn order.
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
    const voice = voiceFor(session.agent.language);
    const speeds = Number(session.agent.details.voiceSpeed);
    const wordsPerMinute = Number.isFinite(speeds) && speeds > 0 ? Math.round(160 * speeds) : 160;
    const answers = new AnswerQueue(this.endSilenceMs);
    const stop = session.onAudio((frame) => answers.push(frame));
    let speaking = voice;
    const speak = (text: string) =>
      synthesize(text, { voice: speaking, wordsPerMinute }).catch((error: unknown) => {
        // A language espeak-ng has no voice for: the call goes on in its default voice.
        if (speaking === DEFAULT_VOICE) throw error;
        speaking = DEFAULT_VOICE;
        return synthesize(text, { voice: speaking, wordsPerMinute });
      });
    const say = async (text: string) => {
      if (session.signal.aborted) return;
      const pcm = await speak(text);
      if (session.signal.aborted) return;
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
      stop();
    }
  }
}

/**
 * Cuts the received audio into answers (speech, then silence) and transcribes each as soon as it
 * ends; `next` hands them out in order, waiting up to `noInputMs` after the agent last spoke.
 */
class AnswerQueue {
  private readonly detector: UtteranceDetector;
  private readonly ready: Array<Promise<string>> = [];
  private speaking = false;
  private lastSpoke = Date.now();
  private wake: (() => void) | null = null;

  constructor(endSilenceMs: number) {
    this.detector = new UtteranceDetector({ endSilenceMs });
  }

  push(frame: Int16Array): void {
    const result = this.detector.push(frame);
    if (result.started) this.speaking = true;
    if (result.utterance) {
      this.speaking = false;
      this.ready.push(transcribe(result.utterance).catch(() => ''));
      this.wake?.();
    }
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
