import { sql } from 'kysely';
import type { Db } from '../adapters/postgres/database.js';
import type { UserCallLoad } from '../domain/allowance.js';

/**
 * A user's balance, limit and calls in progress. With `lock` (inside a transaction) the user's row
 * is locked first, so that two dials (single or batch, in any process sharing the database) never
 * both take the last place or minute: lock order everywhere is a batch row first, then the users
 * row, then calls. Without `lock` the figures are an estimate, read in one statement, for planning
 * a dispatcher pass (its claim decides under the lock). The count is derived from the calls table
 * rather than kept in a counter, so whatever ends a call or removes an undialed one needs no
 * upkeep here. Null when the user does not exist.
 */
export async function callLoad(
  db: Db,
  userId: string,
  options: { lock: boolean },
): Promise<UserCallLoad | null> {
  const ongoing = sql<number>`(select count(*)::int from calls where calls.user_id = users.id and calls.status = 'ONGOING')`;
  if (!options.lock) {
    // One statement: an estimate needs no lock, so it need not wait for one either.
    const row = await db
      .selectFrom('users')
      .select(['available_minutes', 'max_concurrent_calls', ongoing.as('ongoing')])
      .where('id', '=', userId)
      .executeTakeFirst();
    return row ? toLoad(row, row.ongoing) : null;
  }
  const user = await db
    .selectFrom('users')
    .select(['available_minutes', 'max_concurrent_calls'])
    .where('id', '=', userId)
    .forUpdate()
    .executeTakeFirst();
  if (!user) return null;
  // A statement of its own, after the lock is granted: one statement would count with the snapshot
  // it took before waiting, and miss the calls the previous holder committed.
  const counted = await db
    .selectFrom('users')
    .select(ongoing.as('ongoing'))
    .where('id', '=', userId)
    .executeTakeFirstOrThrow();
  return toLoad(user, counted.ongoing);
}

function toLoad(
  user: { available_minutes: number; max_concurrent_calls: number },
  callsInProgress: number,
): UserCallLoad {
  return {
    availableMinutes: user.available_minutes,
    maxConcurrentCalls: user.max_concurrent_calls,
    callsInProgress,
  };
}
