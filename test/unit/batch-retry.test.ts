import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY, nextStep, type RetryPolicy } from '../../src/domain/batch.js';
import { CALL_STATUSES, isFinal } from '../../src/domain/call.js';

const policy: RetryPolicy = {
  maxAttempts: 3,
  noAnswerDelayMs: 600,
  busyDelayMs: 250,
  retryOnVoicemail: false,
};

describe('nextStep: a batch contact after an attempt', () => {
  it('retries NO_ANSWER after noAnswerDelay, BUSY and FAILED after busyDelay', () => {
    expect(nextStep('NO_ANSWER', 1, policy)).toEqual({ retry: true, delayMs: 600 });
    expect(nextStep('BUSY', 1, policy)).toEqual({ retry: true, delayMs: 250 });
    expect(nextStep('FAILED', 2, policy)).toEqual({ retry: true, delayMs: 250 });
  });

  it('is done after COMPLETED, and after any outcome once maxAttempts is used', () => {
    expect(nextStep('COMPLETED', 1, policy)).toEqual({ retry: false });
    for (const outcome of CALL_STATUSES.filter(isFinal))
      expect(nextStep(outcome, 3, policy)).toEqual({ retry: false });
  });

  it('is done after VOICEMAIL by default: the message is left once', () => {
    expect(DEFAULT_RETRY.retryOnVoicemail).toBe(false);
    expect(nextStep('VOICEMAIL', 1, DEFAULT_RETRY)).toEqual({ retry: false });
    expect(nextStep('VOICEMAIL', 1, policy)).toEqual({ retry: false });
  });

  it('retries VOICEMAIL after noAnswerDelay when retryOnVoicemail is set, up to maxAttempts', () => {
    const retrying = { ...policy, retryOnVoicemail: true };
    expect(nextStep('VOICEMAIL', 1, retrying)).toEqual({ retry: true, delayMs: 600 });
    expect(nextStep('VOICEMAIL', 2, retrying)).toEqual({ retry: true, delayMs: 600 });
    expect(nextStep('VOICEMAIL', 3, retrying)).toEqual({ retry: false });
  });
});
