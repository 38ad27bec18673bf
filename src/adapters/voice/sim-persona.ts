import { saysGoodbye } from '../../domain/dialogue.js';
import type { ChatMessage, ChatModel } from '../../voice/contracts.js';
import { type ConversationScript, conversation } from './simulator-script.js';

/**
 * The simulated callee of an AI call: a persona chosen by the number (simulator-script.ts decides
 * which: interested, not interested, asks for a callback, or 0008, asks not to be called again)
 * that answers the agent's words through the chat model (OUTDIAL_LLM_*) with a system prompt of its
 * own. The persona decides what it says and when it is done; the text transport
 * (sim-transport.ts) decides when it says it.
 */

/** What the persona does after the agent's words. */
export interface PersonaReply {
  /** Its words, or null when it says nothing more. */
  say: string | null;
  /** It is done with the call: it hangs up unless the agent hangs up first. */
  leaving: boolean;
}

export interface PersonaOptions {
  script: ConversationScript;
  /** The callee's own name (the contact's name), and the agent's as the canned lines use it. */
  contactName: string;
  agentName: string;
  /** The chat model; null: the persona says its canned lines (the scripted conversation's). */
  chat: ChatModel | null;
  /** Replies before the persona takes its leave (default 8): a conversation cannot run forever. */
  maxReplies?: number;
  /** A reply that takes longer than this is given up for a canned line (default 20 s). */
  replyTimeoutMs?: number;
}

const DEFAULT_MAX_REPLIES = 8;
const DEFAULT_REPLY_TIMEOUT_MS = 20_000;
/** About 30 s of speech: a callee's turn is far shorter; longer model output is cut. */
const MAX_REPLY_CHARS = 400;
const FAREWELL = 'Sorry, I have to go now. Goodbye.';

/** What each persona wants from the call, as its system prompt tells it. */
const CHARACTER: Record<ConversationScript, string> = {
  interested:
    'You are curious about what the caller offers. Ask what it is about, then ask one practical question ' +
    '(the price, or how it works), and agree to a next step they propose, such as a demo or a meeting ' +
    '(Tuesday afternoon suits you). Once a next step is agreed, thank them and say goodbye.',
  not_interested:
    'You are polite but not interested: you are happy with what you have. Let them say what it is about, ' +
    'then decline. If they insist, decline again, firmly, and say goodbye.',
  callback:
    'You are in a meeting and cannot talk now. Ask them to call you back tomorrow morning. Once they ' +
    'agree, thank them and say goodbye.',
  do_not_call:
    'You do not want calls like this. Tell them to take your number off their list and never to call ' +
    'you again, then say goodbye. Do not agree to anything else.',
};

/** The persona's system prompt: who it is, what it wants, how it speaks, when it says goodbye. */
export function personaPrompt(script: ConversationScript, contactName: string): string {
  const who = contactName && contactName !== 'Unknown' ? `You are ${contactName}` : 'You are the person';
  return [
    `${who} answering your phone. Someone is calling you; their words come to you as the user's messages.`,
    CHARACTER[script],
    'Speak as on the phone: one or two short sentences, plain words, no lists, no stage directions, ' +
      'no emojis. Never say that you are an AI or that this is a simulation.',
    'When you are done with the call, end your reply with "Goodbye."',
  ].join('\n');
}

/** One call's callee. Not reentrant: the transport asks for one reply at a time. */
export class SimulatedCallee {
  private readonly history: ChatMessage[];
  /** The canned callee lines not said yet: the fallback when there is no model or it fails. */
  private readonly canned: string[];
  private replies = 0;
  private done = false;
  private readonly maxReplies: number;
  private readonly replyTimeoutMs: number;

  constructor(private readonly options: PersonaOptions) {
    this.history = [{ role: 'system', content: personaPrompt(options.script, options.contactName) }];
    this.canned = conversation(options.script, {
      agentName: options.agentName,
      contactName: options.contactName,
    })
      .filter((turn) => turn.role === 'user')
      .map((turn) => turn.content);
    this.maxReplies = options.maxReplies ?? DEFAULT_MAX_REPLIES;
    this.replyTimeoutMs = options.replyTimeoutMs ?? DEFAULT_REPLY_TIMEOUT_MS;
  }

  /** True once the persona has taken its leave. */
  get leaving(): boolean {
    return this.done;
  }

  /** What the callee says when the agent says nothing first, as a person picking up does. */
  hello(): string {
    const said = 'Hello?';
    this.history.push({ role: 'assistant', content: said });
    return said;
  }

  /** The persona's answer to what the agent said since its last reply. */
  async reply(agentWords: string, signal: AbortSignal): Promise<PersonaReply> {
    if (this.done) return { say: null, leaving: true };
    this.history.push({ role: 'user', content: agentWords });
    // The agent's goodbye: nothing more to say; the agent hangs up, or the callee does.
    if (saysGoodbye(agentWords)) return this.leave(null);
    if (this.replies >= this.maxReplies) return this.leave(FAREWELL);
    this.replies++;
    const asked = await this.ask(signal);
    // The transport gave up on this reply (the agent went on speaking): it asks again with more.
    if (signal.aborted) return { say: null, leaving: this.done };
    // The model answered with nothing to say (only "*stays silent*", say): the callee is silent,
    // and the agent's silence handling takes it from there.
    if (asked === '') return { say: null, leaving: false };
    const said = asked ?? this.cannedLine();
    this.history.push({ role: 'assistant', content: said });
    return saysGoodbye(said) ? this.leave(null, said) : { say: said, leaving: false };
  }

  private leave(last: string | null, said: string | null = last): PersonaReply {
    this.done = true;
    if (last) this.history.push({ role: 'assistant', content: last });
    return { say: said, leaving: true };
  }

  /** The model's reply, cleaned for speech ('' for nothing to say); null when there is no model or it failed. */
  private async ask(signal: AbortSignal): Promise<string | null> {
    const chat = this.options.chat;
    if (!chat) return null;
    const timeout = AbortSignal.timeout(this.replyTimeoutMs);
    try {
      let text = '';
      for await (const delta of chat.stream({
        messages: this.history,
        signal: AbortSignal.any([signal, timeout]),
      })) {
        if (delta.type === 'text') text += delta.text;
        if (text.length > MAX_REPLY_CHARS * 2) break;
      }
      return spokenWords(text);
    } catch {
      // A model down, slow or malformed: the persona goes on with its canned lines, so a call
      // never waits on it; the agent's own model failing is the agent's to handle.
      return null;
    }
  }

  private cannedLine(): string {
    return this.canned.shift() ?? FAREWELL;
  }
}

/** What a model wrote, as a person would say it: no stage directions, no speaker label, one line. */
export function spokenWords(text: string): string {
  const cleaned = text
    .replace(/\*[^*]*\*/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/^\s*[A-Z][\w .'-]{0,30}:\s+/, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^"(.*)"$/, '$1');
  if (cleaned.length <= MAX_REPLY_CHARS) return cleaned;
  const cut = cleaned.slice(0, MAX_REPLY_CHARS);
  const end = Math.max(cut.lastIndexOf('. '), cut.lastIndexOf('? '), cut.lastIndexOf('! '));
  return end > 0 ? cut.slice(0, end + 1) : cut;
}
