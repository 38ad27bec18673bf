import type { BatchStatus, CallingWindow } from '../domain/batch.js';

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

export interface BatchesRepo {
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
}
