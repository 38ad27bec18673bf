/**
 * Minutes held back for each call in progress. An answered call is charged `ceil(duration / 60)`
 * minutes, so one minute is the least any answered call costs: reserving it keeps the balance from
 * going below zero through calls shorter than a minute, and past that by at most what the calls
 * in progress overrun (bounded by the user's concurrent-call limit). Whole minutes on purpose:
 * OUTDIAL_ESTIMATED_MINUTES_PER_CALL may be a fraction (0.1 lets one minute hold ten calls) and
 * only sizes a batch's acceptance check.
 */
export const MINUTES_RESERVED_PER_CALL = 1;

export interface UserCallLoad {
  availableMinutes: number;
  maxConcurrentCalls: number;
  /** The user's ONGOING calls, single and batch, including those claimed and waiting for their slot. */
  callsInProgress: number;
}

export interface DialAllowance {
  /** Calls the user may start now: no more than their free places nor their unreserved minutes allow. */
  calls: number;
  freePlaces: number;
  reservedMinutes: number;
  /** The balance less the minutes reserved for calls in progress; a dial needs one. */
  unreservedMinutes: number;
}

export function dialAllowance(load: UserCallLoad): DialAllowance {
  const freePlaces = Math.max(load.maxConcurrentCalls - load.callsInProgress, 0);
  const reservedMinutes = load.callsInProgress * MINUTES_RESERVED_PER_CALL;
  const unreservedMinutes = load.availableMinutes - reservedMinutes;
  const byMinutes = Math.max(Math.floor(unreservedMinutes / MINUTES_RESERVED_PER_CALL), 0);
  return { calls: Math.min(freePlaces, byMinutes), freePlaces, reservedMinutes, unreservedMinutes };
}

/**
 * Whether a batch must stop for credit: only when the balance itself is spent. Unreserved minutes
 * that are short only make it wait, since a call in progress that is not answered costs nothing.
 */
export function outOfMinutes(load: Pick<UserCallLoad, 'availableMinutes'>): boolean {
  return load.availableMinutes <= 0;
}
