import type { EndedReason, ToolCallRecord, TurnMetrics } from '../domain/agent-call.js';
import type { ConsentRecord } from '../domain/batch.js';
import type { CallChannel, CallStatus, TranscriptEntry } from '../domain/call.js';

/** One of a batch's latest calls, as the batch status and the dashboard list them. */
export interface RecentCallRow {
  id: string;
  status: CallStatus;
  duration: number | null;
  created_at: Date;
  phone_number: string;
  contact_name: string;
}

/** One of a batch's latest calls as the dashboard lists them: with its summary and whether it has a transcript. */
export interface LatestCallRow extends RecentCallRow {
  summary: string | null;
  metric_json: Record<string, unknown> | null;
  has_transcript: boolean;
}

/** A call with its contact, agent and batch names, as the dashboard's call page shows it. */
export interface CallDetailRow {
  id: string;
  status: CallStatus;
  batch_id: string | null;
  phone_number: string;
  channel: CallChannel;
  attempt: number;
  duration: number | null;
  error: string | null;
  created_at: Date;
  answered_at: Date | null;
  ended_at: Date | null;
  transcription: TranscriptEntry[] | null;
  summary: string | null;
  metric_json: Record<string, unknown> | null;
  analysis_status: 'pending' | 'done' | 'failed' | null;
  sip_code: number | null;
  ended_reason: EndedReason | null;
  turns: TurnMetrics[] | null;
  tool_calls: ToolCallRecord[] | null;
  contact_name: string;
  consent: ConsentRecord | null;
  agent_name: string;
  batch_name: string | null;
}

/** A call whose progress event goes out, with where to. */
export interface ProgressTarget {
  id: string;
  user_id: string;
  agent_id: string;
  contact_id: string;
  batch_id: string | null;
  phone_number: string;
  created_at: Date;
  contact_name: string;
  url: string;
}

/** The calls table, as far as the services converted so far read it (issue 23 moves the rest). */
export interface CallsRepo {
  /** The call's user. */
  ownerOf(callId: string): Promise<string | undefined>;
  /** A batch's latest calls, newest first; all of them when `limit` is null. */
  recentOfBatch(batchId: string, limit: number | null): Promise<RecentCallRow[]>;
  /** How many of a batch's calls were created in (from, to]. */
  countCreatedBetween(batchId: string, from: Date, to: Date): Promise<number>;
  /**
   * A batch's calls in progress, the youngest one's start, and the mean length (dial to end) of
   * its latest `sample` ended calls.
   */
  callsUp(
    batchId: string,
    sample: number,
  ): Promise<{ live: number; youngest: Date | null; mean_ms: number | null } | undefined>;
  /** Calls created per second over the batch's last 10 minutes of calls (epoch second, count). */
  perSecond(batchId: string): Promise<Array<{ second: number; count: number }>>;
  /** A batch's calls counted by status. */
  countByStatus(batchId: string): Promise<Array<{ status: string; count: number }>>;
  /** The user's batch's latest 25 calls, with their summary, intent and whether they have a transcript. */
  latestOfBatchForUser(userId: string, batchId: string): Promise<LatestCallRow[]>;
  detailForUser(userId: string, callId: string): Promise<CallDetailRow | undefined>;
  /**
   * Of these calls, those whose `event` (call.started or call.answered) has somewhere to go and has
   * not been queued yet: the batch's onCallEvent, or a single call's statusCallBackUrl when its
   * statusCallBackEvents ask for it (`url`).
   */
  progressTargets(callIds: string[], event: string): Promise<ProgressTarget[]>;
}
