import type { BatchStatus, CallingWindow, PauseReason } from '../domain/batch.js';
import type { windowToRow } from '../domain/calling-window.js';

/** A batches row. */
export interface BatchRow {
  id: string;
  user_id: string;
  agent_id: string;
  name: string;
  status: BatchStatus;
  priority: number;
  max_calls_per_second: number;
  max_attempts: number;
  no_answer_delay_ms: number;
  busy_delay_ms: number;
  /** retryStrategy.retryOnVoicemail: a VOICEMAIL attempt is tried again (issue 24). */
  retry_on_voicemail: boolean;
  timezone: string;
  scheduled_start_at: Date | null;
  tags: string[];
  webhooks: Record<string, string> | null;
  submitted: number;
  total: number;
  duplicates: number;
  ingested: number;
  processed: number;
  succeeded: number;
  failed: number;
  cancelled_jobs: number;
  error: string | null;
  error_code: string | null;
  ingest_lease_until: Date | null;
  /** Ingestion passes started (the first one included); recovery gives up after MAX_INGEST_PASSES. */
  ingest_passes: number;
  /** When the batch was paused; null when it is not (issue 15). */
  paused_at: Date | null;
  /** Why it is paused (null when it is not): the operator, or a dependency (issue 24 §3). */
  pause_reason: PauseReason | null;
  /** The key of the breaker that paused it (domain/dependencies.ts), with `dependency-unavailable`. */
  paused_dependency: string | null;
  /** {start, end, days}: read in each contact's zone; null: any time (issue 15). */
  calling_window: CallingWindow | null;
  require_consent: boolean;
  /** Contacts never dialed: on the suppression list; without consent under requireConsent. */
  suppressed: number;
  skipped: number;
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  updated_at: Date;
}

/** A batch as `GET /api/v1/batch` lists it. */
export type BatchListRow = Pick<
  BatchRow,
  | 'id'
  | 'name'
  | 'status'
  | 'total'
  | 'processed'
  | 'succeeded'
  | 'failed'
  | 'created_at'
  | 'agent_id'
  | 'priority'
  | 'tags'
>;

/** A batch as it is accepted: ingesting, under its first ingestion lease. */
export type NewBatch = Pick<
  BatchRow,
  | 'id'
  | 'user_id'
  | 'agent_id'
  | 'name'
  | 'status'
  | 'priority'
  | 'max_calls_per_second'
  | 'max_attempts'
  | 'no_answer_delay_ms'
  | 'busy_delay_ms'
  | 'retry_on_voicemail'
  | 'timezone'
  | 'scheduled_start_at'
  | 'tags'
  | 'require_consent'
  | 'webhooks'
  | 'submitted'
  | 'total'
  | 'duplicates'
  | 'ingest_lease_until'
  | 'ingest_passes'
  | 'created_at'
  | 'updated_at'
> & {
  /** As it is stored (src/domain/calling-window.ts); null: SQL NULL, any time. */
  calling_window: ReturnType<typeof windowToRow>;
};

/** What a change of a batch's state reads of it, under its lock. */
export type LockedBatch = Pick<
  BatchRow,
  | 'id'
  | 'status'
  | 'total'
  | 'ingested'
  | 'user_id'
  | 'agent_id'
  | 'webhooks'
  | 'started_at'
  | 'scheduled_start_at'
  | 'pause_reason'
  | 'paused_dependency'
>;

/** What an ingestion pass reads of its batch. */
export type IngestingBatch = Pick<
  BatchRow,
  'id' | 'user_id' | 'status' | 'ingested' | 'total' | 'scheduled_start_at' | 'timezone' | 'require_consent'
>;

export interface BatchesRepo {
  insert(batch: NewBatch): Promise<void>;
  /** Locks the user's batch (in a transaction, batches first: LOCK_ORDER) and reads it. */
  lockForUser(userId: string, batchId: string): Promise<LockedBatch | undefined>;
  /** Locks a batch (any user's) as `lockForUser` reads it. */
  lock(batchId: string): Promise<LockedBatch | undefined>;
  /** The batches paused because the dependency `key` was unavailable. */
  pausedFor(key: string): Promise<string[]>;
  /** Locks the batch and reads its status. */
  lockStatus(batchId: string): Promise<BatchRow['status'] | undefined>;
  /**
   * Locks the oldest batch still ingesting whose lease ran out (any, with `ignoreLease`), skipping
   * those another transaction holds.
   */
  lockOrphanedIngestion(now: Date, ignoreLease: boolean): Promise<string | undefined>;
  /** Counts an ingestion pass and leases the batch to it until `leaseUntil`: the passes so far. */
  startIngestPass(batchId: string, leaseUntil: Date): Promise<number>;
  ingesting(batchId: string): Promise<IngestingBatch | undefined>;
  /** Contacts up to `ingested` are queued (never moving it back); the lease runs to `leaseUntil`. */
  noteIngested(batchId: string, ingested: number, leaseUntil: Date, now: Date): Promise<void>;

