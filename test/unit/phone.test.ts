import { describe, expect, it } from 'vitest';
import { normalizeE164 } from '../../src/domain/phone.js';

describe('normalizeE164', () => {
  it.each(['+14155550123', '+442071838750', '+919876543210', '+966501234567'])('accepts %s', (n) => {
    expect(normalizeE164(n)).toBe(n);
  });

  it.each([
    ['no plus', '14155550123'],
    ['too short', '+1415555'],
    ['spaces', '+1 415 555 0123'],
    ['letters', '+1415555ABCD'],
    ['leading zero country', '+04155550123'],
    ['too long', '+1415555012345678'],
    ['empty', ''],
  ])('refuses %s', (_label, n) => {
    expect(normalizeE164(n)).toBeNull();
  });

  it('trims surrounding white space', () => {
    expect(normalizeE164(' +14155550123 ')).toBe('+14155550123');
  });
});
