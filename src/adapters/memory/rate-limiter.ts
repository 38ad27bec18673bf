import { release, reserve } from '../../domain/gcra.js';
import { type Admission, type Clock, type RateLimiter, systemClock } from '../../ports.js';

/** GCRA in one process: enough when one process dials (the embedded setup). */
export class MemoryRateLimiter implements RateLimiter {
  private readonly tats = new Map<string, number>();
  /** Per key, the starts of the last window in order, one per member (as in Redis). */
  private readonly starts = new Map<string, Array<{ at: number; member: string }>>();

  constructor(private readonly clock: Clock = systemClock) {}

  async reserve(key: string, ratePerSecond: number, wanted: number, horizonMs: number): Promise<number[]> {
    const now = this.clock.now().getTime();
    const result = reserve({ tat: this.tats.get(key) ?? 0 }, now, ratePerSecond, wanted, horizonMs);
    this.tats.set(key, result.tat);
    return result.slots.map((slot) => slot - now);
  }

  async release(key: string, ratePerSecond: number, count: number): Promise<void> {
    const tat = this.tats.get(key);
    if (tat === undefined || count <= 0) return;
    this.tats.set(key, release({ tat }, count, ratePerSecond, this.clock.now().getTime()).tat);
  }

  async admit(key: string, ratePerSecond: number, windowMs: number, member: string): Promise<Admission> {
    const now = this.clock.now().getTime();
    // A member admitted again moves its one entry: its earlier start did not happen.
    const starts = (this.starts.get(key) ?? []).filter(
      (start) => start.at > now - windowMs && start.member !== member,
    );
    if (starts.length < ratePerSecond) {
      starts.push({ at: now, member });
      this.starts.set(key, starts);
      return { waitMs: 0, at: new Date(now) };
    }
    this.starts.set(key, starts);
    const blocker = starts[starts.length - ratePerSecond]?.at ?? now;
    return { waitMs: Math.max(blocker + windowMs - now, 1), at: null };
  }

  async close(): Promise<void> {
    this.tats.clear();
    this.starts.clear();
  }
}
