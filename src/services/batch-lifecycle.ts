import { sql } from 'kysely';
import type { Db } from '../adapters/postgres/database.js';
import { type BatchStatus, batchRatios, nextStep } from '../domain/batch.js';
import {
  allContactsFinal,
  batchSources,
  batchTransition,
  canBatch,
  contactSources,
  LIVE_BATCH_STATUSES,
} from '../domain/batch-lifecycle.js';
import { isSuccess } from '../domain/call.js';
import type { BatchCancelledPayload, BatchCompletedPayload, BatchStatusPayload } from '../domain/webhooks.js';
import type { CallEndedEvent } from '../ports.js';
import { queueWebhook } from './webhooks.js';

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
  trx: Db,
  batchId: string,
  startAt: Date | null,
  now: Date,
): Promise<BatchStatus | null> {
  const next = batchTransition('ingesting', {
    type: 'ingested',
    startsLater: startAt !== null && startAt.getTime() > now.getTime(),
  });
  const done = await trx
    .updateTable('batches')
    .set({ status: next, ingest_lease_until: null, updated_at: now })
    .where('id', '=', batchId)
    .where('status', 'in', batchSources('ingested'))
    .executeTakeFirst();
  if (Number(done.numUpdatedRows) === 0) return null;
  return (await finishIfDone(trx, batchId, now)) ? 'completed' : next;
}

/**
 * Cancels a batch (the caller checked canBatch(status, 'cancel')): queued contacts leave the queue,
 * contacts not yet ingested are never queued, and batch.cancelled goes to onBatchEvent, else
 * onBatchComplete. Returns the contacts removed.
 */
