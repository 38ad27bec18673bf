import { describe, expect, it } from 'vitest';
import {
  campaignAllowance,
  campaignPlaces,
  dialAllowance,
  outOfMinutes,
} from '../../src/domain/allowance.js';

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

  it('leaves one place free for single calls when a campaign claims, unless the user has only one', () => {
    expect(campaignPlaces(10)).toBe(9);
    expect(campaignPlaces(2)).toBe(1);
    expect(campaignPlaces(1)).toBe(1);
    expect(
      campaignAllowance({ availableMinutes: 100, maxConcurrentCalls: 3, callsInProgress: 2 }).calls,
    ).toBe(0);
    expect(dialAllowance({ availableMinutes: 100, maxConcurrentCalls: 3, callsInProgress: 2 }).calls).toBe(1);
    expect(
      campaignAllowance({ availableMinutes: 100, maxConcurrentCalls: 1, callsInProgress: 0 }).calls,
    ).toBe(1);
  });

  it('stops a batch for credit only when the balance itself is spent', () => {
    expect(outOfMinutes({ availableMinutes: 0 })).toBe(true);
    expect(outOfMinutes({ availableMinutes: -3 })).toBe(true);
    expect(outOfMinutes({ availableMinutes: 1 })).toBe(false);
  });
});
