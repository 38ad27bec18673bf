import { type BatchStatus, nextStep, type PauseReason } from '../domain/batch.js';
import {
  type AnnouncedBatchEvent,
  allContactsFinal,
  batchSources,
  batchTransition,
  canBatch,
  contactSources,
  LIVE_BATCH_STATUSES,
} from '../domain/batch-lifecycle.js';
import { isSuccess } from '../domain/call.js';
import { type FailureSource, serviceRetryDelayMs } from '../domain/failure.js';
import type { CallEndedEvent } from '../ports.js';
import type { ContactMove } from '../store/batch-contacts.js';
import type { CountedBatch } from '../store/batches.js';
import type { Repos } from '../store/index.js';
import type { DomainEventBus, TransactionBus } from './events.js';

/*
 * The only writer of batches.status and batch_contacts.state. Every function runs inside the
 * caller's transaction (which holds the batch row's lock where the caller needs it), asks the
 * domain lifecycle (src/domain/batch-lifecycle.ts) where an event leads, and guards its SQL with
 * the statuses the event may leave, so a concurrent change that committed first wins cleanly.
 * `BatchLifecycle` changes a batch's status and announces each change (the claim's move to
 * processing included); the functions after it move contacts.
 */

/** The columns the lifecycle reads of a locked batch. */
export interface LifecycleBatch {
  id: string;
  status: BatchStatus;
  user_id: string;
  agent_id: string;
  webhooks: Record<string, string> | null;
}

interface Transitioned<
  Cause extends AnnouncedBatchEvent,
  Batch extends { id: string; user_id: string } = WebhookBatch,
> {
  /** The repositories of the transaction that changed the status: a reaction writes in it. */
  tx: Repos;
  cause: Cause;
  batch: Batch;
  /** The status the batch is in now. */
  to: BatchStatus;
  now: Date;
}

/** The columns of a batch its webhooks are built from (what a transition carries). */
export interface WebhookBatch {
  id: string;
  user_id: string;
  agent_id: string;
  webhooks: Record<string, string> | null;
}

/** A batch that completed, with the counters its `batch.completed` webhook reports. */
export interface CompletedBatch extends WebhookBatch {
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  created_at: Date;
  started_at: Date | null;
}

/**
 * A batch's status change, in the transaction that writes it. Each cause carries what its
 * reactions need: the contacts a cancel took off the queue, a failure's code and message, the
 * counters of a batch that completed.
 */
export type BatchTransition =
  | Transitioned<'ingested' | 'claim', { id: string; user_id: string }>
  | (Transitioned<'pause'> & { pause: PauseCause })
  | (Transitioned<'resume'> & { after: PauseCause })
  | (Transitioned<'cancel'> & { cancelledJobs: number })
  | (Transitioned<'fail'> & { failure: BatchFailure })
  | Transitioned<'finish', CompletedBatch>;

/**
 * Why a batch was paused: by its operator, or because a dependency its agent needs became
 * unavailable (`dependency` is that breaker's key, domain/dependencies.ts). A resume carries the
 * pause it ends.
 */
export interface PauseCause {
  reason: PauseReason;
  dependency: string | null;
}

export const OPERATOR_PAUSE: PauseCause = { reason: 'operator', dependency: null };

/** What the batch lifecycle announces inside its callers' transactions (`TransactionBus`). */
export interface BatchTransactionEvents {
  'batch.transitioned': BatchTransition;
}

export interface BatchFailure {
  code: string;
  error: string;
}

/**
 * The batch's status changes, each announced twice: its `TransactionBus` reactions run at once,
 * in the caller's transaction (one that throws undoes the change), and `batch.transitioned` goes
 * to the `EventBus` once that transaction commits. The reactions are wired in
 * `src/wiring/subscribers.ts`.
 */
export class BatchLifecycle {
  constructor(
    private readonly events: DomainEventBus,
    private readonly reactions: TransactionBus<BatchTransactionEvents>,
  ) {}

  /** Ingestion queued every contact: ingesting -> scheduled or pending (completed when none is dialable). */
  async markIngested(
    repos: Repos,
    batch: { id: string; user_id: string },
    startAt: Date | null,
    now: Date,
  ): Promise<BatchStatus | null> {
    const next = batchTransition('ingesting', {
      type: 'ingested',
      startsLater: startAt !== null && startAt.getTime() > now.getTime(),
    });
    const done = await repos.batches.moveStatus(batch.id, batchSources('ingested'), {
      status: next,
      ingest_lease_until: null,
      updated_at: now,
    });
    if (!done) return null;
    await this.announce({ tx: repos, cause: 'ingested', batch, to: next, now });
    return (await this.finishIfDone(repos, batch.id, now)) ? 'completed' : next;
  }