export async function cancelBatch(
  trx: Db,
  batch: LifecycleBatch & { total: number; ingested: number },
  now: Date,
): Promise<number> {
  const to = batchTransition(batch.status, { type: 'cancel' });
  const removed = await cancelQueued(trx, batch.id);
  const notIngested = batch.status === 'ingesting' ? batch.total - batch.ingested : 0;
  const cancelledJobs = removed + notIngested;
  await trx
    .updateTable('batches')
    .set({ status: to, cancelled_jobs: cancelledJobs, completed_at: now, paused_at: null, updated_at: now })
    .where('id', '=', batch.id)
    .where('status', 'in', batchSources('cancel'))
    .execute();
  await announce(trx, batch, now, {
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
  trx: Db,
  batchId: string,
  failure: { code: string; error: string },
  now: Date,
): Promise<boolean> {
  const updated = await trx
    .updateTable('batches')
    .set({
      status: 'failed',
      error_code: failure.code,
      error: failure.error,
      completed_at: now,
      updated_at: now,
      paused_at: null,
      ingest_lease_until: null,
    })
    .where('id', '=', batchId)
    .where('status', 'in', batchSources('fail'))
    .returning(['user_id', 'agent_id', 'webhooks', 'total', 'ingested'])
    .executeTakeFirst();
  if (!updated) return false;
  const url = updated.webhooks?.onBatchFailed;
  if (url) {
    await queueWebhook(trx, {
      userId: updated.user_id,
      url,
      payload: {
        event: 'batch.failed',
        batchId,
        agentId: updated.agent_id,
        error: failure.error,
        code: failure.code,
        timestamp: now.toISOString(),
      },
      batchId,
      now,
    });
  }
  const removed = await cancelQueued(trx, batchId);
  // Once ingested, `ingested` equals `total`; before, the rest were never queued.
  const neverQueued = updated.total - updated.ingested;
  await trx
    .updateTable('batches')
    .set({ cancelled_jobs: sql`cancelled_jobs + ${removed + neverQueued}` })
    .where('id', '=', batchId)
    .execute();
  return true;
}

async function cancelQueued(trx: Db, batchId: string): Promise<number> {
  const removed = await trx
    .updateTable('batch_contacts')
    .set({ state: 'cancelled', lease_until: null, window_wait: false })
    .where('batch_id', '=', batchId)
    .where('state', 'in', contactSources('cancel'))
    .executeTakeFirst();
  return Number(removed.numUpdatedRows);
}

/** Pauses a batch (the caller checked canBatch(status, 'pause')): no new call starts; calls up finish. */
export async function pauseBatch(trx: Db, batch: LifecycleBatch, now: Date): Promise<BatchStatus> {
  const to = batchTransition(batch.status, { type: 'pause' });
  await trx
    .updateTable('batches')
    .set({ status: to, paused_at: now, updated_at: now })
    .where('id', '=', batch.id)
    .where('status', 'in', batchSources('pause'))
    .execute();
  await announce(trx, batch, now, statusPayload(batch, 'batch.paused', to, now));
  return to;
}

/**
 * Resumes a paused batch where it stopped: processing when it had started dialing, else scheduled
 * or pending as its start time says. Queued contacts keep their times (those past are due now).
 */
export async function resumeBatch(
  trx: Db,
  batch: LifecycleBatch & { started_at: Date | null; scheduled_start_at: Date | null },
  now: Date,
): Promise<BatchStatus> {
  const to = batchTransition(batch.status, {
    type: 'resume',
    started: batch.started_at !== null,
    startsLater: batch.scheduled_start_at !== null && batch.scheduled_start_at.getTime() > now.getTime(),
  });
  await trx
    .updateTable('batches')
    .set({ status: to, paused_at: null, updated_at: now })
    .where('id', '=', batch.id)
    .where('status', 'in', batchSources('resume'))
    .execute();
  await announce(trx, batch, now, statusPayload(batch, 'batch.resumed', to, now));
  return to;
}

function statusPayload(
  batch: LifecycleBatch,
  event: BatchStatusPayload['event'],
  status: BatchStatus,
  now: Date,
): BatchStatusPayload {
  return {
    event,
    batchId: batch.id,
    agentId: batch.agent_id,
    userId: batch.user_id,
    status: status as BatchStatusPayload['status'],
    timestamp: now.toISOString(),
  };
}

/** A change of the batch's state the user made: to onBatchEvent, else onBatchComplete. */
async function announce(
  trx: Db,
  batch: LifecycleBatch,
  now: Date,
  payload: BatchStatusPayload | BatchCancelledPayload,
): Promise<void> {
  const url = batch.webhooks?.onBatchEvent ?? batch.webhooks?.onBatchComplete;
  if (!url) return;
  await queueWebhook(trx, { userId: batch.user_id, url, payload, batchId: batch.id, now });
}

/** Claimed rows become dialing (one call each) and the batch processing, in two statements. */
export async function claimContacts(
  trx: Db,
  batchId: string,
  claims: Array<{ seq: number; callId: string; leaseUntil: Date }>,
  now: Date,
): Promise<void> {
  if (claims.length === 0) return;
  await sql`
    update batch_contacts bc set state = 'dialing', attempts = bc.attempts + 1, call_id = x.call_id,
      lease_until = x.lease, window_wait = false
    from unnest(${claims.map((c) => c.seq)}::int[], ${claims.map((c) => c.callId)}::text[],
                ${claims.map((c) => c.leaseUntil.toISOString())}::timestamptz[])
      as x(seq, call_id, lease)
    where bc.batch_id = ${batchId} and bc.seq = x.seq and bc.state = any(${contactSources('claim')}::text[])`.execute(
    trx,
  );
  const to = batchTransition('pending', { type: 'claim' });
  await trx
    .updateTable('batches')
    .set({ status: to, started_at: sql`coalesce(started_at, ${now})`, updated_at: now })
    .where('id', '=', batchId)
    .where(
      'status',
      'in',
      batchSources('claim').filter((status) => status !== to),
    )
    .execute();
}

/**
 * Queued rows wait until a later time: their calling window's opening (`windowWait`, shown as
 * waiting for the window) or a moment when their contact has no other call up.
 */
export async function deferContacts(
  trx: Db,
  batchId: string,
  defers: Array<{ seq: number; at: Date; windowWait: boolean }>,
): Promise<void> {
  if (defers.length === 0) return;
  await sql`
    update batch_contacts bc set next_attempt_at = x.at, window_wait = x.wait
    from unnest(${defers.map((d) => d.seq)}::int[], ${defers.map((d) => d.at.toISOString())}::timestamptz[],
                ${defers.map((d) => d.windowWait)}::boolean[]) as x(seq, at, wait)
    where bc.batch_id = ${batchId} and bc.seq = x.seq and bc.state = any(${contactSources('defer')}::text[])`.execute(
    trx,
  );
}

/**
 * Queued rows whose number is on the user's suppression list: suppressed, never dialed, counted in
 * batches.suppressed. The batch completes when that leaves nothing to dial.
 */
export async function suppressContacts(trx: Db, batchId: string, seqs: number[], now: Date): Promise<number> {
  if (seqs.length === 0) return 0;
  const moved = await trx
    .updateTable('batch_contacts')
    .set({ state: 'suppressed', window_wait: false, lease_until: null })
    .where('batch_id', '=', batchId)
    .where('seq', 'in', seqs)
    .where('state', 'in', contactSources('suppress'))
    .executeTakeFirst();
  const count = Number(moved.numUpdatedRows);
  if (count === 0) return 0;
  await trx
    .updateTable('batches')
    .set({ suppressed: sql`suppressed + ${count}`, updated_at: now })
    .where('id', '=', batchId)
    .execute();
  await finishIfDone(trx, batchId, now);
  return count;
}

/** A claimed row whose call never reached the network goes back to the queue, its attempt given back. */
export async function returnContact(
  trx: Db,
  call: { batchId: string; seq: number; callId: string },
): Promise<void> {
  await trx
    .updateTable('batch_contacts')
    .set({ state: 'queued', attempts: sql`attempts - 1`, call_id: null, lease_until: null })
    .where('batch_id', '=', call.batchId)
    .where('seq', '=', call.seq)
    .where('call_id', '=', call.callId)
    .where('state', 'in', contactSources('return'))
    .execute();
}

/** A chunk's rows, queued or skipped (no consent under requireConsent); returns how many were skipped. */
export async function queueContacts(
  trx: Db,
  chunk: {
    batchId: string;
    rows: Array<{ seq: number; contactId: string; phone: string; timezone: string | null; skipped: boolean }>;
    dueAt: Date;
  },
): Promise<number> {
  if (chunk.rows.length === 0) return 0;
  const { rows } = chunk;
  // A row already there (a resumed chunk) is left as it is and not counted again.
  const inserted = await sql<{ state: string }>`
    insert into batch_contacts (batch_id, seq, contact_id, phone_number, state, next_attempt_at, timezone)
    select ${chunk.batchId}, x.seq, x.contact_id, x.phone, case when x.skipped then 'skipped' else 'queued' end,
           ${chunk.dueAt}, x.tz
    from unnest(${rows.map((r) => r.seq)}::int[], ${rows.map((r) => r.contactId)}::text[],
                ${rows.map((r) => r.phone)}::text[], ${rows.map((r) => r.timezone)}::text[],
                ${rows.map((r) => r.skipped)}::boolean[]) as x(seq, contact_id, phone, tz, skipped)
    on conflict do nothing
    returning state`.execute(trx);
  const skipped = inserted.rows.filter((row) => row.state === 'skipped').length;
  if (skipped > 0) {
    await trx
      .updateTable('batches')
      .set({ skipped: sql`skipped + ${skipped}` })
      .where('id', '=', chunk.batchId)
      .execute();
  }
  return skipped;
}

/**
 * Completes a live batch whose contacts are all final, and queues its onBatchComplete. Returns
 * whether it completed.
 */
export async function finishIfDone(
  trx: Db,
  batchId: string,
  now: Date,
  counted?: CountedBatch,
): Promise<boolean> {
  const row =
    counted ??
    (await trx.selectFrom('batches').select(COUNTED_COLUMNS).where('id', '=', batchId).executeTakeFirst());
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
  const open = await trx
    .selectFrom('batch_contacts')
    .select('seq')
    .where('batch_id', '=', batchId)
    .where('state', 'in', ['queued', 'dialing'])
    .limit(1)
    .executeTakeFirst();
  if (open) return false;
  const to = batchTransition(row.status, { type: 'finish' });
  await trx
    .updateTable('batches')
    .set({ status: to, completed_at: now, paused_at: null, updated_at: now })
    .where('id', '=', batchId)
    .where('status', 'in', batchSources('finish'))
    .execute();
  const url = row.webhooks?.onBatchComplete;
  if (url) {
    await queueWebhook(trx, {
      userId: row.user_id,
      url,
      payload: completedPayload(row, now),
      batchId,
      now,
    });
  }
  return true;
}

const COUNTED_COLUMNS = [
  'id',
  'status',
  'total',
  'processed',
  'succeeded',
  'failed',
  'cancelled_jobs',
  'suppressed',
  'skipped',
  'user_id',
  'agent_id',
  'webhooks',
  'created_at',
  'started_at',
] as const;

/** A batch's counters as finishIfDone reads them. */
export interface CountedBatch {
  id: string;
  status: BatchStatus;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  cancelled_jobs: number;
  suppressed: number;
  skipped: number;
  user_id: string;
  agent_id: string;
  webhooks: Record<string, string> | null;
  created_at: Date;
  started_at: Date | null;
}

function completedPayload(
  batch: {
    id: string;
    agent_id: string;
    user_id: string;
    total: number;
    processed: number;
    succeeded: number;
    failed: number;
    created_at: Date;
    started_at: Date | null;
  },
  now: Date,
): BatchCompletedPayload {
  return {
    event: 'batch.completed',
    batchId: batch.id,
    agentId: batch.agent_id,
    userId: batch.user_id,
    statistics: {
      total: batch.total,
      processed: batch.processed,
      succeeded: batch.succeeded,
      failed: batch.failed,
      ...batchRatios(batch),
    },
    timestamps: {
      createdAt: batch.created_at.toISOString(),
      startedAt: batch.started_at?.toISOString() ?? null,
      completedAt: now.toISOString(),
    },
  };
}

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
  trx: Db,
  batches: EndingBatch[],
  rows: Array<{ id: string; batch_id: string | null; batch_seq: number | null; attempt: number }>,
  events: Map<string, CallEndedEvent>,
  now: Date,
): Promise<CountedBatch[]> {
  const byId = new Map(batches.map((batch) => [batch.id, batch]));
  const moves: Array<{
    batchId: string;
    seq: number;
    callId: string;
    retry: boolean;
    nextAt: Date | null;
    outcome: string;
  }> = [];
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
  const moved = await sql<{ batch_id: string; call_id: string }>`
    update batch_contacts bc set
      state = case when x.retry then 'queued' else 'done' end,
      outcome = x.outcome, lease_until = null,
      next_attempt_at = coalesce(x.next_at::timestamptz, bc.next_attempt_at)
    from unnest(
      ${moves.map((m) => m.batchId)}::text[], ${moves.map((m) => m.seq)}::int[], ${moves.map((m) => m.callId)}::text[],
      ${moves.map((m) => m.retry)}::boolean[], ${moves.map((m) => m.nextAt?.toISOString() ?? null)}::text[],
      ${moves.map((m) => m.outcome)}::text[]
    ) as x(batch_id, seq, call_id, retry, next_at, outcome)
    where bc.batch_id = x.batch_id and bc.seq = x.seq and bc.state = any(${contactSources('end')}::text[])
      and bc.call_id = x.call_id
    returning bc.batch_id, bc.call_id`.execute(trx);
  const finished = new Map<string, { processed: number; succeeded: number }>();
  const moveByCall = new Map(moves.map((move) => [move.callId, move]));
  for (const row of moved.rows) {
    const move = moveByCall.get(row.call_id);
    if (!move || move.retry) continue;
    const tally = finished.get(row.batch_id) ?? { processed: 0, succeeded: 0 };
    tally.processed++;
    if (isSuccess(move.outcome as CallEndedEvent['status'])) tally.succeeded++;
    finished.set(row.batch_id, tally);
  }
  const counted: CountedBatch[] = [];
  for (const [batchId, tally] of finished) {
    const row = await trx
      .updateTable('batches')
      .set({
        processed: sql`processed + ${tally.processed}`,
        succeeded: sql`succeeded + ${tally.succeeded}`,
        failed: sql`failed + ${tally.processed - tally.succeeded}`,
        updated_at: now,
      })
      .where('id', '=', batchId)
      .returning(COUNTED_COLUMNS)
      .executeTakeFirst();
    if (row) counted.push(row as CountedBatch);
  }
  return counted;
}
