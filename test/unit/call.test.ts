import { describe, expect, it } from 'vitest';
import { CALL_STATUSES, isFinal, isSuccess } from '../../src/domain/call.js';

describe('call rules', () => {
  it('knows which states are final and which count as success', () => {
    expect(CALL_STATUSES.filter(isFinal)).toEqual(['COMPLETED', 'NO_ANSWER', 'BUSY', 'FAILED', 'VOICEMAIL']);
    expect(CALL_STATUSES.filter(isSuccess)).toEqual(['COMPLETED']);
  });
});
