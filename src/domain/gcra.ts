/**
 * Generic cell rate algorithm, in its reservation form. A limiter keeps one number per key, the
 * theoretical arrival time (TAT): the earliest moment the next call may start. Calls are spaced
 * exactly 1000 / rate ms apart (no burst), so no one-second window ever holds more than `rate`
 * calls, and a dispatcher can reserve the slots of the next moments in one step and start each
 * call at its slot.
 */
export interface GcraState {
  /** Milliseconds since the epoch; 0 for a key never used. */
  tat: number;
}

export interface Reservation {
  /** Start times granted, in ms since the epoch, ascending. */
  slots: number[];
  /** The new TAT to store. */
  tat: number;
}

export function intervalMs(ratePerSecond: number): number {
  return 1000 / ratePerSecond;
}

/**
 * Reserves up to `wanted` slots that start no later than `now + horizonMs`. A key idle for a while
 * starts at `now`: unused capacity is not banked, which is what keeps every window under the rate.
 */
export function reserve(
  state: GcraState,
  now: number,
  ratePerSecond: number,
  wanted: number,
  horizonMs: number,
): Reservation {
  const interval = intervalMs(ratePerSecond);
  const start = Math.max(state.tat, now);
  if (wanted <= 0 || start > now + horizonMs) return { slots: [], tat: state.tat };
  const fit = Math.floor((now + horizonMs - start) / interval) + 1;
  const count = Math.min(wanted, fit);
  const slots = Array.from({ length: count }, (_, i) => start + i * interval);
  return { slots, tat: start + count * interval };
}

/** Gives back the last `count` slots of a reservation that found no work for them. */
export function release(state: GcraState, count: number, ratePerSecond: number, now: number): GcraState {
  const tat = state.tat - count * intervalMs(ratePerSecond);
  return { tat: Math.max(tat, now) };
}
