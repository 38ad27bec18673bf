import type { Logger } from 'pino';
import type { DependencyProber } from '../ports.js';
import type { AnalysisService } from '../services/analysis.js';
import type { BatchService } from '../services/batches.js';
import type { Breakers } from '../services/breakers.js';
import type { IdempotencyService } from '../services/idempotency.js';
import type { BatchIngester } from '../services/ingest.js';
import type { Dispatcher } from '../workers/dispatcher/index.js';
import { PollLoop } from '../workers/loop.js';
import { createReconciler, type Reconciler } from '../workers/reconciler.js';
import type { WebhookSender } from '../workers/webhook-sender.js';

/** The background loops of a process that works (`outdial serve`, `outdial worker`). */
export function buildWorkers(
  parts: {
    reconciler: Reconciler;
    dispatcher: Dispatcher;
    ingester: BatchIngester;
    webhookSender: WebhookSender;
    analysis: AnalysisService;
    idempotency: IdempotencyService;
    breakers: Breakers;
    /** Asks a dependency a real small question (adapters/probes.ts); without it, no breaker is probed. */
    prober?: DependencyProber | undefined;
    batches: Pick<BatchService, 'resumeForDependency'>;
  },
  options: {
    logger: Logger;
    /** Whether API processes may share the database (PostgreSQL): then their hand-offs are taken. */
    handOffs: boolean;
    reconcileIdleMs?: number | undefined;
    dispatchTickMs?: number | undefined;
  },
): PollLoop[] {
  const { logger } = options;
  return [
    createReconciler(parts.reconciler, logger, options.reconcileIdleMs),
    // Single SIP calls an `outdial api` process handed over (it holds no SIP stack); none can on
    // the embedded database, which is one process's alone.
    ...(options.handOffs
      ? [
          new PollLoop({
            name: 'hand-offs',
            idleMs: 200,
            logger,
            tick: () => parts.reconciler.takeHandOffs(),
          }),
        ]
      : []),
    new PollLoop({
      name: 'dispatcher',
      idleMs: options.dispatchTickMs ?? 200,
      alwaysPause: true,
      logger,
      tick: () => parts.dispatcher.tick(),
    }),
    // An open breaker's dependency is probed when due (doubling waits); its first answer closes
    // the breaker and resumes every batch it paused.
    ...(parts.prober ? [probeLoop(parts.breakers, parts.prober, parts.batches, logger)] : []),
    new PollLoop({ name: 'ingest-recovery', idleMs: 2_000, logger, tick: () => parts.ingester.recover() }),
    new PollLoop({ name: 'webhooks', idleMs: 200, logger, tick: () => parts.webhookSender.tick() }),
    new PollLoop({ name: 'analysis', idleMs: 200, logger, tick: () => parts.analysis.tick() }),
    // Idempotency-Key records older than 24 h answer nothing any more; a pass a minute deletes them.
    new PollLoop({
      name: 'idempotency-purge',
      idleMs: 60_000,
      logger,
      tick: () => parts.idempotency.purgeExpired(),
    }),
  ];
}

function probeLoop(
  breakers: Breakers,
  prober: DependencyProber,
  batches: Pick<BatchService, 'resumeForDependency'>,
  logger: Logger,
): PollLoop {
  return new PollLoop({
    name: 'breaker-probes',
    idleMs: 500,
    logger,
    tick: async () => {
      const closed = await breakers.probeDue(prober, async (key) => {
        const resumed = await batches.resumeForDependency(key);
        if (resumed.length > 0) logger.info({ dependency: key, batches: resumed }, 'batches resumed');
      });
      return closed.length;
    },
  });
}