  /** The user's batch; another user's is as absent as a missing one. */
  getForUser(userId: string, batchId: string): Promise<BatchRow | undefined>;
  /** The user's batch's id and name. */
  nameForUser(userId: string, batchId: string): Promise<{ id: string; name: string } | undefined>;
  /** The batch's zone and calling window (the export's columns need both). */
  zoneAndWindow(
    batchId: string,
  ): Promise<{ timezone: string; calling_window: CallingWindow | null } | undefined>;
  /**
   * The user's batches, newest first: `limit` rows, filtered, and after `before` (a batch's id and
   * created_at) when given.
   */
  list(
    userId: string,
    filters: { status?: BatchStatus; tag?: string },
    before: { id: string; created_at: Date } | null,
    limit: number,
  ): Promise<BatchListRow[]>;
  /** The id and created_at of a user's batch (a page's cursor). */
  position(userId: string, batchId: string): Promise<{ id: string; created_at: Date } | undefined>;
  /**
   * Moves the batch to `change.status` if it is in one of `from` (the statuses the event may
   * leave), setting the columns given: whether it moved.
   */
  moveStatus(batchId: string, from: readonly BatchStatus[], change: StatusChange): Promise<boolean>;
  /** Fails the batch if it is in one of `from`: the columns its failure needs, or undefined. */
  fail(
    batchId: string,
    from: readonly BatchStatus[],
    failure: { code: string; error: string },
    now: Date,
  ): Promise<Pick<BatchRow, 'user_id' | 'agent_id' | 'webhooks' | 'total' | 'ingested'> | undefined>;
  /** Adds `n` to one of the batch's counters (and sets updated_at when `now` is given). */
  addTo(
    batchId: string,
    counter: 'cancelled_jobs' | 'suppressed' | 'skipped',
    n: number,
    now: Date | null,
  ): Promise<void>;
  /** The batch becomes `to` (from one of `from`) and its start time is kept or set to `now`. */
  /** Whether the batch moved (it was in one of `from`). */
  markClaimed(batchId: string, to: BatchStatus, from: readonly BatchStatus[], now: Date): Promise<boolean>;
  /** The batch's counters as finishIfDone reads them. */
  counted(batchId: string): Promise<CountedBatch | undefined>;
  /** Counts contacts that finished (`processed`, of which `succeeded`): the new counters. */
  addOutcomes(
    batchId: string,
    tally: { processed: number; succeeded: number },
    now: Date,
  ): Promise<CountedBatch | undefined>;
  /** Locks the batches of these calls (in id order) and reads what their calls' ends depend on. */
  lockOfCalls(callIds: string[]): Promise<EndingBatchRow[]>;
  /**
   * Up to `limit` batches in one of `statuses` whose start time has come, highest priority first,
   * then oldest.
   */
  startedIn(statuses: readonly BatchStatus[], now: Date, limit: number): Promise<ActiveBatchRow[]>;
  /** The status of each of these batches that exists. */
  statuses(batchIds: string[]): Promise<Array<{ id: string; status: BatchStatus }>>;
}

/** A batch the dispatcher serves, as its pass reads it. */
export type ActiveBatchRow = Pick<
  BatchRow,
  'id' | 'user_id' | 'agent_id' | 'status' | 'priority' | 'max_calls_per_second' | 'timezone'
> & {
  calling_window: unknown;
  /** Whether the batch's onCallEvent listens for its calls' progress (call.started, call.answered). */
  call_events: boolean;
};

/** A batch row as a group of call ends holds it locked. */
export type EndingBatchRow = Pick<
  BatchRow,
  | 'id'
  | 'status'
  | 'max_attempts'
  | 'no_answer_delay_ms'
  | 'busy_delay_ms'
  | 'retry_on_voicemail'
  | 'webhooks'
>;

/** The columns a change of a batch's status sets besides it. */
export interface StatusChange {
  status: BatchStatus;
  cancelled_jobs?: number;
  completed_at?: Date;
  paused_at?: Date | null;
  pause_reason?: PauseReason | null;
  paused_dependency?: string | null;
  ingest_lease_until?: null;
  updated_at: Date;
}

/** A batch's counters as finishIfDone reads them. */
export type CountedBatch = Pick<
  BatchRow,
  | 'id'
  | 'status'
  | 'total'
  | 'processed'
  | 'succeeded'
  | 'failed'
  | 'cancelled_jobs'
  | 'suppressed'
  | 'skipped'
  | 'user_id'
  | 'agent_id'
  | 'webhooks'
  | 'created_at'
  | 'started_at'
>;
