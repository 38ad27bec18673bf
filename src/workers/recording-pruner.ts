import type { Logger } from 'pino';
import type { RecordingStore } from '../ports.js';
import { PollLoop } from './loop.js';

/** How often the stores are looked through for recordings past their retention. */
export const PRUNE_EVERY_MS = 60 * 60 * 1000;

/** A recording store of this host and the name its failures are logged under. */
export interface PrunedStore {
  name: string;
  store: RecordingStore;
}

/**
 * The one owner of recording retention: every store of this host (the SIP, simulated and web
 * calls' recordings on its disk) is pruned on one schedule, each by its own retention. A store
 * that cannot be read is logged and tried again at the next pass; the others go on.
 */
export class RecordingPruner {
  constructor(
    private readonly stores: PrunedStore[],
    private readonly logger: Pick<Logger, 'warn'>,
  ) {}

  /** One pass over every store; returns how many recordings it removed. */
  async prune(): Promise<number> {
    let removed = 0;
    for (const { name, store } of this.stores) {
      try {
        removed += await store.prune();
      } catch (error) {
        this.logger.warn({ err: error, recordings: name }, 'could not prune recordings');
      }
    }
    return removed;
  }
}

/**
 * The pruner's loop: a pass at once (a host that was down for a while catches up), then one an
 * hour. It runs in every role, as every role may hold calls and keep their recordings.
 */
export function createRecordingPruner(
  pruner: RecordingPruner,
  logger: Logger,
  idleMs = PRUNE_EVERY_MS,
): PollLoop {
  return new PollLoop({
    name: 'recordings-prune',
    idleMs,
    alwaysPause: true,
    logger,
    tick: () => pruner.prune(),
  });
}
