import type { ConsentRecord } from './batch.js';
import { normalizeConsent } from './consent.js';

/** The name a contact is stored with when none was given (the spec's default): no name at all. */
export const UNKNOWN_CONTACT_NAME = 'Unknown';

/**
 * Whether a name stands for no name: blank, or the spec's default 'Unknown' (in any case). A
 * batch contact sent without a name arrives as 'Unknown', so such a name is never taken for a
 * real one.
 */
export function isPlaceholderName(name: string): boolean {
  const trimmed = name.trim();
  return trimmed === '' || trimmed.toLowerCase() === UNKNOWN_CONTACT_NAME.toLowerCase();
}

/** A contact's details as a batch contact or a dial's callerDetails give them. */
export interface ContactDetailsInput {
  name?: string | null | undefined;
  email?: string | null | undefined;
  company?: string | null | undefined;
  metadata?: Record<string, unknown> | null | undefined;
  timezone?: string | null | undefined;
  consent?: ConsentRecord | null | undefined;
}

/**
 * What writing a contact changes: each field present replaces the stored value, each field left
 * out keeps it; `metadata` merges into the stored object key by key (a key given replaces that
 * key, the others stay). A new contact takes the fields present, 'Unknown' for a name and `{}`
 * for metadata otherwise.
 */
export interface ContactChanges {
  name?: string;
  email?: string;
  company?: string;
  metadata?: Record<string, unknown>;
  timezone?: string;
  consent?: ConsentRecord;
}

/**
 * The one merge rule of contacts, for single dials and batches alike: a value given replaces the
 * stored one; a value not given (absent, null, or blank text) keeps it; a placeholder name
 * ('Unknown', blank) never replaces a name; metadata merges key by key (an empty object changes
 * nothing); a consent record or a timezone given replaces the stored one. The consent record is
 * stored normalised. The repository applies these changes in bulk (`ContactsRepo.merge`).
 */
export function contactChanges(given: ContactDetailsInput): ContactChanges {
  const changes: ContactChanges = {};
  const text = (value: string | null | undefined) =>
    typeof value === 'string' && value.trim() !== '' ? value : undefined;
  if (typeof given.name === 'string' && !isPlaceholderName(given.name)) changes.name = given.name;
  const email = text(given.email);
  if (email !== undefined) changes.email = email;
  const company = text(given.company);
  if (company !== undefined) changes.company = company;
  if (given.metadata && Object.keys(given.metadata).length > 0) changes.metadata = given.metadata;
  const timezone = text(given.timezone);
  if (timezone !== undefined) changes.timezone = timezone;
  if (given.consent) changes.consent = normalizeConsent(given.consent);
  return changes;
}

/** A contact as a batch request gives it (the spec's Contact). */
export interface BatchContactInput {
  id?: string;
  phoneNumber: string;
  name?: string;
  email?: string;
  company?: string | null;
  metadata?: Record<string, unknown>;
  /** The contact's own IANA zone: its calling window is read there. */
  timezone?: string;
  /** Consent to be called (issue 15); required under the batch option requireConsent. */
  consent?: ConsentRecord;
}

/**
 * The contacts a batch dials: the first occurrence of each phone number, in request order. Later
 * occurrences are counted, not dialed: a campaign never calls one number twice for one attempt.
 */
export function distinctContacts(contacts: BatchContactInput[]): {
  distinct: BatchContactInput[];
  duplicates: number;
} {
  const seen = new Set<string>();
  const distinct: BatchContactInput[] = [];
  for (const contact of contacts) {
    if (seen.has(contact.phoneNumber)) continue;
    seen.add(contact.phoneNumber);
    distinct.push(contact);
  }
  return { distinct, duplicates: contacts.length - distinct.length };
}
