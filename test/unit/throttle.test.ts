import { describe, expect, it } from 'vitest';
import { batchThrottle, type ThrottleFacts, throttleText } from '../../src/domain/throttle.js';

/** Why a campaign dials below its rate (issue 24 §5), from what its status read counts. */
describe('batchThrottle', () => {
  const facts = (over: Partial<ThrottleFacts>): ThrottleFacts => ({
    status: 'processing',
    dueNow: true,
    load: { availableMinutes: 100, maxConcurrentCalls: 10, callsInProgress: 2 },
    waitingForTrunk: 0,
    waitingForWindow: 0,
    nextOpening: null,
    ...over,
  });

  it('is null for a campaign with free places, nothing waiting for a trunk or a window', () => {
    expect(batchThrottle(facts({}))).toBeNull();
    expect(throttleText(null)).toMatch(/configured rate/);
  });

  it("names the user's places when campaigns hold all they may (one kept for single calls)", () => {
    const throttle = batchThrottle(
      facts({ load: { availableMinutes: 100, maxConcurrentCalls: 10, callsInProgress: 9 } }),
    );
    expect(throttle).toEqual({ reason: 'user-concurrency', limit: 10, inProgress: 9, keptForSingleCalls: 1 });
    expect(throttleText(throttle)).toBe(
      'Your concurrent-call limit: 9 of 10 calls in progress (1 kept for single calls)',
    );
  });

  it('names the trunk when claimed calls wait for a place on it', () => {
    const throttle = batchThrottle(facts({ waitingForTrunk: 4 }));
    expect(throttle).toEqual({ reason: 'trunk-capacity', waitingForTrunk: 4 });
    expect(throttleText(throttle)).toMatch(/4 calls waiting for a place on the trunk/);
  });

  it('names the calling window only when nothing is due, with the next opening', () => {
    const opening = new Date('2030-03-06T16:00:00.000Z');
    const waiting = facts({ dueNow: false, waitingForWindow: 3, nextOpening: opening });
    expect(batchThrottle(waiting)).toEqual({
      reason: 'calling-window',
      waitingForWindow: 3,
      nextOpening: '2030-03-06T16:00:00.000Z',
    });
    expect(throttleText(batchThrottle(waiting))).toMatch(
      /3 contacts wait for it to open \(next at 2030-03-06T16:00/,
    );
    // Contacts due now are dialed: the window holds nobody back yet.
    expect(batchThrottle(facts({ dueNow: true, waitingForWindow: 3, nextOpening: opening }))).toBeNull();
  });

  it('is null while a campaign does not dial (scheduled, paused, finished), whatever holds it', () => {
    for (const status of ['scheduled', 'paused', 'completed', 'cancelled', 'ingesting'] as const)
      expect(batchThrottle(facts({ status, waitingForTrunk: 2 }))).toBeNull();
  });

  it('puts the user first: places, then the trunk, then the window', () => {
    const full = { availableMinutes: 100, maxConcurrentCalls: 3, callsInProgress: 2 };
    expect(batchThrottle(facts({ load: full, waitingForTrunk: 2, waitingForWindow: 1 }))?.reason).toBe(
      'user-concurrency',
    );
    expect(batchThrottle(facts({ waitingForTrunk: 2, dueNow: false, waitingForWindow: 1 }))?.reason).toBe(
      'trunk-capacity',
    );
  });
});
