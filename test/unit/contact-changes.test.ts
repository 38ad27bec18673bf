import { describe, expect, it } from 'vitest';
import { contactChanges, isPlaceholderName } from '../../src/domain/contacts.js';

/** The one merge rule's reading of what a dial or a batch gives (src/domain/contacts.ts). */
describe('contactChanges', () => {
  it('keeps every value given, the consent record normalised', () => {
    const consent = { source: 'form', obtainedAt: '2026-01-05T11:00:00+01:00' };
    const given = { name: 'Ada', email: 'a@example.com', company: 'Acme', metadata: { plan: 'pro' } };
    expect(contactChanges({ ...given, timezone: 'Europe/London', consent })).toEqual({
      ...given,
      timezone: 'Europe/London',
      consent: { source: 'form', obtainedAt: '2026-01-05T10:00:00.000Z' },
    });
  });

  it('leaves out what was not given: absent, null, blank text, an empty metadata object', () => {
    expect(contactChanges({})).toEqual({});
    expect(
      contactChanges({
        name: null,
        email: null,
        company: null,
        metadata: null,
        timezone: null,
        consent: null,
      }),
    ).toEqual({});
    expect(contactChanges({ name: '  ', email: '', company: ' ', metadata: {}, timezone: '' })).toEqual({});
  });

  it('never takes a placeholder name for a name', () => {
    for (const name of ['Unknown', 'unknown', ' UNKNOWN ', '', '\t']) {
      expect(isPlaceholderName(name), name).toBe(true);
      expect(contactChanges({ name }), name).toEqual({});
    }
    expect(isPlaceholderName('Unknown Caller')).toBe(false);
    expect(contactChanges({ name: 'Unknown Caller' })).toEqual({ name: 'Unknown Caller' });
  });
});
