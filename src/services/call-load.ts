import type { UserCallLoad } from '../domain/allowance.js';
import type { Repos } from '../store/index.js';

/**
 * A user's balance, limit and calls in progress. With `lock` (inside a transaction) the user's row
 * is locked first, so that two dials (single or batch, in any process sharing the database) never
 * both take the last place or minute: lock order everywhere is a batch row first, then the users
 * row, then calls (LOCK_ORDER). Without `lock` the figures are an estimate, read in one statement,
 * for planning a dispatcher pass (its claim decides under the lock). The count is derived from the
 * calls table rather than kept in a counter, so whatever ends a call or removes an undialed one
 * needs no upkeep here. Null when the user does not exist.
 */
export async function callLoad(
  repos: Repos,
  userId: string,
  options: { lock: boolean },
): Promise<UserCallLoad | null> {
  if (!options.lock) {
    // One statement: an estimate needs no lock, so it need not wait for one either.
    const row = await repos.users.loadEstimate(userId);
    return row ? toLoad(row, row.ongoing) : null;
  }
  const user = await repos.users.lockLoad(userId);
  if (!user) return null;
  // A statement of its own, after the lock is granted: one statement would count with the snapshot
  // it took before waiting, and miss the calls the previous holder committed.
  return toLoad(user, await repos.users.ongoingCalls(userId));
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
