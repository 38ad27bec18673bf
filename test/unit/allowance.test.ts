import { describe, expect, it } from 'vitest';
import { dialAllowance, outOfMinutes } from '../../src/domain/allowance.js';

describe('dial allowance', () => {
  it('allows no more calls than the free places nor the unreserved minutes', () => {
    expect(dialAllowance({ availableMinutes: 100, maxConcurrentCalls: 10, callsInProgress: 7 })).toEqual({
      calls: 3,
      freePlaces: 3,
      reservedMinutes: 7,
      unreservedMinutes: 93,
    });
    expect(dialAllowance({ availableMinutes: 9, maxConcurrentCalls: 10, callsInProgress: 7 }).calls).toBe(2);
    expect(dialAllowance({ availableMinutes: 2, maxConcurrentCalls: 10, callsInProgress: 2 }).calls).toBe(0);
  });

  it('allows nothing over the limit (lowered below the calls up) or on a balance already below zero', () => {
    expect(dialAllowance({ availableMinutes: 50, maxConcurrentCalls: 2, callsInProgress: 5 })).toMatchObject({
      calls: 0,
      freePlaces: 0,
    });
    expect(dialAllowance({ availableMinutes: -4, maxConcurrentCalls: 10, callsInProgress: 1 })).toMatchObject(
      {
        calls: 0,
        unreservedMinutes: -5,
      },
    );
  });

  it('stops a batch for credit only when the balance itself is spent', () => {
    expect(outOfMinutes({ availableMinutes: 0 })).toBe(true);
    expect(outOfMinutes({ availableMinutes: -3 })).toBe(true);
    expect(outOfMinutes({ availableMinutes: 1 })).toBe(false);
  });
});
