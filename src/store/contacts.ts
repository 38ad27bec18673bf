import type { ConsentRecord } from '../domain/batch.js';
import type { ContactChanges } from '../domain/contacts.js';

/**
 * A contact to write: its number and what the write changes, read by the one merge rule
 * (`contactChanges` in domain/contacts.ts). `id` is the id of one of the user's contacts when
 * `byId` (that contact is updated), else the id a new contact takes (an existing one is found by
 * the user's phone number).
 */
export interface ContactMerge extends ContactChanges {
  id: string;
  phoneNumber: string;
  byId?: boolean;
}

/** A contacts row. */
export interface ContactRow {
  id: string;
  user_id: string;
  phone_number: string;
  name: string;
  email: string | null;
  company: string | null;
  metadata: Record<string, unknown>;
  timezone: string | null;
  consent: ConsentRecord | null;
  created_at: Date;
  updated_at: Date;
}

export interface ContactsRepo {
  /** Which of these ids are contacts of the user's. */
  idsOfUser(userId: string, ids: string[]): Promise<string[]>;
  /**
   * Writes contacts, each created or merged into the stored one by the one rule (see ContactWrite),
   * in one set-based statement for those found by id and one for those found by phone number; a
   * contact found by id keeps its number. Returns each contact's row id with the number it was
   * given.
   */
  merge(userId: string, contacts: ContactMerge[]): Promise<Array<{ id: string; phone_number: string }>>;
  getForUser(userId: string, contactId: string): Promise<ContactRow | undefined>;
  /** The user's one contact for web calls, created on first use (touched after). */
  upsertWebContact(
    userId: string,
    contact: { id: string; phoneNumber: string; name: string },
    now: Date,
  ): Promise<{ id: string; name: string; phone_number: string }>;
}