  /**
   * Cancels a batch (the caller checked canBatch(status, 'cancel')): queued contacts leave the
   * queue, contacts not yet ingested are never queued. Returns the contacts removed.
   */
  async cancelBatch(
    repos: Repos,
    batch: LifecycleBatch & { total: number; ingested: number },
    now: Date,
  ): Promise<number> {
    const to = batchTransition(batch.status, { type: 'cancel' });
    const removed = await repos.batchContacts.cancelQueued(batch.id, contactSources('cancel'));
    const notIngested = batch.status === 'ingesting' ? batch.total - batch.ingested : 0;
    const cancelledJobs = removed + notIngested;
    await repos.batches.moveStatus(batch.id, batchSources('cancel'), {
      status: to,
      cancelled_jobs: cancelledJobs,
      completed_at: now,
      paused_at: null,
      updated_at: now,
    });
    await this.announce({ tx: repos, cause: 'cancel', batch, to, now, cancelledJobs });
    return cancelledJobs;
  }

  /**
   * Fails a batch that has not finished: nothing queued is dialed any more, and contacts not yet
   * ingested never will be. Returns false when it had finished.
   */
  async failBatch(repos: Repos, batchId: string, failure: BatchFailure, now: Date): Promise<boolean> {
    const updated = await repos.batches.fail(batchId, batchSources('fail'), failure, now);
    if (!updated) return false;
    await this.announce({
      tx: repos,
      cause: 'fail',
      batch: { id: batchId, ...updated },
      to: 'failed',
      now,
      failure,
    });
    const removed = await repos.batchContacts.cancelQueued(batchId, contactSources('cancel'));
    // Once ingested, `ingested` equals `total`; before, the rest were never queued.
    const neverQueued = updated.total - updated.ingested;
    await repos.batches.addTo(batchId, 'cancelled_jobs', removed + neverQueued, null);
    return true;
  }

  /**
   * Pauses a batch (the caller checked canBatch(status, 'pause')): no new call starts; calls up
   * finish. The reason is kept with it until the resume.
   */
  async pauseBatch(
    repos: Repos,
    batch: LifecycleBatch,
    now: Date,
    pause: PauseCause = OPERATOR_PAUSE,
  ): Promise<BatchStatus> {
    const to = batchTransition(batch.status, { type: 'pause' });
    await repos.batches.moveStatus(batch.id, batchSources('pause'), {
      status: to,
      paused_at: now,
      pause_reason: pause.reason,
      paused_dependency: pause.dependency,
      updated_at: now,
    });
    await this.announce({ tx: repos, cause: 'pause', batch, to, now, pause });
    return to;
  }

  /**
   * A paused batch's reason becomes the operator's (an operator paused a batch a dependency had
   * paused): the dependency's recovery no longer resumes it. Announced as a pause by the operator
   * (its `batch.paused` says so), though the status stays `paused`.
   */
  async holdForOperator(repos: Repos, batch: LifecycleBatch, now: Date): Promise<BatchStatus> {
    await repos.batches.moveStatus(batch.id, ['paused'], {
      status: 'paused',
      pause_reason: 'operator',
      paused_dependency: null,
      updated_at: now,
    });
    await this.announce({ tx: repos, cause: 'pause', batch, to: 'paused', now, pause: OPERATOR_PAUSE });
    return 'paused';
  }

  /**
   * Resumes a paused batch where it stopped: processing when it had started dialing, else
   * scheduled or pending as its start time says. Queued contacts keep their times (those past are
   * due now). `after` is the pause it ends.
   */
  async resumeBatch(
    repos: Repos,
    batch: LifecycleBatch & { started_at: Date | null; scheduled_start_at: Date | null },
    now: Date,
    after: PauseCause = OPERATOR_PAUSE,
  ): Promise<BatchStatus> {
    const to = batchTransition(batch.status, {
      type: 'resume',
      started: batch.started_at !== null,
      startsLater: batch.scheduled_start_at !== null && batch.scheduled_start_at.getTime() > now.getTime(),
    });
    await repos.batches.moveStatus(batch.id, batchSources('resume'), {
      status: to,
      paused_at: null,
      pause_reason: null,
      paused_dependency: null,
      updated_at: now,
    });
    await this.announce({ tx: repos, cause: 'resume', batch, to, now, after });
    return to;
  }

