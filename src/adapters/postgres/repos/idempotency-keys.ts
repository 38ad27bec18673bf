import { sql } from 'kysely';
import type {
  FreshIdempotencyKey,
  IdempotencyKeyRow,
  IdempotencyKeysRepo,
} from '../../../store/idempotency-keys.js';
import { type Db, json } from '../database.js';

/** A fresh record's columns: running under the claim's token, with no response yet. */
function freshColumns(fresh: FreshIdempotencyKey) {
  return {
    request_hash: fresh.request_hash,
    state: 'running' as const,
    locked_until: fresh.locked_until,
    response_status: null,
    response_body: json(null),
    resource_id: null,
    created_at: fresh.created_at,
  };
}

export class PgIdempotencyKeysRepo implements IdempotencyKeysRepo {
  constructor(private readonly db: Db) {}

  async insertIfAbsent(userId: string, key: string, fresh: FreshIdempotencyKey): Promise<boolean> {
    const inserted = await this.db
      .insertInto('idempotency_keys')
      .values({ user_id: userId, key, ...freshColumns(fresh) })
      .onConflict((oc) => oc.columns(['user_id', 'key']).doNothing())
      .returning('key')
      .executeTakeFirst();
    return inserted !== undefined;
  }

  get(userId: string, key: string): Promise<IdempotencyKeyRow | undefined> {
    return this.db
      .selectFrom('idempotency_keys')
      .selectAll()
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .executeTakeFirst();
  }

  async replaceExpired(
    userId: string,
    key: string,
    createdAt: Date,
    fresh: FreshIdempotencyKey,
  ): Promise<boolean> {
    const renewed = await this.db
      .updateTable('idempotency_keys')
      .set(freshColumns(fresh))
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .where('created_at', '=', createdAt)
      .executeTakeFirst();
    return Number(renewed.numUpdatedRows) > 0;
  }

  async takeOver(userId: string, key: string, lockedUntil: Date | null, token: Date): Promise<boolean> {
    const taken = await this.db
      .updateTable('idempotency_keys')
      .set({ locked_until: token })
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .where('state', '=', 'running')
      .where((eb) => (lockedUntil ? eb('locked_until', '=', lockedUntil) : eb('locked_until', 'is', null)))
      .executeTakeFirst();
    return Number(taken.numUpdatedRows) > 0;
  }

  async complete(
    userId: string,
    key: string,
    token: Date,
    response: { status: number; body: unknown; resourceId: string },
  ): Promise<boolean> {
    const done = await this.db
      .updateTable('idempotency_keys')
      .set({
        state: 'done',
        response_status: response.status,
        response_body: json(response.body),
        resource_id: response.resourceId,
      })
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .where('state', '=', 'running')
      .where('locked_until', '=', token)
      .executeTakeFirst();
    return Number(done.numUpdatedRows) > 0;
  }

  async release(userId: string, key: string, token: Date): Promise<void> {
    await this.db
      .deleteFrom('idempotency_keys')
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .where('state', '=', 'running')
      .where('locked_until', '=', token)
      .execute();
  }

  async replaceResponse(
    userId: string,
    key: string,
    token: Date,
    response: { status: number; body: unknown },
  ): Promise<void> {
    await this.db
      .updateTable('idempotency_keys')
      .set({ response_status: response.status, response_body: json(response.body) })
      .where('user_id', '=', userId)
      .where('key', '=', key)
      .where('state', '=', 'done')
      .where('locked_until', '=', token)
      .execute();
  }

  async purgeCreatedBefore(before: Date, limit: number): Promise<number> {
    const result = await sql`
      delete from idempotency_keys where ctid in (
        select ctid from idempotency_keys where created_at <= ${before} limit ${limit})`.execute(this.db);
    return Number(result.numAffectedRows ?? 0);
  }
}
