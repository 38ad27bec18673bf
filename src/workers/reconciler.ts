import type { Logger } from 'pino';
import type { CallService } from '../services/calls.js';
import { PollLoop } from './loop.js';

/** Finishes calls left ONGOING by a process that died mid-call, from what the provider reports. */
export function createReconciler(calls: CallService, logger: Logger, idleMs = 5_000): PollLoop {
  return new PollLoop({
    name: 'reconciler',
    idleMs,
    logger,
    tick: async () => {
      const finished = await calls.reconcileStale();
      if (finished > 0) logger.info({ finished }, 'reconciled calls left ongoing');
      return finished;
    },
  });
}
