/**
 * The rows a transaction locks, always in this order: batches, then users, then contacts, then
 * calls. Two transactions that each wait for a row the other holds deadlock; taking every kind in
 * one order makes that impossible. A lock taken out of this order throws (see the Pg adapter).
 */
export const LOCK_ORDER = ['batches', 'users', 'contacts', 'calls'] as const;
export type LockKind = (typeof LOCK_ORDER)[number];

/** Row locks (`for update`) held until the transaction ends; only usable inside `Store.tx`. */
export interface LocksRepo {
  /** Each kind given, in LOCK_ORDER, each kind's rows in id order. */
  lock(rows: { batches?: string[]; users?: string[]; calls?: string[] }): Promise<void>;
  lockBatch(ids: string[]): Promise<void>;
  lockUsers(ids: string[]): Promise<void>;
  lockCalls(ids: string[]): Promise<void>;
}
