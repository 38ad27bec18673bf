/**
 * Minutes held back for each call in progress. An answered call is charged `ceil(duration / 60)`
 * minutes, so one minute is the least any answered call costs: reserving it keeps the balance from
 * going below zero through calls shorter than a minute, and past that by at most what the calls
 * in progress overrun (bounded by the user's concurrent-call limit). Whole minutes on purpose:
 * OUTDIAL_ESTIMATED_MINUTES_PER_CALL may be a fraction (0.1 lets one minute hold ten calls) and
 * only sizes a batch's acceptance check.
 */
export const MINUTES_RESERVED_PER_CALL = 1;

/**
 * A new user's maxConcurrentCalls (also migration 017's column default). The same as the default of
 * OUTDIAL_MAX_CONCURRENT_CALLS, a process's own cap: one user alone on a default deployment is held
 * by the process, not below it. At the spec's default 10 calls a second, 200 places keep the rate
 * for calls up to 20 s and give 1.7-3.3 calls a second at 1-2 minutes (places = rate x length);
 * check-status's `throttle` says so. Reasoning in docs/decisions.md, "The default per-user cap".
 */
export const DEFAULT_MAX_CONCURRENT_CALLS = 200;

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
 * Places a campaign leaves free for its user's own single calls: one, when the user has more than
 * one place. Without it a campaign refilled each place the moment it freed (the dispatcher claims
 * every pass, 200 ms at most), and the user's single dials answered 429 for as long as it ran.
 */
export const PLACES_KEPT_FOR_SINGLE_CALLS = 1;

/** The places a campaign of this user may fill: all but the one kept for single calls (cap > 1). */
export function campaignPlaces(maxConcurrentCalls: number): number {
  return maxConcurrentCalls > 1 ? maxConcurrentCalls - PLACES_KEPT_FOR_SINGLE_CALLS : maxConcurrentCalls;
}

/**
 * What the dispatcher may claim for a user's campaigns: the dial allowance within the places a
 * campaign may fill. A single dial keeps `dialAllowance`, so it may take the kept place.
 */
export function campaignAllowance(load: UserCallLoad): DialAllowance {
  return dialAllowance({ ...load, maxConcurrentCalls: campaignPlaces(load.maxConcurrentCalls) });
}

/**
 * Whether a batch must stop for credit: only when the balance itself is spent. Unreserved minutes
 * that are short only make it wait, since a call in progress that is not answered costs nothing.
 */
export function outOfMinutes(load: Pick<UserCallLoad, 'availableMinutes'>): boolean {
  return load.availableMinutes <= 0;
}
