import type { FinalCallStatus, TranscriptEntry } from '../../domain/call.js';

/**
 * What the simulated telephone network does with a number, decided by its last four digits
 * (../shared/DESIGN.md): 0001 busy, 0002 no answer, 0003 failed, 0004 voicemail, 0006 busy on the
 * first attempt then answered, 0007 no answer on the first attempt then answered, 0008 answered by
 * someone who asks not to be called again; any other number answers and holds a conversation that
 * varies with the number (interested, not interested, asks for a callback).
 */
export type SimulatedOutcome =
  | { kind: 'unanswered'; status: Exclude<FinalCallStatus, 'COMPLETED' | 'VOICEMAIL'>; error: string }
  | { kind: 'voicemail' }
  | { kind: 'conversation'; script: ConversationScript };

export type ConversationScript = 'interested' | 'not_interested' | 'callback' | 'do_not_call';

export function simulatedOutcome(phoneNumber: string, attempt: number): SimulatedOutcome {
  const suffix = phoneNumber.slice(-4);
  switch (suffix) {
    case '0001':
      return { kind: 'unanswered', status: 'BUSY', error: 'Line busy' };
    case '0002':
      return { kind: 'unanswered', status: 'NO_ANSWER', error: 'No answer' };
    case '0003':
      return { kind: 'unanswered', status: 'FAILED', error: 'Call failed: number unreachable' };
    case '0004':
      return { kind: 'voicemail' };
    case '0008':
      return { kind: 'conversation', script: 'do_not_call' };
    case '0006':
      return attempt <= 1
        ? { kind: 'unanswered', status: 'BUSY', error: 'Line busy' }
        : { kind: 'conversation', script: scriptFor(phoneNumber) };
    case '0007':
      return attempt <= 1
        ? { kind: 'unanswered', status: 'NO_ANSWER', error: 'No answer' }
        : { kind: 'conversation', script: scriptFor(phoneNumber) };
    default:
      return { kind: 'conversation', script: scriptFor(phoneNumber) };
  }
}

/** The script follows the number's digits, so the same number always has the same conversation. */
export function scriptFor(phoneNumber: string): ConversationScript {
  const digits = phoneNumber.replace(/\D/g, '');
  const sum = [...digits].reduce((total, digit) => total + Number(digit), 0);
  const scripts: ConversationScript[] = ['interested', 'not_interested', 'callback'];
  return scripts[sum % 3] ?? 'interested';
}

export interface ScriptNames {
  agentName: string;
  contactName: string;
}

export function conversation(script: ConversationScript, names: ScriptNames): TranscriptEntry[] {
  const contact = names.contactName && names.contactName !== 'Unknown' ? names.contactName : 'there';
  const opening: TranscriptEntry[] = [
    {
      role: 'assistant',
      content: `Hi ${contact}, this is ${names.agentName}. Do you have a minute to talk?`,
    },
  ];
  switch (script) {
    case 'interested':
      return [
        ...opening,
        { role: 'user', content: `Sure, this is ${contact}. What is it about?` },
        {
          role: 'assistant',
          content: 'We help teams automate their outbound calls. Would a short demo next week be useful?',
        },
        { role: 'user', content: 'Yes, that sounds interesting. Tuesday afternoon works for me.' },
        { role: 'assistant', content: `Great, I have booked Tuesday afternoon. Thank you, ${contact}!` },
        { role: 'user', content: 'Thanks, talk then.' },
      ];
    case 'not_interested':
      return [
        ...opening,
        { role: 'user', content: 'What is this about?' },
        { role: 'assistant', content: 'We help teams automate their outbound calls. Could I tell you more?' },
        { role: 'user', content: 'No thanks, we are not interested. We are happy with what we have.' },
        { role: 'assistant', content: `Understood, ${contact}. I will make a note of it. Have a good day.` },
      ];
    case 'callback':
      return [
        ...opening,
        { role: 'user', content: 'I am in a meeting right now. Can you call me back tomorrow morning?' },
        { role: 'assistant', content: `Of course, ${contact}. I will call you back tomorrow morning.` },
        { role: 'user', content: 'Thank you, bye.' },
      ];
    case 'do_not_call':
      return [
        ...opening,
        {
          role: 'user',
          content: 'No. Please take this number off your list and do not call me again. Goodbye.',
        },
        { role: 'assistant', content: `Understood, ${contact}. We will not call you again. Goodbye.` },
      ];
    default: {
      const unreachable: never = script;
      return unreachable;
    }
  }
}

export const VOICEMAIL_TRANSCRIPT = (names: ScriptNames): TranscriptEntry[] => [
  {
    role: 'user',
    content:
      "Hi, you've reached my voicemail. I can't take your call right now, please leave a message after the tone.",
  },
  {
    role: 'assistant',
    content: `Hello, this is ${names.agentName}. Sorry I missed you, I will try again later. Goodbye.`,
  },
];
