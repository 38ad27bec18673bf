import { describe, expect, it } from 'vitest';
import { minutesToCharge } from '../../src/domain/billing.js';
import { CALL_STATUSES, failedDialEnd, isFinal, isSuccess } from '../../src/domain/call.js';

describe('call rules', () => {
  it('knows which states are final and which count as success', () => {
    expect(CALL_STATUSES.filter(isFinal)).toEqual(['COMPLETED', 'NO_ANSWER', 'BUSY', 'FAILED', 'VOICEMAIL']);
    expect(CALL_STATUSES.filter(isSuccess)).toEqual(['COMPLETED']);
  });

  it('records a refused dial as FAILED at once, never answered, free and ours', () => {
    const endedAt = new Date('2025-03-01T10:00:00.000Z');
    const end = failedDialEnd('call_1', endedAt);
    expect(end).toEqual({
      callId: 'call_1',
      status: 'FAILED',
      duration: 0,
      answeredAt: null,
      endedAt,
      error: 'The voice provider could not place the call',
      transcription: [],
      failureSource: 'service',
    });
    expect(minutesToCharge(end.status, end.duration, end.failureSource)).toBe(0);
    // Each end is its own: a transcript added to one never shows on another.
    expect(failedDialEnd('call_2', endedAt).transcription).not.toBe(end.transcription);
  });
});
