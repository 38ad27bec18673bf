/**
 * The processes that place calls (the shared `dial_owners` table): each holds a lease it renews,
 * and a call is alive while its owner's lease is.
 */
export interface DialOwnersRepo {
  /** Writes the lease of a process starting now, running `leaseMs` (nothing when it exists). */
  take(owner: { id: string; host: string; pid: number }, leaseMs: number): Promise<void>;
  /** Its heartbeat now, and its lease running `leaseMs` from now. */
  renew(id: string, leaseMs: number): Promise<void>;
  /** Its heartbeat now, and its lease ending now: its calls are another process's to settle at once. */
  release(id: string): Promise<void>;
  /** Deletes the owners whose lease ended more than `keepDays` days ago. */
  pruneGone(keepDays: number): Promise<void>;
}
