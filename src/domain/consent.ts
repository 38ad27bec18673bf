import type { ConsentRecord } from './batch.js';
import { representableInstant } from './input.js';

/**
 * A consent record's `obtainedAt` may be this far ahead of the server's clock: the system that
 * recorded it and ours may disagree by a few seconds to a few minutes (NTP-less kiosks, phones).
 * Anything later is a consent that has not been given yet, and is refused.
 */
export const CONSENT_CLOCK_SKEW_MS = 5 * 60_000;

/** An ISO 8601 instant: a date, a time and an offset (`Z` or `+hh:mm`); local times are ambiguous. */
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})$/i;

/** Limits of a consent record's fields, shared by the request schema and the checks here. */
export const CONSENT_LIMITS = { source: 200, text: 5_000 } as const;

/**
 * Whether a contact carries a consent record. Under `requireConsent` a contact without one is
 * skipped (never dialed): the record must come with the contact in the request, so a batch (and
 * its preflight) is judged on its own body alone.
 */
export function hasConsent(contact: { consent?: ConsentRecord | null }): boolean {
  const consent = contact.consent;
  return consent != null && typeof consent.source === 'string' && consent.source.trim() !== '';
}

/**
 * What is wrong with a consent record beyond its shape (which the request schema checks), as
 * `{field, message}` with the field relative to the record; null when it is acceptable.
 * `obtainedAt` must be an instant with an offset, not later than `now` plus CONSENT_CLOCK_SKEW_MS.
 */
export function consentError(consent: ConsentRecord, now: Date): { field: string; message: string } | null {
  if (consent.source.trim() === '') return { field: 'source', message: 'must not be blank' };
  if (!INSTANT.test(consent.obtainedAt)) {
    return {
      field: 'obtainedAt',
      message: 'must be an ISO 8601 instant with an offset, such as 2025-03-01T14:30:00Z',
    };
  }
  const at = new Date(consent.obtainedAt);
  if (!representableInstant(at)) {
    return { field: 'obtainedAt', message: 'must be an ISO 8601 instant between the years 1970 and 9999' };
  }
  if (at.getTime() > now.getTime() + CONSENT_CLOCK_SKEW_MS) {
    return { field: 'obtainedAt', message: 'is in the future: consent must have been obtained already' };
  }
  return null;
}

/** The record as stored: `obtainedAt` normalised to UTC (`...Z`), `text` only when given. */
export function normalizeConsent(consent: ConsentRecord): ConsentRecord {
  const obtainedAt = new Date(consent.obtainedAt).toISOString();
  return consent.text === undefined
    ? { source: consent.source, obtainedAt }
    : { source: consent.source, obtainedAt, text: consent.text };
}
