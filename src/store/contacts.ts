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

export interface ContactsRepo {
  /** Which of these ids are contacts of the user's. */
  idsOfUser(userId: string, ids: string[]): Promise<string[]>;
  /** Updates the user's contacts by id, in one statement. */
  updateById(userId: string, contacts: Array<ContactWrite & { id: string }>): Promise<void>;
  /**
   * Inserts the contacts (with the ids given) or, for a phone number the user already has, updates
   * that contact, in one statement: each row's id and phone number.
   */
  upsertByPhone(
    userId: string,
    contacts: Array<ContactWrite & { id: string }>,
  ): Promise<Array<{ id: string; phone_number: string }>>;
}
