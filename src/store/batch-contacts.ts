import type { TurnMetrics } from '../domain/agent-call.js';
import type { BatchContactState, ConsentRecord } from '../domain/batch.js';

/** One contact of a batch with its contact, its call and their outcome, for the CSV export. */
export interface ExportRow {
  seq: number;
  phone_number: string;
  contact_id: string;
  name: string | null;
  email: string | null;
  company: string | null;
  state: string;
  outcome: string | null;
  attempts: number;
  call_id: string | null;
  call_status: string | null;
  duration: number | null;
  sip_code: number | null;
  ended_at: Date | null;
  summary: string | null;
  metric_json: Record<string, unknown> | null;
  ended_reason: string | null;
  failure_source: string | null;
  turns: TurnMetrics[] | null;
  timezone: string | null;
  window_wait: boolean;
  next_attempt_at: Date | null;
  consent: ConsentRecord | null;
}

/** A due queued contact as the dispatcher's claim gate reads it. */
export interface DueContactRow {
  seq: number;
  contact_id: string;
  phone_number: string;
  attempts: number;
  contact_name: string;
  company: string | null;
  metadata: Record<string, unknown> | null;
  timezone: string | null;
  /** Whether its number is on the user's suppression list. */
  suppressed: boolean;
}

/** A contact's next step after its call ended: queued again from `nextAt` (`retry`) or done. */
export interface ContactMove {
  batchId: string;
  seq: number;
  callId: string;
  retry: boolean;
  nextAt: Date | null;
  outcome: string;
  /**
   * The call failed on our side (domain/failure.ts): the contact gets its attempt back and its
   * run of service failures grows by one; any other end resets that run.
   */
  serviceFailure: boolean;
}

export interface QueueWaits {
  /** A queued contact is due now (neither a retry to come nor waiting for its window). */
  due_now: boolean;
  /** Queued contacts whose next attempt (a retry) is due later. */
  retrying: number;
  last_retry_at: Date | null;
  waiting_for_window: number;
  next_opening: Date | null;
}

/** The batches' contact queue, as far as the code converted so far reads it (issue 23 moves the rest). */
export interface BatchContactsRepo {
  /** Queued contacts due now, of batches in one of these statuses (the queue-depth gauge). */
  dueCount(batchStatuses: readonly string[]): Promise<number>;
  /**
   * What a batch's queued contacts wait for at `now`: whether one is due, the retries not yet due
   * and the last one's due time, and those waiting for their calling window with its first opening.
   */
  queueWaits(batchId: string, now: Date): Promise<QueueWaits>;
  /** How many service failures in a row each of these contacts has had (issue 24's backoff). */
  serviceFailuresOf(contacts: Array<{ batchId: string; seq: number }>): Promise<Map<string, number>>;
  /** Up to `limit` of a batch's contacts after `afterSeq`, in batch order. */
  exportPage(batchId: string, afterSeq: number, limit: number): Promise<ExportRow[]>;
  /** The batch's contacts in one of `from` become cancelled: how many. */
  cancelQueued(batchId: string, from: readonly BatchContactState[]): Promise<number>;
  /** Claimed rows (in one of `from`) become dialing, one call each, their attempt counted. */
  claim(
    batchId: string,
    claims: Array<{ seq: number; callId: string; leaseUntil: Date }>,
    from: readonly BatchContactState[],
  ): Promise<void>;
  /** Queued rows (in one of `from`) wait until `at`, `windowWait` saying whether for their window. */
  defer(
    batchId: string,
    defers: Array<{ seq: number; at: Date; windowWait: boolean }>,
    from: readonly BatchContactState[],
  ): Promise<void>;
  /** These rows (in one of `from`) become suppressed: how many. */
  suppress(batchId: string, seqs: number[], from: readonly BatchContactState[]): Promise<number>;
  /** The row claimed for `callId` (in one of `from`) goes back to the queue, its attempt given back. */
  returnOne(
    call: { batchId: string; seq: number; callId: string },
    from: readonly BatchContactState[],
  ): Promise<void>;
  /**
   * Inserts a chunk's rows, queued or skipped, at `dueAt`; a row already there is left as it is.
   * The states of the rows inserted.
   */
  queue(chunk: {
    batchId: string;
    rows: Array<{ seq: number; contactId: string; phone: string; timezone: string | null; skipped: boolean }>;
    dueAt: Date;
  }): Promise<string[]>;
  /**
   * Locks up to `limit` of the batch's queued contacts due at `now` (not in `taken`), skipping those
   * another transaction holds (LOCK_ORDER: contacts), oldest due first.
   */
  lockDue(
    batch: { id: string; userId: string },
    now: Date,
    taken: number[],
    limit: number,
  ): Promise<DueContactRow[]>;
  /** Whether any of the batch's contacts is queued. */
  anyQueued(batchId: string): Promise<boolean>;
  /** Whether any of the batch's contacts is still queued or dialing. */
  anyOpen(batchId: string): Promise<boolean>;
  /**
   * Each row (in one of `from`, still on its call) is queued again (`retry`, from `nextAt`) or done,
   * with its outcome, in one statement: the rows moved.
   */
  advance(
    moves: ContactMove[],
    from: readonly BatchContactState[],
  ): Promise<Array<{ batch_id: string; call_id: string }>>;
}
