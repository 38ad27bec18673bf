import { createHash } from 'node:crypto';
import { sql } from 'kysely';
import { type Db, json } from '../adapters/postgres/database.js';
import { AppError } from '../domain/errors.js';
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
    private readonly db: Db,
    readonly userId: string,
    readonly key: string,
    private readonly token: Date,
  ) {}

  /**
   * Records the response in the transaction that creates the resource (the call, the batch), so
   * both commit or neither does. Throws (and so rolls the transaction back) when the key is no
   * longer this request's.
   */
  async complete(trx: Db, response: StoredResponse & { resourceId: string }): Promise<void> {
    const done = await trx
      .updateTable('idempotency_keys')
      .set({
        state: 'done',
        response_status: response.status,
        response_body: json(response.body),
        resource_id: response.resourceId,
      })
      .where('user_id', '=', this.userId)
      .where('key', '=', this.key)
      .where('state', '=', 'running')
      .where('locked_until', '=', this.token)
      .executeTakeFirst();
    if (Number(done.numUpdatedRows) === 0) throw inUse(this.key);
    this.completed = true;
  }

  /**
   * The request failed. Before its resource was committed the key is freed (nothing was done, the
   * client may retry with it); after (the call is recorded but the provider refused it) the key
   * answers with this failure from now on, so a retry never dials again.
   */
  async failed(response: StoredResponse): Promise<void> {
    await this.db
      .deleteFrom('idempotency_keys')
      .where('user_id', '=', this.userId)
      .where('key', '=', this.key)
      .where('state', '=', 'running')
      .where('locked_until', '=', this.token)
      .execute();
    if (!this.completed) return;
    await this.db
      .updateTable('idempotency_keys')
      .set({ response_status: response.status, response_body: json(response.body) })
      .where('user_id', '=', this.userId)
      .where('key', '=', this.key)
      .where('state', '=', 'done')
      .where('locked_until', '=', this.token)
      .execute();
  }
}

const inUse = (key: string) =>
  new AppError(
    'IDEMPOTENCY_KEY_IN_USE',
    `A request with Idempotency-Key "${key}" is still being processed; retry when it has finished`,
  );

/** Idempotency-Key records, per user, on POST /api/v1/call/dial and POST /api/v1/batch. */
export class IdempotencyService {
  constructor(private readonly deps: Pick<Deps, 'db' | 'clock'>) {}

  /**
   * Claims `key` for a request, or says what it answers instead: the stored response (same body,
   * within 24 h), 422 IDEMPOTENCY_KEY_REUSED (another body), 409 IDEMPOTENCY_KEY_IN_USE (the first
   * request is still working). Every step is one statement that either wins or sees the winner,
   * so two processes racing on one key end with one claim.
   */
  async begin(userId: string, key: string, hash: string): Promise<IdempotencyStart> {
    const { db, clock } = this.deps;
    for (let round = 0; round < 3; round++) {
      const now = clock.now();
      const token = new Date(now.getTime() + IDEMPOTENCY_LOCK_MS);
      // A fresh record for this request: inserted, or written over an expired one.
      const fresh = {
        request_hash: hash,
        state: 'running' as const,
        locked_until: token,
        response_status: null,
        response_body: json(null),
        resource_id: null,
        created_at: now,
      };
      const inserted = await db
        .insertInto('idempotency_keys')
        .values({ user_id: userId, key, ...fresh })
        .onConflict((oc) => oc.columns(['user_id', 'key']).doNothing())
        .returning('key')
        .executeTakeFirst();
      const claim = () => ({ kind: 'claimed' as const, claim: new IdempotencyClaim(db, userId, key, token) });
      if (inserted) return claim();

      const row = await db
        .selectFrom('idempotency_keys')
        .selectAll()
        .where('user_id', '=', userId)
        .where('key', '=', key)
        .executeTakeFirst();
      if (!row) continue; // purged meanwhile: insert again
      if (row.created_at.getTime() <= now.getTime() - IDEMPOTENCY_TTL_MS) {
        // Expired: the key is free again. Replaced only if nobody replaced it first.
        const renewed = await db
          .updateTable('idempotency_keys')
          .set(fresh)
          .where('user_id', '=', userId)
          .where('key', '=', key)
          .where('created_at', '=', row.created_at)
          .executeTakeFirst();
        if (Number(renewed.numUpdatedRows) > 0) return claim();
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
      const taken = await db
        .updateTable('idempotency_keys')
        .set({ locked_until: token })
        .where('user_id', '=', userId)
        .where('key', '=', key)
        .where('state', '=', 'running')
        .where((eb) =>
          row.locked_until ? eb('locked_until', '=', row.locked_until) : eb('locked_until', 'is', null),
        )
        .executeTakeFirst();
      if (Number(taken.numUpdatedRows) > 0) return claim();
    }
    throw inUse(key);
  }

  /** Deletes records older than 24 h (they would be treated as absent anyway); returns how many. */
  async purgeExpired(): Promise<number> {
    const { db, clock } = this.deps;
    const before = new Date(clock.now().getTime() - IDEMPOTENCY_TTL_MS);
    const result = await sql`
      delete from idempotency_keys where ctid in (
        select ctid from idempotency_keys where created_at <= ${before} limit ${PURGE_ROWS})`.execute(db);
    return Number(result.numAffectedRows ?? 0);
  }
}
