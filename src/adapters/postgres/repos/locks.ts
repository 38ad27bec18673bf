import { sql } from 'kysely';
import { LOCK_ORDER, type LockKind, type LocksRepo } from '../../../store/locks.js';
import type { Db } from '../database.js';

/**
 * What one transaction has locked so far. A kind that comes before one already taken (LOCK_ORDER)
 * throws before the lock is asked for: a second transaction taking the same rows in the right
 * order could otherwise deadlock with this one. Repositories that read a row `for update` take it
 * through here too.
 */
export class LockOrder {
  private highest = -1;

  take(kind: LockKind): void {
    const rank = LOCK_ORDER.indexOf(kind);
    if (rank < this.highest) {
      throw new Error(
        `Lock order: ${kind} locked after ${LOCK_ORDER[this.highest]} (the order is ${LOCK_ORDER.join(', ')})`,
      );
    }
    this.highest = rank;
  }
}

/**
 * Holds the session-level advisory lock `name` (in the current schema) on `conn`, a connection the
 * caller holds, until `releaseAdvisoryLock`: `Store.exclusive` on PostgreSQL.
 */
export async function takeAdvisoryLock(conn: Db, name: string): Promise<void> {
  await sql`select pg_advisory_lock(hashtext(current_schema() || ${`.${name}`}))`.execute(conn);
}

export async function releaseAdvisoryLock(conn: Db, name: string): Promise<void> {
  await sql`select pg_advisory_unlock(hashtext(current_schema() || ${`.${name}`}))`.execute(conn);
}

/** Notes a lock about to be taken: `order` is null on the pool, where a row lock would end with its statement. */
export function takeLock(order: LockOrder | null, kind: LockKind): void {
  if (!order) throw new Error('Row locks are taken inside Store.tx');
  order.take(kind);
}

export class PgLocksRepo implements LocksRepo {
  /** `order` is null on the pool: a lock outside a transaction would be released at once. */
  constructor(
    private readonly db: Db,
    private readonly order: LockOrder | null,
  ) {}

  async lock(rows: { batches?: string[]; users?: string[]; calls?: string[] }): Promise<void> {
    if (rows.batches?.length) await this.lockBatch(rows.batches);
    if (rows.users?.length) await this.lockUsers(rows.users);
    if (rows.calls?.length) await this.lockCalls(rows.calls);
  }

  async lockBatch(ids: string[]): Promise<void> {
    this.take('batches');
    await this.db
      .selectFrom('batches')
      .select('id')
      .where('id', 'in', ids)
      .orderBy('id')
      .forUpdate()
      .execute();
  }

  async lockUsers(ids: string[]): Promise<void> {
    this.take('users');
    await this.db.selectFrom('users').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute();
  }

  async lockCalls(ids: string[]): Promise<void> {
    this.take('calls');
    await this.db.selectFrom('calls').select('id').where('id', 'in', ids).orderBy('id').forUpdate().execute();
  }

  private take(kind: LockKind): void {
    takeLock(this.order, kind);
  }
}
