import type { BatchContactState, BatchStatus } from './batch.js';

/**
 * The batch lifecycle: every change of a batch's status and of a batch contact's state is one of
 * the events below, and these functions say where it leads or refuse it. The service that writes
 * them (src/services/batch-lifecycle.ts) asks here first; its set-based SQL uses `batchSources` /
 * `contactSources` as the `where status in (...)` guard, so the database applies the same rules.
 *
 *   ingesting --ingested--> scheduled (start later) | pending
 *   scheduled, pending --claim--> processing
 *   scheduled, pending, processing --pause--> paused --resume--> processing (had started)
 *                                                              | scheduled (start later) | pending
 *   scheduled, pending, processing, paused --finish--> completed (every contact final)
 *   ingesting, scheduled, pending, processing, paused --cancel--> cancelled, --fail--> failed
 */
export type BatchEvent =
  | { type: 'ingested'; startsLater: boolean }
  | { type: 'claim' }
  | { type: 'pause' }
  | { type: 'resume'; started: boolean; startsLater: boolean }
  | { type: 'finish' }
  | { type: 'cancel' }
  | { type: 'fail' };
export type BatchEventType = BatchEvent['type'];
/**
 * The batch events the lifecycle announces on its buses (services/events.ts): every one. The
 * claim is announced only when it moved the batch (its first claim, to processing), not at each
 * dispatcher pass.
 */
export type AnnouncedBatchEvent = BatchEventType;

/** Statuses in which a batch may still dial: the dispatcher serves these and only these. */
export const ACTIVE_BATCH_STATUSES: readonly BatchStatus[] = ['scheduled', 'pending', 'processing'];
/** Statuses a batch never leaves. */
export const FINAL_BATCH_STATUSES: readonly BatchStatus[] = ['completed', 'cancelled', 'failed'];
/** Statuses in which a batch's contacts may still be dialed, now or after a resume (retries are queued). */
export const LIVE_BATCH_STATUSES: readonly BatchStatus[] = [...ACTIVE_BATCH_STATUSES, 'paused'];

const SOURCES: Record<BatchEventType, readonly BatchStatus[]> = {
  ingested: ['ingesting'],
  claim: ACTIVE_BATCH_STATUSES,
  pause: ACTIVE_BATCH_STATUSES,
  resume: ['paused'],
  finish: LIVE_BATCH_STATUSES,
  cancel: ['ingesting', ...LIVE_BATCH_STATUSES],
  fail: ['ingesting', ...LIVE_BATCH_STATUSES],
};

export function isActiveBatch(status: BatchStatus): boolean {
  return ACTIVE_BATCH_STATUSES.includes(status);
}

export function isFinalBatch(status: BatchStatus): boolean {
  return FINAL_BATCH_STATUSES.includes(status);
}

/** The statuses from which `event` is legal (the SQL guard of a set-based write). */
export function batchSources(event: BatchEventType): BatchStatus[] {
  return [...SOURCES[event]];
}

export function canBatch(from: BatchStatus, event: BatchEventType): boolean {
  return SOURCES[event].includes(from);
}

/** A state change the lifecycle does not allow. */
export class IllegalTransition extends Error {
  constructor(
    readonly from: string,
    readonly event: string,
  ) {
    super(`illegal transition: ${event} from ${from}`);
    this.name = 'IllegalTransition';
  }
}

/** Where `event` takes a batch in status `from`; throws IllegalTransition when it may not happen. */
export function batchTransition(from: BatchStatus, event: BatchEvent): BatchStatus {
  if (!canBatch(from, event.type)) throw new IllegalTransition(from, event.type);
  switch (event.type) {
    case 'ingested':
      return event.startsLater ? 'scheduled' : 'pending';
    case 'claim':
      return 'processing';
    case 'pause':
      return 'paused';
    case 'resume':
      if (event.started) return 'processing';
      return event.startsLater ? 'scheduled' : 'pending';
    case 'finish':
      return 'completed';
    case 'cancel':
      return 'cancelled';
    case 'fail':
      return 'failed';
  }
}

/**
 * Batch contact events:
 *   (new) --queue--> queued, or skipped when consent is required and missing (see initialContactState)
 *   queued --claim--> dialing, --defer--> queued (a later time: its window, a busy contact)
 *   queued --suppress--> suppressed (its number is on the suppression list: never dialed)
 *   queued --cancel--> cancelled (the batch was cancelled or failed)
 *   dialing --return--> queued (claimed, never dialed), --retry--> queued (another attempt later)
 *   dialing --end--> done
 * suppressed, skipped, cancelled and done are final.
 */
export type ContactEvent = 'claim' | 'defer' | 'suppress' | 'cancel' | 'return' | 'retry' | 'end';

const CONTACT_MOVES: Record<ContactEvent, { from: readonly BatchContactState[]; to: BatchContactState }> = {
  claim: { from: ['queued'], to: 'dialing' },
  defer: { from: ['queued'], to: 'queued' },
  suppress: { from: ['queued'], to: 'suppressed' },
  cancel: { from: ['queued'], to: 'cancelled' },
  return: { from: ['dialing'], to: 'queued' },
  retry: { from: ['dialing'], to: 'queued' },
  end: { from: ['dialing'], to: 'done' },
};

/** Contact states that never change again. */
export const FINAL_CONTACT_STATES: readonly BatchContactState[] = [
  'done',
  'cancelled',
  'suppressed',
  'skipped',
];

export function contactSources(event: ContactEvent): BatchContactState[] {
  return [...CONTACT_MOVES[event].from];
}

/** Where `event` takes a contact in state `from`; throws IllegalTransition when it may not happen. */
export function contactTransition(from: BatchContactState, event: ContactEvent): BatchContactState {
  const move = CONTACT_MOVES[event];
  if (!move.from.includes(from)) throw new IllegalTransition(from, event);
  return move.to;
}

/** The state a contact is queued in: skipped (never dialed) when the batch requires consent it lacks. */
export function initialContactState(requireConsent: boolean, hasConsent: boolean): BatchContactState {
  return requireConsent && !hasConsent ? 'skipped' : 'queued';
}

/**
 * Whether a batch has nothing left to dial: every contact is final (dialed to its end, cancelled,
 * suppressed or skipped). `processed` counts contacts done.
 */
export function allContactsFinal(counts: {
  total: number;
  processed: number;
  cancelledJobs: number;
  suppressed: number;
  skipped: number;
}): boolean {
  return counts.processed + counts.cancelledJobs + counts.suppressed + counts.skipped >= counts.total;
}
