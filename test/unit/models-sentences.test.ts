import { describe, expect, it } from 'vitest';
import { SentenceSplitter } from '../../src/voice/sentences.js';

/** Feeds the text in the given pieces; returns what came out after each piece, then the flush. */
function stream(pieces: string[], splitter = new SentenceSplitter()): { steps: string[][]; rest: string[] } {
  const steps = pieces.map((piece) => splitter.push(piece));
  return { steps, rest: splitter.flush() };
}

/** The sentences of a text fed one character at a time (the hardest chunking). */
function split(text: string, splitter = new SentenceSplitter()): string[] {
  const { steps, rest } = stream([...text], splitter);
  return [...steps.flat(), ...rest];
}

describe('SentenceSplitter', () => {
  it('hands out each sentence as soon as what follows shows it ended', () => {
    const { steps, rest } = stream([
      'Hello ',
      'Jordan',
      '. This',
      ' is Ava',
      ' from Acme!',
      ' How are',
      ' you?',
    ]);
    // A period is an end once a space follows it; "!" at the end of what came may be "!?" still.
    expect(steps).toEqual([[], [], ['Hello Jordan.'], [], [], ['This is Ava from Acme!'], []]);
    expect(rest).toEqual(['How are you?']);
  });

  it('does not end a sentence at titles, e.g./i.e., decimals, prices or initials', () => {
    expect(
      split(
        'Dr. Rao and Mrs. Iyer will call, e.g. on Tuesday, i.e., tomorrow. The plan costs $4.99 a month.',
      ),
    ).toEqual([
      'Dr. Rao and Mrs. Iyer will call, e.g. on Tuesday, i.e., tomorrow.',
      'The plan costs $4.99 a month.',
    ]);
    expect(split('Rates rose 3.5 percent. J. K. Rao agreed. Visit example.com today.')).toEqual([
      'Rates rose 3.5 percent.',
      'J. K. Rao agreed.',
      'Visit example.com today.',
    ]);
  });

  it('ends at an abbreviation or an ellipsis only before a capital', () => {
    expect(split('Call me at 10 a.m. Tomorrow is fine. We sell pens, paper etc. and more.')).toEqual([
      'Call me at 10 a.m.',
      'Tomorrow is fine.',
      'We sell pens, paper etc. and more.',
    ]);
    expect(split('Well... I think so. I was thinking... maybe later.')).toEqual([
      'Well...',
      'I think so.',
      'I was thinking... maybe later.',
    ]);
  });

  it('keeps closing quotes and repeated marks with their sentence', () => {
    expect(split('He said "yes." Really?! Okay (fine.) Bye')).toEqual([
      'He said "yes."',
      'Really?!',
      'Okay (fine.)',
      'Bye',
    ]);
  });

  it('splits Hindi at the danda and Arabic at its question mark', () => {
    expect(split('नमस्ते। आप कैसे हैं? मैं ठीक हूँ।')).toEqual(['नमस्ते।', 'आप कैसे हैं?', 'मैं ठीक हूँ।']);
    expect(split('مرحبا؟ كيف حالك.')).toEqual(['مرحبا؟', 'كيف حالك.']);
  });

  it('cuts a long clause at a comma after clauseChars, and a run without breaks at maxChars', () => {
    const long =
      'We have a wonderful range of plans for families and for small businesses, and each of them comes with support';
    const { steps } = stream(long.split(/(?<= )/));
    expect(steps.flat()).toEqual([
      'We have a wonderful range of plans for families and for small businesses,',
    ]);
    // No cut inside "1,000", and nothing short is cut.
    expect(split('It costs 1,000 rupees, paid monthly')).toEqual(['It costs 1,000 rupees, paid monthly']);
    const words = Array.from({ length: 60 }, (_, i) => `word${i}`).join(' ');
    const parts = split(words, new SentenceSplitter({ maxChars: 100 }));
    expect(parts.length).toBeGreaterThan(3);
    expect(parts.every((part) => part.length <= 100)).toBe(true);
    expect(parts.join(' ')).toBe(words);
  });

  it('flushes the rest, keeps list numbers with their item, and drops empty pieces', () => {
    expect(split('1. Call back. 2. Send the offer')).toEqual(['1. Call back.', '2. Send the offer']);
    expect(split('First line\nSecond line.\n\n  ')).toEqual(['First line', 'Second line.']);
    expect(split('   ')).toEqual([]);
    const splitter = new SentenceSplitter();
    expect(splitter.push('Thanks, Dr.')).toEqual([]);
    expect(splitter.pending).toBe('Thanks, Dr.');
    expect(splitter.flush()).toEqual(['Thanks, Dr.']);
  });
});
