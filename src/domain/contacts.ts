import type { ConsentRecord } from './batch.js';

/** The name a contact is stored with when none was given (the spec's default): no name at all. */
export const UNKNOWN_CONTACT_NAME = 'Unknown';

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
