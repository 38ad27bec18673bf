import { sql } from 'kysely';
import type { Db } from '../adapters/postgres/database.js';
import type { UserCallLoad } from '../domain/allowance.js';

/**
 * A user's balance, limit and calls in progress. With `lock` (inside a transaction) the user's row
 * is locked first, so that two dials (single or batch, in any process sharing the database) never
 * both take the last place or minute: lock order everywhere is a batch row first, then the users
 * row, then calls. The count is a statement after the lock is granted, so it sees every call
 * committed by whoever held the lock before. Without `lock` the figures are an estimate, for
 * planning a dispatcher pass (its claim decides under the lock). The count is derived from the
 * calls table rather than kept in a counter, so whatever ends a call or removes an undialed one
 * needs no upkeep here. Null when the user does not exist.
 */
export async function callLoad(
  db: Db,
  userId: string,
  options: { lock: boolean },
): Promise<UserCallLoad | null> {
  let query = db
    .selectFrom('users')
    .select(['available_minutes', 'max_concurrent_calls'])
    .where('id', '=', userId);
  if (options.lock) query = query.forUpdate();
  const user = await query.executeTakeFirst();
  if (!user) return null;
  const ongoing = await db
    .selectFrom('calls')
    .select(sql<number>`count(*)::int`.as('n'))
    .where('user_id', '=', userId)
    .where('status', '=', 'ONGOING')
    .executeTakeFirstOrThrow();
  return {
    availableMinutes: user.available_minutes,
    maxConcurrentCalls: user.max_concurrent_calls,
    callsInProgress: ongoing.n,
  };
}
