/**
 * Cuts a streamed reply into sentences as it arrives, so that each is spoken as soon as it is
 * complete: text deltas in, whole sentences out. A period is not an end inside "Dr. Rao", "e.g.",
 * "3.5" or "$4.99"; an ellipsis ends a sentence only before a capital; a long clause without an
 * end is cut at a comma so that speech starts early.
 */

export interface SentenceSplitterOptions {
  /**
   * A sentence still without its end at this many characters is cut at its next clause break
   * (", ", "; ", ": ", " - "). Default 60: about 4 s of speech, and a first clause reaches the
   * speaker without waiting for the whole sentence.
   */
  clauseChars?: number;
  /** With no break at all, a run is cut at its last space at this length. Default 200. */
  maxChars?: number;
}

/** Sentence-ending marks: Latin, Devanagari danda, Arabic question mark, CJK full stops. */
const TERMINATORS = new Set(['.', '!', '?', '…', '।', '॥', '؟', '。', '！', '？']);
/** What may follow the mark and still belong to the sentence: closing quotes and brackets. */
const CLOSERS = new Set(['"', "'", '”', '’', ')', ']', '»', '」']);
/** Abbreviations that never end a sentence (a title before a name, "e.g." before an example). */
const NEVER_END = new Set([
  'mr',
  'mrs',
  'ms',
  'dr',
  'prof',
  'st',
  'sr',
  'jr',
  'mt',
  'eg',
  'ie',
  'vs',
  'cf',
  'approx',
]);
/** Abbreviations that end a sentence only when a capital follows ("at 10 a.m. Then..."). */
const END_BEFORE_CAPITAL = new Set(['etc', 'am', 'pm', 'no', 'inc', 'ltd', 'co', 'corp']);

const isSpace = (char: string | undefined) => char !== undefined && /\s/.test(char);
const isUpper = (char: string | undefined) =>
  char !== undefined && char.toLowerCase() !== char.toUpperCase() && char === char.toUpperCase();
/** Letters of any script (a sentence of digits and marks alone, "1.", is a list number). */
const hasLetter = (text: string) => /\p{L}/u.test(text);

type Verdict = 'end' | 'not' | 'wait';

export class SentenceSplitter {
  readonly #clauseChars: number;
  readonly #maxChars: number;
  #buffer = '';

  constructor(options: SentenceSplitterOptions = {}) {
    this.#clauseChars = options.clauseChars ?? 60;
    this.#maxChars = Math.max(options.maxChars ?? 200, this.#clauseChars);
  }

  /** Adds a delta; returns the sentences it completed, in order (trimmed, never empty). */
  push(delta: string): string[] {
    this.#buffer += delta;
    const out: string[] = [];
    for (let end = this.#boundary(false); end > 0; end = this.#boundary(false)) this.#take(end, out);
    return out;
  }

  /** The reply is over: whatever is left, as sentences. */
  flush(): string[] {
    const out: string[] = [];
    for (let end = this.#boundary(true); end > 0; end = this.#boundary(true)) this.#take(end, out);
    this.#take(this.#buffer.length, out);
    return out;
  }

  /** Text received but not handed out yet. */
  get pending(): string {
    return this.#buffer;
  }

  #take(end: number, out: string[]): void {
    const sentence = this.#buffer.slice(0, end).trim();
    this.#buffer = this.#buffer.slice(end).replace(/^\s+/, '');
    if (sentence !== '') out.push(sentence);
  }

  /** The end of the first complete sentence in the buffer, or 0 when there is none yet. */
  #boundary(final: boolean): number {
    const text = this.#buffer;
    for (let i = 0; i < text.length; i++) {
      const char = text[i] ?? '';
      if (char === '\n') {
        if (hasLetter(text.slice(0, i))) return i + 1;
        continue;
      }
      if (!TERMINATORS.has(char)) continue;
      let end = i + 1;
      while (end < text.length && (TERMINATORS.has(text[end] ?? '') || CLOSERS.has(text[end] ?? ''))) end++;
      const verdict = this.#judge(text, i, end, final);
      if (verdict === 'end') return end;
      if (verdict === 'wait') return 0;
      i = end - 1;
    }
    return this.#clauseCut(text, final);
  }

  /** Whether the marks from `at` to `end` close a sentence. */
  #judge(text: string, at: number, end: number, final: boolean): Verdict {
    if (end >= text.length) return final ? 'end' : 'wait';
    // "3.5", "$4.99", "e.g.," "example.com": a mark not followed by a space is inside the text.
    if (!isSpace(text[end])) return 'not';
    if (!hasLetter(text.slice(0, at))) return 'not';
    let next = end;
    while (next < text.length && isSpace(text[next])) next++;
    const following = next < text.length ? text[next] : undefined;
    const needsCapital = (): Verdict => {
      if (following === undefined) return final ? 'end' : 'wait';
      return isUpper(following) ? 'end' : 'not';
    };
    const marks = text.slice(at, end);
    if (marks.startsWith('...') || marks.startsWith('…')) return needsCapital();
    if (text[at] !== '.' || marks.length > 1) return 'end';
    const word = /([\p{L}][\p{L}.]*)$/u.exec(text.slice(0, at))?.[1] ?? '';
    const bare = word.replace(/\./g, '').toLowerCase();
    if (NEVER_END.has(bare)) return 'not';
    // A single letter is an initial ("J. Rao"), unless nothing comes after it.
    if (bare.length === 1 && /^\p{L}$/u.test(word)) return following === undefined && final ? 'end' : 'not';
    if (END_BEFORE_CAPITAL.has(bare) || word.includes('.')) return needsCapital();
    return 'end';
  }

  /** A long run without an end: cut at a clause break past `clauseChars`, or at a space at `maxChars`. */
  #clauseCut(text: string, final: boolean): number {
    if (final || text.length < this.#clauseChars) return 0;
    const pattern = /[,;:](?=\s)|\s[-–—](?=\s)/g;
    pattern.lastIndex = this.#clauseChars - 1;
    for (let match = pattern.exec(text); match; match = pattern.exec(text)) {
      const end = match.index + match[0].length;
      // The break's space must have arrived, so the cut is not inside "1,000".
      if (end < text.length) return end;
    }
    if (text.length < this.#maxChars) return 0;
    const space = text.lastIndexOf(' ', this.#maxChars);
    return space > 0 ? space : this.#maxChars;
  }
}
