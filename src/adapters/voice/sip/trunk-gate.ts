/**
 * The door every call of one SIP trunk goes through: at most `maxConcurrentCalls` up at once and
 * at most `maxCallsPerSecond` INVITEs a second, whichever batches (or single calls) they come
 * from, first come first served. When the carrier answers that it is full (503, 429, 480 with a
 * capacity reason) the trunk backs off: new INVITEs pause, for a second and then twice as long at
 * each answer in a row (30 s at most), and the rate halves (down to a sixteenth); answered calls
 * bring the rate back up step by step.
 */

export interface TrunkLimits {
  /** null: no cap of the trunk's own. */
  maxCallsPerSecond: number | null;
  maxConcurrentCalls: number | null;
}

interface Waiter {
  resolve: () => void;
  reject: (error: Error) => void;
}

const MAX_PAUSE_MS = 30_000;
const MIN_FACTOR = 1 / 16;

export class TrunkGate {
  private active = 0;
  private readonly queue: Waiter[] = [];
  /** The earliest moment the next INVITE may go (ms since epoch). */
  private nextAt = 0;
  private pauseUntil = 0;
  private factor = 1;
  private capacityInARow = 0;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private limits: TrunkLimits,
    private readonly now: () => number = Date.now,
  ) {}

  /** Calls that hold a place (INVITE sent, up to the hang-up). */
  get inUse(): number {
    return this.active;
  }

  get waiting(): number {
    return this.queue.length;
  }

  /** The calls-per-second the trunk runs at now (its cap, lowered while it backs off), or null. */
  get currentRate(): number | null {
    return this.limits.maxCallsPerSecond === null ? null : this.limits.maxCallsPerSecond * this.factor;
  }

  /** Limits can change while calls run (a PATCH of the trunk); they apply from the next start. */
  setLimits(limits: TrunkLimits): void {
    this.limits = limits;
    this.pump();
  }

  /** Waits for a place; resolves when the call may send its INVITE. Give it back with `release`. */
  acquire(signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = { resolve, reject };
      this.queue.push(waiter);
      signal?.addEventListener(
        'abort',
        () => {
          const index = this.queue.indexOf(waiter);
          if (index >= 0) {
            this.queue.splice(index, 1);
            reject(new Error('stopped while waiting for the trunk'));
          }
        },
        { once: true },
      );
      this.pump();
    });
  }

  release(): void {
    this.active = Math.max(this.active - 1, 0);
    this.pump();
  }

  /** The carrier said it is full. */
  capacity(): void {
    this.capacityInARow++;
    this.factor = Math.max(this.factor / 2, MIN_FACTOR);
    const pause = Math.min(1000 * 2 ** (this.capacityInARow - 1), MAX_PAUSE_MS);
    this.pauseUntil = Math.max(this.pauseUntil, this.now() + pause);
    this.pump();
  }

  /** The carrier took a call (any answer that is not a capacity one). */
  accepted(): void {
    this.capacityInARow = 0;
    this.factor = Math.min(this.factor * 1.25, 1);
  }

  /** Rejects every waiting call (shutdown). */
  close(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const waiter of this.queue.splice(0)) waiter.reject(new Error('the SIP provider is closing'));
  }

  private pump(): void {
    if (this.timer) return;
    while (this.queue.length > 0) {
      const cap = this.limits.maxConcurrentCalls;
      if (cap !== null && this.active >= cap) return; // a release pumps again
      const now = this.now();
      const at = Math.max(this.nextAt, this.pauseUntil);
      if (now < at) {
        this.timer = setTimeout(() => {
          this.timer = null;
          this.pump();
        }, at - now);
        return;
      }
      const rate = this.currentRate;
      // Never a burst: the next INVITE waits a full interval after this one, even after a pause.
      this.nextAt = rate === null ? now : now + 1000 / rate;
      this.active++;
      this.queue.shift()?.resolve();
    }
  }
}
