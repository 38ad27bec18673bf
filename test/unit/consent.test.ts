import { describe, expect, it } from 'vitest';
import {
  CONSENT_CLOCK_SKEW_MS,
  consentError,
  hasConsent,
  normalizeConsent,
} from '../../src/domain/consent.js';

const now = new Date('2026-03-01T12:00:00Z');

describe('consent records', () => {
  it('a contact has consent only with a record that names its source', () => {
    expect(hasConsent({})).toBe(false);
    expect(hasConsent({ consent: null })).toBe(false);
    expect(hasConsent({ consent: { source: '  ', obtainedAt: '2026-01-01T00:00:00Z' } })).toBe(false);
    expect(hasConsent({ consent: { source: 'web form', obtainedAt: '2026-01-01T00:00:00Z' } })).toBe(true);
  });

  it('accepts an instant in the past or within the clock skew, with any offset', () => {
    expect(consentError({ source: 'web', obtainedAt: '2026-02-28T09:30:00+02:00' }, now)).toBeNull();
    const skewed = new Date(now.getTime() + CONSENT_CLOCK_SKEW_MS).toISOString();
    expect(consentError({ source: 'web', obtainedAt: skewed }, now)).toBeNull();
  });

  it('refuses a consent from the future, a local time and a blank source, naming the field', () => {
    const late = new Date(now.getTime() + CONSENT_CLOCK_SKEW_MS + 1000).toISOString();
    expect(consentError({ source: 'web', obtainedAt: late }, now)).toEqual({
      field: 'obtainedAt',
      message: expect.stringContaining('future'),
    });
    expect(consentError({ source: 'web', obtainedAt: '2026-01-01T10:00:00' }, now)?.field).toBe('obtainedAt');
    expect(consentError({ source: 'web', obtainedAt: '1969-12-31T23:59:59Z' }, now)?.field).toBe(
      'obtainedAt',
    );
    expect(consentError({ source: ' ', obtainedAt: '2026-01-01T10:00:00Z' }, now)?.field).toBe('source');
  });

  it('stores obtainedAt in UTC and text only when given', () => {
    expect(normalizeConsent({ source: 'call', obtainedAt: '2026-02-28T09:30:00+02:00' })).toEqual({
      source: 'call',
      obtainedAt: '2026-02-28T07:30:00.000Z',
    });
    expect(normalizeConsent({ source: 'call', obtainedAt: '2026-02-28T07:30:00Z', text: 'Yes' }).text).toBe(
      'Yes',
    );
  });
});
