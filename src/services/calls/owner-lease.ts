import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { Logger } from 'pino';
import type { Store } from '../../store/index.js';

/**
 * A process's lease runs this long and is renewed every third of it: a worker that dies is seen
 * dead 10-15 s later, and a database hiccup of a few seconds never makes a live one look dead.
 */
export const OWNER_LEASE_MS = 15_000;
const RENEW_EVERY_MS = 5_000;
/** Gone owners are kept a week (as their calls' records are), looked over hourly. */
const KEEP_DAYS = 7;
const PRUNE_EVERY_MS = 60 * 60 * 1000;

/**
 * This process's lease (a `dial_owners` row): the name every dial record it writes carries, and
 * the heartbeat that says its calls are alive. Not a dial record: it says who is alive, not where
 * a call stands. Held by `DialSteps` (lifecycle.ts), from before this process's first call to
 * after its last.
 */
export class OwnerLease {
  readonly owner = `${os.hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private renewer: NodeJS.Timeout | null = null;
  private pruner: NodeJS.Timeout | null = null;

  constructor(
    private readonly store: Store,
    private readonly logger?: Logger,
  ) {}

  /** Takes the lease and keeps renewing it until close. */
  async start(): Promise<void> {
    await this.store.dialOwners.take(
      { id: this.owner, host: os.hostname(), pid: process.pid },
      OWNER_LEASE_MS,
    );
    this.renewer = setInterval(() => {
      this.renew().catch((error: unknown) =>
        this.logger?.warn(
          { err: error },
          'could not renew this process lease; calls it owns may be taken over',
        ),
      );
    }, RENEW_EVERY_MS);
    this.renewer.unref();
    void this.prune();
    this.pruner = setInterval(() => void this.prune(), PRUNE_EVERY_MS);
    this.pruner.unref();
  }

  async renew(): Promise<void> {
    await this.store.dialOwners.renew(this.owner, OWNER_LEASE_MS);
  }

  /**
   * Gives the lease back (it ends now, its last heartbeat now): whatever this process leaves
   * behind (a call that would not hang up, a call that never went out) is settled by another
   * process at once instead of after the lease.
   */
  async close(): Promise<void> {
    if (this.renewer) clearInterval(this.renewer);
    if (this.pruner) clearInterval(this.pruner);
    this.renewer = null;
    this.pruner = null;
    await this.store.dialOwners.release(this.owner);
  }

  private async prune(): Promise<void> {
    try {
      await this.store.dialOwners.pruneGone(KEEP_DAYS);
    } catch (error) {
      this.logger?.warn({ err: error }, 'could not prune gone dial owners');
    }
  }
}
