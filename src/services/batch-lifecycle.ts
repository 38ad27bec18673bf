import { type BatchStatus, nextStep } from '../domain/batch.js';
import {
  allContactsFinal,
  batchSources,
  batchTransition,
  canBatch,
  contactSources,
  LIVE_BATCH_STATUSES,
} from '../domain/batch-lifecycle.js';
import { isSuccess } from '../domain/call.js';
import type { CallEndedEvent } from '../ports.js';
import type { ContactMove } from '../store/batch-contacts.js';
import type { CountedBatch } from '../store/batches.js';
import type { Repos } from '../store/index.js';
import {
  queueCompletedWebhook,
  queueFailedWebhook,
  queueStatusWebhook,
  statusPayload,
} from './batch-webhooks.js';

/*
 * The only writer of batches.status and batch_contacts.state. Every function runs inside the
 * caller's transaction (which holds the batch row's lock where the caller needs it), asks the
 * domain lifecycle (src/domain/batch-lifecycle.ts) where an event leads, and guards its SQL with
 * the statuses the event may leave, so a concurrent change that committed first wins cleanly.
 */

/** The columns the lifecycle reads of a locked batch. */
export interface LifecycleBatch {
  id: string;
  status: BatchStatus;
  user_id: string;
  agent_id: string;
  webhooks: Record<string, string> | null;
}

/** Ingestion queued every contact: ingesting -> scheduled or pending (completed when none is dialable). */
export async function markIngested(
  repos: Repos,
  batchId: string,
  startAt: Date | null,
  now: Date,
): Promise<BatchStatus | null> {
  const next = batchTransition('ingesting', {
    type: 'ingested',
    startsLater: startAt !== null && startAt.getTime() > now.getTime(),
  });
  const done = await repos.batches.moveStatus(batchId, batchSources('ingested'), {
    status: next,
    ingest_lease_until: null,
    updated_at: now,
  });
  if (!done) return null;
  return (await finishIfDone(repos, batchId, now)) ? 'completed' : next;
}

/**
 * Cancels a batch (the caller checked canBatch(status, 'cancel')): queued contacts leave the queue,
 * contacts not yet ingested are never queued, and batch.cancelled goes to onBatchEvent, else
 * onBatchComplete. Returns the contacts removed.
 */
export async function cancelBatch(
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
  await queueStatusWebhook(repos, batch, now, {
    event: 'batch.cancelled',
    batchId: batch.id,
    agentId: batch.agent_id,
    userId: batch.user_id,
    status: 'cancelled',
    cancelledJobs,
    timestamp: now.toISOString(),
  });
  return cancelledJobs;
}

/**
 * Fails a batch that has not finished: nothing queued is dialed any more, contacts not yet
 * ingested never will be, and onBatchFailed hears of it. Returns false when it had finished.
 */
export async function failBatch(
  repos: Repos,
  batchId: string,
  failure: { code: string; error: string },
  now: Date,
): Promise<boolean> {
  const updated = await repos.batches.fail(batchId, batchSources('fail'), failure, now);
  if (!updated) return false;
  await queueFailedWebhook(repos, { id: batchId, ...updated }, failure, now);
  const removed = await repos.batchContacts.cancelQueued(batchId, contactSources('cancel'));
  // Once ingested, `ingested` equals `total`; before, the rest were never queued.
  const neverQueued = updated.total - updated.ingested;
  await repos.batches.addTo(batchId, 'cancelled_jobs', removed + neverQueued, null);
  return true;
}

/** Pauses a batch (the caller checked canBatch(status, 'pause')): no new call starts; calls up finish. */
export async function pauseBatch(repos: Repos, batch: LifecycleBatch, now: Date): Promise<BatchStatus> {
  const to = batchTransition(batch.status, { type: 'pause' });
  await repos.batches.moveStatus(batch.id, batchSources('pause'), {
    status: to,
    paused_at: now,
    updated_at: now,
  });
  await queueStatusWebhook(repos, batch, now, statusPayload(batch, 'batch.paused', to, now));
  return to;
}

