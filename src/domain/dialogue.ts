/**
 * The pure rules of the LLM agent's dialogue (no I/O): which overlapping words are backchannels,
 * how much of an interrupted line was heard, when the agent's own words are a goodbye, and the
 * system prompt the model is given. The engine (src/voice/engines/llm.ts) applies them.
 */

/** Lowercase words, hyphens and apostrophes kept inside a word apart ("uh-huh" -> "uh", "huh"). */
function words(text: string): string[] {
  return text
    .toLowerCase()
    .normalize('NFKC')
    .split(/[^\p{L}\p{N}']+/u)
    .map((word) => word.replace(/^'+|'+$/g, ''))
    .filter((word) => word !== '');
}

/**
 * True when every word of `text` belongs to one of the `ignoreWords` phrases ("yeah", "uh-huh",
 * "all right"), and there is at least one word: what a listener says to show they listen, not to
 * take the turn. Empty text (noise the speech-to-text made nothing of) is not a backchannel; the
 * engine treats it apart.
 */
export function isBackchannel(text: string, ignoreWords: string[]): boolean {
  const said = words(text);
  if (said.length === 0) return false;
  // Longest phrases first, so "all right" is matched before a lone "all" could be.
  const phrases = ignoreWords
    .map(words)
    .filter((phrase) => phrase.length > 0)
    .sort((a, b) => b.length - a.length);
  // "uhhuh" and "uh huh" are the same backchannel: a phrase also matches written as one word.
  const joined = new Set(phrases.map((phrase) => phrase.join('')));
  let at = 0;
  outer: while (at < said.length) {
    const word = said[at] as string;
    if (joined.has(word)) {
      at++;
      continue;
    }
    for (const phrase of phrases) {
      if (phrase.every((part, i) => said[at + i] === part)) {
        at += phrase.length;
        continue outer;
      }
    }
    return false;
  }
  return true;
}

/**
 * The words of `sentence` the callee heard when `playedMs` of its `audioMs` went out: the share of
 * its words in proportion to the share of its audio, whole words only (a word cut in the middle
 * was not heard). All of it when it played out.
 */
export function heardWords(sentence: string, playedMs: number, audioMs: number): string {
  if (audioMs <= 0 || playedMs >= audioMs) return sentence.trim();
  const tokens = sentence.trim().split(/\s+/).filter(Boolean);
  const count = Math.floor((tokens.length * Math.max(0, playedMs)) / audioMs);
  return tokens.slice(0, count).join(' ');
}

/**
 * Goodbyes the agent may end its line with, in the languages of the spec's dial6 list and Saudi
 * Arabic (the model is told to speak the agent's language). Matched on the last sentence only, so
 * "Before I say goodbye, one question" does not end a call.
 */
const GOODBYES: RegExp[] = [
  // English: the goodbye ends the sentence, a name or "now" may follow ("Goodbye, Priya.").
  /\b(good ?bye|bye(?:[- ]bye)?|farewell|take care(?! of)|have a (?:good|great|nice|lovely|wonderful) (?:day|evening|one|afternoon|night|weekend))\b[^.!?]{0,24}[.!]*\s*$/i,
  // Hindi, Marathi, Gujarati, Punjabi (Devanagari / Gurmukhi / Gujarati scripts, and romanised).
  /(अलविदा|फिर मिलेंगे|આવજો|ਅਲਵਿਦਾ|\balvida\b|\bphir milenge\b)/iu,
  // Tamil, Telugu, Kannada, Malayalam, Bengali, Odia (greetings that also mean hello are left out).
  /(போய் வருகிறேன்|సెలవు|ಹೋಗಿ ಬರುತ್ತೇನೆ|ವಿದಾಯ|വിട|বিদায়|ବିଦାୟ)/u,
  // Arabic.
  /(مع السلامة|في أمان الله|وداعا|إلى اللقاء)/u,
];

/** The last sentence of a line (what a goodbye is looked for in). */
function lastSentence(text: string): string {
  const parts = text
    .trim()
    .split(/(?<=[.!?।؟])\s+/u)
    .filter((part) => part.trim() !== '');
  return parts.at(-1) ?? '';
}

/** True when the agent's line ends with a goodbye: the call is over once it has played. */
export function saysGoodbye(text: string): boolean {
  const last = lastSentence(text);
  if (last === '') return false;
  // A question keeps the call going ("Shall I call you back tomorrow, or is it goodbye?" is not a farewell yet).
  if (/[?؟]\s*$/u.test(last)) return false;
  return GOODBYES.some((pattern) => pattern.test(last));
}

export interface PromptInput {
  /** The agent's instructions ({{variables}} filled in), or null. */
  instructions: string | null;
  agentName: string;
  contactName: string;
  /** The agent's language (BCP 47), or null for English. */
  language: string | null;
  /** Which built-in tools are offered. */
  canTransfer: boolean;
  media: 'audio' | 'text';
}

/** The language's English name ('hi-IN' -> 'Hindi (India)'), or the tag itself. */
function languageName(tag: string): string {
  try {
    return new Intl.DisplayNames(['en'], { type: 'language' }).of(tag) ?? tag;
  } catch {
    return tag;
  }
}

/**
 * The system prompt: the agent's instructions first, then what every phone agent must know:
 * its words are spoken (short plain sentences, nothing a voice cannot say), who it talks to, its
 * language, and when to use the built-in tools.
 */
export function systemPrompt(input: PromptInput): string {
  const lines: string[] = [];
  lines.push(
    input.instructions?.trim() ||
      `You are ${input.agentName}, a friendly and concise phone agent. Help the person you called.`,
  );
  lines.push('');
  lines.push(
    `You are on a phone call as ${input.agentName}, talking with ${input.contactName || 'the person you called'}.`,
  );
  if (input.media === 'audio') {
    lines.push(
      'Everything you write is spoken aloud by text-to-speech: answer in one to three short, plain sentences; no lists, markdown, emoji or links; write numbers, dates and symbols the way they are said.',
      'What the callee says comes from speech recognition and may have small errors: go by the meaning.',
    );
  } else {
    lines.push('Answer in one to three short, plain sentences, as you would speak them.');
  }
  if (input.language && !/^en\b/i.test(input.language)) {
    lines.push(`Speak ${languageName(input.language)} (${input.language}).`);
  }
  lines.push(
    'When the conversation is over, say a short goodbye and call end_call in the same reply.',
    'In a phone menu, press keys with send_dtmf.',
    'If you reach an answering machine or a voicemail greeting, call leave_voicemail.',
  );
  if (input.canTransfer) {
    lines.push('When the callee asks for a person, or you cannot help, tell them and call transfer_call.');
  }
  return lines.join('\n');
}
