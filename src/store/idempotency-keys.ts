export interface IdempotencyKeyRow {
  user_id: string;
  key: string;
  request_hash: string;
  state: 'running' | 'done';
  locked_until: Date | null;
  response_status: number | null;
  response_body: unknown;
  resource_id: string | null;
  created_at: Date;
}

/** A record as a request claims it: running, locked until `locked_until` (the claim's token). */
export interface FreshIdempotencyKey {
  request_hash: string;
  locked_until: Date;
  created_at: Date;
}

/**
 * Idempotency-Key records. Every write names the claim's token (`locked_until`) or the value it
 * read, so it changes nothing when another request got there first; each answers whether it did.
 */
export interface IdempotencyKeysRepo {
  /** Inserts the record unless the user's key exists. */
  insertIfAbsent(userId: string, key: string, fresh: FreshIdempotencyKey): Promise<boolean>;
  get(userId: string, key: string): Promise<IdempotencyKeyRow | undefined>;
  /** Writes a fresh record over the one created at `createdAt` (an expired one). */
  replaceExpired(userId: string, key: string, createdAt: Date, fresh: FreshIdempotencyKey): Promise<boolean>;
  /** Takes over a running record whose lock was `lockedUntil`. */
  takeOver(userId: string, key: string, lockedUntil: Date | null, token: Date): Promise<boolean>;
  /** The claim's record becomes done with this response. */
  complete(
    userId: string,
    key: string,
    token: Date,
    response: { status: number; body: unknown; resourceId: string },
  ): Promise<boolean>;
  /** Deletes the claim's record while it is running. */
  release(userId: string, key: string, token: Date): Promise<void>;
  /** Replaces the response of the claim's record once done. */
  replaceResponse(
    userId: string,
    key: string,
    token: Date,
    response: { status: number; body: unknown },
  ): Promise<void>;
  /** Deletes up to `limit` records created at or before `before`: how many. */
  purgeCreatedBefore(before: Date, limit: number): Promise<number>;
}
