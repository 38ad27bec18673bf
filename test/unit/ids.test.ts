import { describe, expect, it } from 'vitest';
import { hasPrefix, newId } from '../../src/domain/ids.js';

describe('newId', () => {
  it('is prefixed, 26 base32 characters long and unique', () => {
    const ids = Array.from({ length: 10_000 }, () => newId('call'));
    for (const id of ids.slice(0, 50)) expect(id).toMatch(/^call_[0-9a-hjkmnp-tv-z]{26}$/);
    expect(new Set(ids).size).toBe(ids.length);
    expect(hasPrefix(ids[0] ?? '', 'call')).toBe(true);
    expect(hasPrefix(ids[0] ?? '', 'bat')).toBe(false);
  });

  it('sorts by creation time, also within one millisecond', () => {
    const sameMs = Array.from({ length: 1000 }, () => newId('bat', 1_700_000_000_000));
    expect([...sameMs].sort()).toEqual(sameMs);
    const later = newId('bat', 1_700_000_000_001);
    const earlier = newId('bat', 1_600_000_000_000);
    expect(later > (sameMs.at(-1) ?? '')).toBe(true);
    expect(earlier < (sameMs[0] ?? '')).toBe(true);
  });
});
