import type { TurnMetrics } from '../domain/agent-call.js';
import type { ConsentRecord } from '../domain/batch.js';

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
  turns: TurnMetrics[] | null;
  timezone: string | null;
  window_wait: boolean;
  next_attempt_at: Date | null;
  consent: ConsentRecord | null;
}

/** The batches' contact queue, as far as the code converted so far reads it (issue 23 moves the rest). */
export interface BatchContactsRepo {
  /** Queued contacts due now, of batches in one of these statuses (the queue-depth gauge). */
  dueCount(batchStatuses: readonly string[]): Promise<number>;
  /** A batch's queued contacts waiting for their calling window. */
  waitingForWindow(batchId: string): Promise<number>;
  /** Up to `limit` of a batch's contacts after `afterSeq`, in batch order. */
  exportPage(batchId: string, afterSeq: number, limit: number): Promise<ExportRow[]>;
}
