import { createHash } from 'node:crypto';
import { AppError } from '../domain/errors.js';
import type { Repos } from '../store/index.js';
import type { Deps } from './deps.js';

/** A key answers with its first response for 24 h (Stripe's and the IETF draft's span); then it is free. */
export const IDEMPOTENCY_TTL_MS = 24 * 3_600_000;
/**
 * A request holds its key this long while it works. A dial's work takes well under a second and a
 * 16 MB batch's a few seconds; a key still `running` after a minute belongs to a process that
 * died, and the next request under it takes it over (a retry after a crash is answered 409 for at
 * most this long, then goes ahead: the work was never committed, so it is done once).
 */
export const IDEMPOTENCY_LOCK_MS = 60_000;
/** Expired records removed per statement by the purge, so one pass never holds a long lock. */
const PURGE_ROWS = 5_000;

/** The `Idempotency-Key` header: 1 to 255 printable ASCII characters (space to tilde). */
export const IDEMPOTENCY_KEY_PATTERN = '^[\\x20-\\x7E]{1,255}$';

/** The response a key answers with again. */
export interface StoredResponse {
  status: number;
  body: unknown;
}

export type IdempotencyStart =
  | { kind: 'replay'; response: StoredResponse }
  | { kind: 'claimed'; claim: IdempotencyClaim };

/** sha256 of what makes two requests "the same": the method, the route and the body's exact bytes. */
export function requestHash(method: string, route: string, body: string): string {
  return createHash('sha256').update(`${method} ${route}\n`).update(body).digest('hex');
}

/**
 * A key this request holds (`running`), identified by the `locked_until` it wrote: a request that
 * outlived its lock and was taken over finds the value changed and commits nothing.
 */
export class IdempotencyClaim {
  private completed = false;

  constructor(
    private readonly deps: Pick<Deps, 'store'>,
    readonly userId: string,
    readonly key: string,
    private readonly token: Date,
  ) {}

  /**
   * Records the response in the transaction that creates the resource (the call, the batch), so
   * both commit or neither does. Throws (and so rolls the transaction back) when the key is no
   * longer this request's.
   */
  async complete(repos: Repos, response: StoredResponse & { resourceId: string }): Promise<void> {
    if (!(await repos.idempotencyKeys.complete(this.userId, this.key, this.token, response))) {
      throw inUse(this.key);
    }
    this.completed = true;
  }

  /**
   * The request failed. Before its resource was committed the key is freed (nothing was done, the
   * client may retry with it); after (the call is recorded but the provider refused it) the key
   * answers with this failure from now on, so a retry never dials again.
   */
  async failed(response: StoredResponse): Promise<void> {
    const { idempotencyKeys } = this.deps.store;
    await idempotencyKeys.release(this.userId, this.key, this.token);
    if (!this.completed) return;
    await idempotencyKeys.replaceResponse(this.userId, this.key, this.token, response);
  }
}

const inUse = (key: string) =>
  new AppError(
    'IDEMPOTENCY_KEY_IN_USE',
    `A request with Idempotency-Key "${key}" is still being processed; retry when it has finished`,
  );

/** Idempotency-Key records, per user, on POST /api/v1/call/dial and POST /api/v1/batch. */
export class IdempotencyService {
  constructor(private readonly deps: Pick<Deps, 'store' | 'clock'>) {}

  /**
   * Claims `key` for a request, or says what it answers instead: the stored response (same body,
   * within 24 h), 422 IDEMPOTENCY_KEY_REUSED (another body), 409 IDEMPOTENCY_KEY_IN_USE (the first
   * request is still working). Every step is one statement that either wins or sees the winner,
   * so two processes racing on one key end with one claim.
   */
  async begin(userId: string, key: string, hash: string): Promise<IdempotencyStart> {
    const { store, clock } = this.deps;
    const keys = store.idempotencyKeys;
    for (let round = 0; round < 3; round++) {
      const now = clock.now();
      const token = new Date(now.getTime() + IDEMPOTENCY_LOCK_MS);
      // A fresh record for this request: inserted, or written over an expired one.
      const fresh = { request_hash: hash, locked_until: token, created_at: now };
      const claim = () => ({
        kind: 'claimed' as const,
        claim: new IdempotencyClaim(this.deps, userId, key, token),
      });
      if (await keys.insertIfAbsent(userId, key, fresh)) return claim();

      const row = await keys.get(userId, key);
      if (!row) continue; // purged meanwhile: insert again
      if (row.created_at.getTime() <= now.getTime() - IDEMPOTENCY_TTL_MS) {
        // Expired: the key is free again. Replaced only if nobody replaced it first.
        if (await keys.replaceExpired(userId, key, row.created_at, fresh)) return claim();
        continue;
      }
      if (row.request_hash !== hash) {
        throw new AppError(
          'IDEMPOTENCY_KEY_REUSED',
          `Idempotency-Key "${key}" was used with another request body in the last 24 hours; use a new key for a new request`,
        );
      }
      if (row.state === 'done' && row.response_status !== null) {
        return { kind: 'replay', response: { status: row.response_status, body: row.response_body } };
      }
      if (row.locked_until && row.locked_until.getTime() > now.getTime()) throw inUse(key);
      // Its request's process died before committing anything: this request does the work.
      if (await keys.takeOver(userId, key, row.locked_until, token)) return claim();
    }
    throw inUse(key);
  }

  /** Deletes records older than 24 h (they would be treated as absent anyway); returns how many. */
  async purgeExpired(): Promise<number> {
    const before = new Date(this.deps.clock.now().getTime() - IDEMPOTENCY_TTL_MS);
    return this.deps.store.idempotencyKeys.purgeCreatedBefore(before, PURGE_ROWS);
  }
}