  /**
   * Queued rows whose number is on the user's suppression list: suppressed, never dialed, counted
   * in batches.suppressed. The batch completes when that leaves nothing to dial.
   */
  async suppressContacts(repos: Repos, batchId: string, seqs: number[], now: Date): Promise<number> {
    if (seqs.length === 0) return 0;
    const count = await repos.batchContacts.suppress(batchId, seqs, contactSources('suppress'));
    if (count === 0) return 0;
    await repos.batches.addTo(batchId, 'suppressed', count, now);
    await this.finishIfDone(repos, batchId, now);
    return count;
  }

  /** Completes a live batch whose contacts are all final. Returns whether it completed. */
  async finishIfDone(repos: Repos, batchId: string, now: Date, counted?: CountedBatch): Promise<boolean> {
    const row = counted ?? (await repos.batches.counted(batchId));
    if (!row || !canBatch(row.status, 'finish')) return false;
    if (
      !allContactsFinal({
        total: row.total,
        processed: row.processed,
        cancelledJobs: row.cancelled_jobs,
        suppressed: row.suppressed,
        skipped: row.skipped,
      })
    )
      return false;
    // Contacts still dialing or queued (a row counted final by mistake) keep the batch open.
    if (await repos.batchContacts.anyOpen(batchId)) return false;
    const to = batchTransition(row.status, { type: 'finish' });
    await repos.batches.moveStatus(batchId, batchSources('finish'), {
      status: to,
      completed_at: now,
      paused_at: null,
      updated_at: now,
    });
    await this.announce({ tx: repos, cause: 'finish', batch: row, to, now });
    return true;
  }

  /**
   * Claimed rows become dialing (one call each) and the batch processing, in two statements. The
   * batch's move (its first claim, or the first after a resume from pending) is announced; a pass
   * that finds it processing already announces nothing.
   */
  async claimContacts(
    repos: Repos,
    batch: { id: string; user_id: string },
    claims: Array<{ seq: number; callId: string; leaseUntil: Date }>,
    now: Date,
  ): Promise<void> {
    if (claims.length === 0) return;
    await repos.batchContacts.claim(batch.id, claims, contactSources('claim'));
    const to = batchTransition('pending', { type: 'claim' });
    const moved = await repos.batches.markClaimed(
      batch.id,
      to,
      batchSources('claim').filter((status) => status !== to),
      now,
    );
    if (moved) await this.announce({ tx: repos, cause: 'claim', batch, to, now });
  }

  /** The change's reactions in its transaction, then `batch.transitioned` once that commits. */
  private async announce(transition: BatchTransition): Promise<void> {
    await this.reactions.run('batch.transitioned', transition);
    const { tx, batch, cause, to, now } = transition;
    tx.afterCommit(() =>
      this.events.emit('batch.transitioned', {
        batchId: batch.id,
        userId: batch.user_id,
        cause,
        to,
        at: now,
      }),
    );
  }
}

/**
 * Queued rows wait until a later time: their calling window's opening (`windowWait`, shown as
 * waiting for the window) or a moment when their contact has no other call up.
 */
export async function deferContacts(
  repos: Repos,
  batchId: string,
  defers: Array<{ seq: number; at: Date; windowWait: boolean }>,
): Promise<void> {
  if (defers.length === 0) return;
  await repos.batchContacts.defer(batchId, defers, contactSources('defer'));
}
/** A claimed row whose call never reached the network goes back to the queue, its attempt given back. */
export async function returnContact(
  repos: Repos,
  call: { batchId: string; seq: number; callId: string },
): Promise<void> {
  await repos.batchContacts.returnOne(call, contactSources('return'));
}

