import { describe, expect, it } from 'vitest';
import { progressLine, summaryLines, type WatchFigures } from '../../src/cli/watch.js';
import { BATCH_STATUSES } from '../../src/domain/batch.js';

/** The widest figures a campaign can have: 100,000 contacts (the batch limit), 30 calls/s at most. */
const widest = (status: WatchFigures['status']): WatchFigures => ({
  status,
  total: 100_000,
  processed: 99_999,
  succeeded: 88_888,
  failed: 11_111,
  callsPerSecond: 29.99,
});

describe('batch watch lines', () => {
  it('fits 80 columns at any campaign size and status, keeping a bar', () => {
    for (const status of BATCH_STATUSES) {
      const line = progressLine(widest(status), 80);
      expect(line.length, line).toBeLessThan(80);
      expect(line).toMatch(/^\[█+░*\] 99% 99999\/100000 ok 88888 failed 11111 29\.99 calls\/s /);
      for (const summary of summaryLines('bat_01m86nq4nvyma35ynh9c1t193x', widest(status)))
        expect(summary.length, summary).toBeLessThanOrEqual(80);
    }
  });

  it('draws the bar from the share processed, and widens it (to 30) on a wide terminal', () => {
    const half = {
      ...widest('processing'),
      total: 10,
      processed: 5,
      succeeded: 4,
      failed: 1,
      callsPerSecond: 2,
    };
    expect(progressLine(half, 120)).toBe(
      `[${'█'.repeat(15)}${'░'.repeat(15)}] 50% 5/10 ok 4 failed 1 2 calls/s processing`,
    );
    const narrow = progressLine(half, 60);
    expect(narrow.length).toBe(59);
    expect(narrow).toBe(`[${'█'.repeat(7)}${'░'.repeat(6)}] 50% 5/10 ok 4 failed 1 2 calls/s processing`);
  });

  it('drops the bar, then cuts the figures, on a terminal too narrow for both', () => {
    const figures = widest('processing');
    const figuresOnly = '99% 99999/100000 ok 88888 failed 11111 29.99 calls/s processing';
    expect(progressLine(figures, 70)).toBe(figuresOnly);
    expect(progressLine(figures, 40)).toBe(figuresOnly.slice(0, 39));
  });

  it('shows 0% for a campaign with no contacts yet (still ingesting)', () => {
    const empty = {
      ...widest('ingesting'),
      total: 0,
      processed: 0,
      succeeded: 0,
      failed: 0,
      callsPerSecond: 0,
    };
    expect(progressLine(empty, 80)).toMatch(/^\[░+\] 0% 0\/0 ok 0 failed 0 0 calls\/s ingesting$/);
  });
});