/**
 * Resumes a paused batch where it stopped: processing when it had started dialing, else scheduled
 * or pending as its start time says. Queued contacts keep their times (those past are due now).
 */
export async function resumeBatch(
  repos: Repos,
  batch: LifecycleBatch & { started_at: Date | null; scheduled_start_at: Date | null },
  now: Date,
): Promise<BatchStatus> {
  const to = batchTransition(batch.status, {
    type: 'resume',
    started: batch.started_at !== null,
    startsLater: batch.scheduled_start_at !== null && batch.scheduled_start_at.getTime() > now.getTime(),
  });
  await repos.batches.moveStatus(batch.id, batchSources('resume'), {
    status: to,
    paused_at: null,
    updated_at: now,
  });
  await queueStatusWebhook(repos, batch, now, statusPayload(batch, 'batch.resumed', to, now));
  return to;
}

/** Claimed rows become dialing (one call each) and the batch processing, in two statements. */
export async function claimContacts(
  repos: Repos,
  batchId: string,
  claims: Array<{ seq: number; callId: string; leaseUntil: Date }>,
  now: Date,
): Promise<void> {
  if (claims.length === 0) return;
  await repos.batchContacts.claim(batchId, claims, contactSources('claim'));
  const to = batchTransition('pending', { type: 'claim' });
  await repos.batches.markClaimed(
    batchId,
    to,
    batchSources('claim').filter((status) => status !== to),
    now,
  );
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

/**
 * Queued rows whose number is on the user's suppression list: suppressed, never dialed, counted in
 * batches.suppressed. The batch completes when that leaves nothing to dial.
 */
export async function suppressContacts(
  repos: Repos,
  batchId: string,
  seqs: number[],
  now: Date,
): Promise<number> {
  if (seqs.length === 0) return 0;
  const count = await repos.batchContacts.suppress(batchId, seqs, contactSources('suppress'));
  if (count === 0) return 0;
  await repos.batches.addTo(batchId, 'suppressed', count, now);
  await finishIfDone(repos, batchId, now);
  return count;
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

/**
 * Completes a live batch whose contacts are all final, and queues its onBatchComplete. Returns
 * whether it completed.
 */
export async function finishIfDone(
  repos: Repos,
  batchId: string,
  now: Date,
  counted?: CountedBatch,
): Promise<boolean> {
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
  await queueCompletedWebhook(repos, row, now);
  return true;
}

export type { CountedBatch };

/** A batch row as a group of call ends holds it locked. */
export interface EndingBatch {
  id: string;
  status: BatchStatus;
  max_attempts: number;
  no_answer_delay_ms: number;
  busy_delay_ms: number;
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
  rows: Array<{ id: string; batch_id: string | null; batch_seq: number | null; attempt: number }>,
  events: Map<string, CallEndedEvent>,
  now: Date,
): Promise<CountedBatch[]> {
  const byId = new Map(batches.map((batch) => [batch.id, batch]));
  const moves: ContactMove[] = [];
  for (const row of rows) {
    const batch = row.batch_id ? byId.get(row.batch_id) : undefined;
    const event = events.get(row.id);
    if (!batch || row.batch_seq === null || !event) continue;
    const step = LIVE_BATCH_STATUSES.includes(batch.status)
      ? nextStep(event.status, row.attempt, {
          maxAttempts: batch.max_attempts,
          noAnswerDelayMs: batch.no_answer_delay_ms,
          busyDelayMs: batch.busy_delay_ms,
        })
      : ({ retry: false } as const);
    moves.push({
      batchId: batch.id,
      seq: row.batch_seq,
      callId: row.id,
      retry: step.retry,
      nextAt: step.retry ? new Date(Math.max(event.endedAt.getTime(), now.getTime()) + step.delayMs) : null,
      outcome: event.status,
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
