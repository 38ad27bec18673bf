import { describe, expect, it } from 'vitest';
import { keyExpiry } from '../../src/http/dashboard/pages/api-keys.js';
import { timeLeft } from '../../src/services/batch-reads.js';
import { everySecond } from '../../src/services/dashboard.js';

const config = { estimatedMinutesPerCall: 1 };
const now = new Date('2026-03-01T12:00:00Z');
const none = { count: 0, lastDueAt: null };

describe('time left of a running campaign', () => {
  it('is the contacts left to dial at the rate, plus one call for the last of them', () => {
    // 100 left, 5 up: 95 to dial at 10/s = 9.5 s, then a 30 s call.
    expect(timeLeft(100, 10, { live: 5, youngest: now, meanMs: 30_000, held: 0 }, none, now, config)).toBe(
      39_500,
    );
  });

  it('counts the calls still up once everyone is dialed', () => {
    const youngest = new Date(now.getTime() - 10_000);
    expect(timeLeft(3, 10, { live: 3, youngest, meanMs: 30_000, held: 0 }, none, now, config)).toBe(20_000);
  });

  it('never says 0 while a call is up, even one longer than usual', () => {
    const youngest = new Date(now.getTime() - 90_000);
    expect(timeLeft(1, 10, { live: 1, youngest, meanMs: 30_000, held: 0 }, none, now, config)).toBe(1000);
  });

  it('uses the configured minutes per call before any call ended', () => {
    expect(timeLeft(10, 5, { live: 0, youngest: null, meanMs: null, held: 0 }, none, now, config)).toBe(
      62_000,
    );
  });

  it('lasts until the last retry is due, plus its dial and one call, when contacts wait on a retry', () => {
    // 4 left, all waiting on a retry, the last due in an hour: the rate alone would say 0.4 s + 30 s.
    const retries = { count: 4, lastDueAt: new Date(now.getTime() + 3_600_000) };
    const calls = { live: 0, youngest: null, meanMs: 30_000, held: 0 };
    expect(timeLeft(4, 10, calls, retries, now, config)).toBe(3_600_000 + 100 + 30_000);
    // With others still to dial now, the longer of the two.
    expect(
      timeLeft(1000, 10, calls, { count: 4, lastDueAt: new Date(now.getTime() + 5_000) }, now, config),
    ).toBe(99_600 + 30_000);
  });

  it('is unknown with nothing left and nothing up', () => {
    expect(timeLeft(0, 10, { live: 0, youngest: null, meanMs: 1000, held: 0 }, none, now, config)).toBeNull();
  });
});

describe('calls per second series', () => {
  it('has a point at 0 for each idle second between busy ones', () => {
    expect(
      everySecond(
        [
          [100, 2],
          [103, 1],
        ],
        null,
      ),
    ).toEqual([
      [100, 2],
      [101, 0],
      [102, 0],
      [103, 1],
    ]);
  });

  it('runs on to now while the batch runs, and keeps to ten minutes', () => {
    const series = everySecond([[100, 4]], 1000);
    expect(series).toHaveLength(600);
    expect(series[0]).toEqual([401, 0]);
    expect(series.at(-1)).toEqual([1000, 0]);
    expect(everySecond([], 1000)).toEqual([]);
  });
});

describe('key expiry from the form', () => {
  it('is the midnight UTC after the chosen day; empty is never', () => {
    expect(keyExpiry('2026-03-01')?.toString()).toBe(new Date('2026-03-02T00:00:00Z').toString());
    expect(keyExpiry('2026-12-31')).toEqual(new Date('2027-01-01T00:00:00Z'));
    expect(keyExpiry('')).toBeNull();
    expect(keyExpiry(undefined)).toBeNull();
  });

  it('refuses what is not a day of the calendar', () => {
    for (const value of ['2026-02-29', '2026-13-01', '2026-1-1', 'tomorrow', '2026-03-01T00:00'])
      expect(keyExpiry(value), value).toBe('invalid');
    expect(keyExpiry('2028-02-29')).toEqual(new Date('2028-03-01T00:00:00Z'));
  });
});
