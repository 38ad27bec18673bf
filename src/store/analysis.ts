import type { CallStatus, TranscriptEntry } from '../domain/call.js';
import type { CompletedCallRow } from './call-views.js';

/** A call claimed for its automatic analysis, with what its webhook needs. */
export interface ClaimedAnalysisRow {
  id: string;
  user_id: string;
  batch_id: string | null;
  phone_number: string;
  status: string;
  transcription: TranscriptEntry[] | null;
  summary: string | null;
  analysis_attempts: number;
  status_callback_url: string | null;
  status_callback_events: string[] | null;
  metric_config: Record<string, unknown>;
  webhooks: Record<string, string> | null;
}

/** What an analysis stores on its call. */
export interface StoredAnalysis {
  summary: string;
  metricJson: Record<string, unknown>;
  analyzer: string;
}

/** A call as a summary on request is made from. */
export interface SummarySourceRow {
  id: string;
  status: CallStatus;
  summary: string | null;
  metric_json: Record<string, unknown> | null;
  transcription: TranscriptEntry[] | null;
  phone_number: string;
  metric_config: Record<string, unknown>;
}

/** A call's metrics, as `GET /api/v1/call/get-metric` shows them: the columns of its `call.completed`. */
export type CallMetricsRow = CompletedCallRow;

/** The analysis columns of calls (`analysis_status`, `analysis_due_at`, ...), the analysis service's alone. */
export interface AnalysisRepo {
  /** The calls just ended that have words to analyse: their analysis is pending, due at `now`. */
  markDue(callIds: string[], now: Date): Promise<void>;
  /** Up to `limit` pending analyses due at `now`, leased until `leaseUntil` (skipping locked ones). */
  claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedAnalysisRow[]>;
  /** A failed attempt: the pending analysis falls due again at `dueAt`. */
  retryAt(callId: string, dueAt: Date): Promise<void>;
  /**
   * Ends a pending analysis: done with `analysis` (kept only where no summary was stored
   * meanwhile), done when `stored` (a summary was already there), failed otherwise. Whether the
   * row changed.
   */
  finishPending(
    callId: string,
    outcome: { analysis: StoredAnalysis | null; stored: boolean },
    now: Date,
  ): Promise<boolean>;
  /** Marks a pending analysis done, keeping what is stored: whether it was pending. */
  markDone(callId: string, now: Date): Promise<boolean>;
  summarySource(userId: string, callId: string): Promise<SummarySourceRow | undefined>;
  /**
   * Stores a summary on request where none is stored (with `transcription` where the call has
   * none); what was stored, or undefined when another came first.
   */
  saveSummary(
    callId: string,
    analysis: StoredAnalysis,
    transcription: TranscriptEntry[] | null,
    now: Date,
  ): Promise<{ summary: string | null; metric_json: Record<string, unknown> | null } | undefined>;
  summaryOf(callId: string): Promise<{ summary: string | null; metric_json: Record<string, unknown> | null }>;
  metricsOf(
    userId: string,
    query: { callId: string; agentId: string; contactId: string },
  ): Promise<CallMetricsRow | undefined>;
}
