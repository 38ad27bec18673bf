import type { ConsentRecord } from '../domain/batch.js';

/**
 * A contact as a batch gives it. A field left out keeps the stored value; a consent record given
 * replaces the stored one (the latest batch's word).
 */
export interface ContactWrite {
  phoneNumber: string;
  name?: string | undefined;
  email?: string | undefined;
  company?: string | null | undefined;
  metadata?: Record<string, unknown> | undefined;
  timezone?: string | undefined;
  consent?: ConsentRecord | undefined;
}

/**
 * A contact to write: `id` is the id of one of the user's contacts when `byId` (that contact is
 * updated), else the id a new contact takes (an existing one is found by the user's phone number).
 */
export type ContactMerge = ContactWrite & { id: string; byId?: boolean };

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
  /**
   * A single dial's contact: inserted (with `id`) or, for a number the user already has, updated
   * with the details given (a field given replaces the stored one, even by null; metadata merges).
   */
  upsertForDial(userId: string, contact: ContactWrite & { id: string }, now: Date): Promise<ContactRow>;
  /** The user's one contact for web calls, created on first use (touched after). */
  upsertWebContact(
    userId: string,
    contact: { id: string; phoneNumber: string; name: string },
    now: Date,
  ): Promise<{ id: string; name: string; phone_number: string }>;
}
