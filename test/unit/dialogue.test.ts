import { describe, expect, it } from 'vitest';
import { heardWords, isBackchannel, saysGoodbye, systemPrompt } from '../../src/domain/dialogue.js';

const IGNORE = ['yeah', 'uh-huh', 'mm-hmm', 'okay', 'right', 'all right', 'i see'];

describe('backchannels', () => {
  it('are words that only show the callee listens', () => {
    expect(isBackchannel('Yeah.', IGNORE)).toBe(true);
    expect(isBackchannel('uh huh', IGNORE)).toBe(true);
    expect(isBackchannel('Uh-huh, yeah, right', IGNORE)).toBe(true);
    expect(isBackchannel('uhhuh', IGNORE)).toBe(true);
    expect(isBackchannel('all right', IGNORE)).toBe(true);
    expect(isBackchannel('I see.', IGNORE)).toBe(true);
  });

  it('stop being backchannels at the first other word', () => {
    expect(isBackchannel('yeah but wait', IGNORE)).toBe(false);
    expect(isBackchannel('stop', IGNORE)).toBe(false);
    expect(isBackchannel('I', IGNORE)).toBe(false);
    expect(isBackchannel('all', IGNORE)).toBe(false);
  });

  it('never include silence or an empty list', () => {
    expect(isBackchannel('', IGNORE)).toBe(false);
    expect(isBackchannel('  ...  ', IGNORE)).toBe(false);
    expect(isBackchannel('yeah', [])).toBe(false);
  });
});

describe('heard words', () => {
  const sentence = 'one two three four five six seven eight nine ten';

  it('are the share of the words in the share of the audio played, whole words only', () => {
    expect(heardWords(sentence, 500, 1000)).toBe('one two three four five');
    expect(heardWords(sentence, 290, 1000)).toBe('one two');
    expect(heardWords(sentence, 0, 1000)).toBe('');
  });

  it('are the whole sentence when it played out', () => {
    expect(heardWords(sentence, 1000, 1000)).toBe(sentence);
    expect(heardWords(sentence, 1200, 1000)).toBe(sentence);
  });
});

describe('goodbyes in the agent own words', () => {
  it('end the call when the last sentence is a farewell', () => {
    expect(saysGoodbye('Thanks for your time. Goodbye!')).toBe(true);
    expect(saysGoodbye('Thank you, bye.')).toBe(true);
    expect(saysGoodbye('All set. Have a great day, Priya!')).toBe(true);
    expect(saysGoodbye('Take care.')).toBe(true);
    expect(saysGoodbye('ठीक है, धन्यवाद। अलविदा।')).toBe(true);
    expect(saysGoodbye('شكرا لك، مع السلامة')).toBe(true);
  });

  it('do not end it when the farewell is not the end', () => {
    expect(saysGoodbye('Goodbye is not what I want to say yet. Can I ask one more thing?')).toBe(false);
    expect(saysGoodbye('Before we say goodbye, shall I send the details?')).toBe(false);
    expect(saysGoodbye("I'll take care of that for you.")).toBe(false);
    expect(saysGoodbye('Hello, this is Ana from Acme.')).toBe(false);
    expect(saysGoodbye('')).toBe(false);
  });
});

describe('the system prompt', () => {
  it('starts with the instructions and names the tools and the language', () => {
    const prompt = systemPrompt({
      instructions: 'Book a demo with Priya at Acme.',
      agentName: 'Ana',
      contactName: 'Priya',
      language: 'hi-IN',
      canTransfer: true,
      media: 'audio',
    });
    expect(prompt.startsWith('Book a demo with Priya at Acme.')).toBe(true);
    expect(prompt).toContain('end_call');
    expect(prompt).toContain('transfer_call');
    expect(prompt).toContain('Hindi');
    expect(prompt).toContain('spoken aloud');
  });

  it('leaves transfer out without a transfer number', () => {
    const prompt = systemPrompt({
      instructions: null,
      agentName: 'Ana',
      contactName: 'Priya',
      language: 'en-US',
      canTransfer: false,
      media: 'text',
    });
    expect(prompt).toContain('You are Ana');
    expect(prompt).not.toContain('transfer_call');
    expect(prompt).not.toContain('Speak ');
  });
});
