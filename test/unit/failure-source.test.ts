import { describe, expect, it } from 'vitest';
import { ENDED_REASONS } from '../../src/domain/agent-call.js';
import { failedDialEnd } from '../../src/domain/call.js';
import {
  failureSourceOf,
  SERVICE_ENDED_REASONS,
  SERVICE_RETRY_MAX_MS,
  serviceRetryDelayMs,
} from '../../src/domain/failure.js';

describe('whose failure a call was (issue 24)', () => {
  it("the callee's outcomes are the contact's; a completed call failed nobody", () => {
    expect(failureSourceOf({ status: 'COMPLETED', endedReason: 'agent-ended' })).toBeNull();
    expect(failureSourceOf({ status: 'COMPLETED', endedReason: 'callee-hung-up' })).toBeNull();
    expect(failureSourceOf({ status: 'BUSY' })).toBe('contact');
    expect(failureSourceOf({ status: 'NO_ANSWER' })).toBe('contact');
    expect(failureSourceOf({ status: 'VOICEMAIL', endedReason: 'voicemail' })).toBe('contact');
    // A number the network refused (a 404 from a carrier's far end reaches us as FAILED with no reason of ours).
    expect(failureSourceOf({ status: 'FAILED', endedReason: null })).toBe('contact');
  });

  it("every reason of ours is the service's, answered or not", () => {
    for (const reason of [
      'error',
      'model-unavailable',
      'stt-unavailable',
      'tts-unavailable',
      'trunk-unreachable',
      'trunk-rejected',
      'overloaded',
    ] as const) {
      expect(ENDED_REASONS).toContain(reason);
      expect(failureSourceOf({ status: 'FAILED', endedReason: reason })).toBe('service');
    }
    expect(SERVICE_ENDED_REASONS).toHaveLength(7);
  });

  it('a dial the provider refused says itself that it was ours', () => {
    const end = failedDialEnd('call_1', new Date());
    expect(end.failureSource).toBe('service');
    expect(failureSourceOf(end)).toBe('service');
  });

  it('tries a contact again after 30 s, doubling each failure in a row, up to 30 min', () => {
    expect([1, 2, 3, 4].map((n) => serviceRetryDelayMs(n))).toEqual([30_000, 60_000, 120_000, 240_000]);
    expect(serviceRetryDelayMs(7)).toBe(SERVICE_RETRY_MAX_MS);
    expect(serviceRetryDelayMs(1000)).toBe(SERVICE_RETRY_MAX_MS);
    expect(serviceRetryDelayMs(0)).toBe(30_000);
    // OUTDIAL_SERVICE_RETRY_MS sets the first wait; the doubling and the cap stay.
    expect([1, 2, 3].map((n) => serviceRetryDelayMs(n, 1000))).toEqual([1000, 2000, 4000]);
    expect(serviceRetryDelayMs(20, 1000)).toBe(SERVICE_RETRY_MAX_MS);
  });
});