/** A chunk's rows, queued or skipped (no consent under requireConsent); returns how many were skipped. */
export async function queueContacts(
  repos: Repos,
  chunk: {
    batchId: string;
    rows: Array<{ seq: number; contactId: string; phone: string; timezone: string | null; skipped: boolean }>;
    dueAt: Date;
  },
): Promise<number> {
  if (chunk.rows.length === 0) return 0;
  // A row already there (a resumed chunk) is left as it is and not counted again.
  const inserted = await repos.batchContacts.queue(chunk);
  const skipped = inserted.filter((state) => state === 'skipped').length;
  if (skipped > 0) await repos.batches.addTo(chunk.batchId, 'skipped', skipped, null);
  return skipped;
}

export type { CountedBatch };

/** A batch row as a group of call ends holds it locked. */
export interface EndingBatch {
  id: string;
  status: BatchStatus;
  max_attempts: number;
  no_answer_delay_ms: number;
  busy_delay_ms: number;
  retry_on_voicemail: boolean;
}

/**
 * The batch side of a group of call ends: each contact is done (counted as succeeded or failed)
 * or queued for another attempt after its delay, in one statement, then each batch's counters
 * move by the contacts that finished. Returns those batches' counters: the caller passes each to
 * finishIfDone once its call webhooks are queued (a batch with nothing left to dial completes). A
 * paused batch still queues retries: they wait for its resume.
 */
export async function advanceBatchContacts(
  repos: Repos,
  batches: EndingBatch[],
  rows: Array<{
    id: string;
    batch_id: string | null;
    batch_seq: number | null;
    attempt: number;
    failure_source: FailureSource | null;
  }>,
  events: Map<string, CallEndedEvent>,
  now: Date,
  serviceRetryMs?: number,
): Promise<CountedBatch[]> {
  const byId = new Map(batches.map((batch) => [batch.id, batch]));
  const moves: ContactMove[] = [];
  // A call that failed on our side (as its end was written: `failure_source`) gives its contact
  // the attempt back, tried again after a backoff that grows with the contact's failures of ours
  // in a row (domain/failure.ts).
  const ours = rows.filter(
    (row) => row.batch_id !== null && row.batch_seq !== null && row.failure_source === 'service',
  );
  const earlierFailures = await repos.batchContacts.serviceFailuresOf(
    ours.map((row) => ({ batchId: row.batch_id as string, seq: row.batch_seq as number })),
  );
  for (const row of rows) {
    const batch = row.batch_id ? byId.get(row.batch_id) : undefined;
    const event = events.get(row.id);
    if (!batch || row.batch_seq === null || !event) continue;
    const live = LIVE_BATCH_STATUSES.includes(batch.status);
    const serviceFailure = row.failure_source === 'service';
    const step = !live
      ? ({ retry: false } as const)
      : serviceFailure
        ? {
            retry: true as const,
            delayMs: serviceRetryDelayMs(
              (earlierFailures.get(`${batch.id}/${row.batch_seq}`) ?? 0) + 1,
              serviceRetryMs,
            ),
          }
        : nextStep(event.status, row.attempt, {
            maxAttempts: batch.max_attempts,
            noAnswerDelayMs: batch.no_answer_delay_ms,
            busyDelayMs: batch.busy_delay_ms,
            retryOnVoicemail: batch.retry_on_voicemail,
          });
    moves.push({
      batchId: batch.id,
      seq: row.batch_seq,
      callId: row.id,
      retry: step.retry,
      nextAt: step.retry ? new Date(Math.max(event.endedAt.getTime(), now.getTime()) + step.delayMs) : null,
      outcome: event.status,
      // Only a retry gives the attempt back: a batch that stopped ends the contact as it is.
      serviceFailure: serviceFailure && step.retry,
    });
  }
  if (moves.length === 0) return [];
  // retry and end both leave `dialing` (contactSources('retry') equals contactSources('end')).
  const moved = await repos.batchContacts.advance(moves, contactSources('end'));
  const finished = new Map<string, { processed: number; succeeded: number }>();
  const moveByCall = new Map(moves.map((move) => [move.callId, move]));
  for (const row of moved) {
    const move = moveByCall.get(row.call_id);
    if (!move || move.retry) continue;
    const tally = finished.get(row.batch_id) ?? { processed: 0, succeeded: 0 };
    tally.processed++;
    if (isSuccess(move.outcome as CallEndedEvent['status'])) tally.succeeded++;
    finished.set(row.batch_id, tally);
  }
  const counted: CountedBatch[] = [];
  for (const [batchId, tally] of finished) {
    const row = await repos.batches.addOutcomes(batchId, tally, now);
    if (row) counted.push(row);
  }
  return counted;
}
