import type { EndedReason, ToolCallRecord, TurnMetrics } from '../domain/agent-call.js';
import type { ConsentRecord } from '../domain/batch.js';
import type { CallChannel, CallStatus, TranscriptEntry } from '../domain/call.js';
import type { FailureSource } from '../domain/failure.js';

/** A call as its recording is played back: the provider that held it makes the audio. */
export interface RecordedCallRow {
  id: string;
  status: CallStatus;
  duration: number | null;
  transcription: TranscriptEntry[] | null;
  user_id: string;
  provider: string;
}

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
  failure_source: FailureSource | null;
  turns: TurnMetrics[] | null;
  tool_calls: ToolCallRecord[] | null;
  contact_name: string;
  consent: ConsentRecord | null;
  agent_name: string;
  batch_name: string | null;
}

/** A call row as a single or web call is opened: ONGOING. */
export interface NewCallRow {
  id: string;
  user_id: string;
  agent_id: string;
  contact_id: string;
  phone_number: string;
  attempt: number;
  provider: string;
  channel: CallChannel;
  status_callback_url: string | null;
  status_callback_events: string[] | null;
  variables: Record<string, string> | null;
  created_at: Date;
  answered_at: Date | null;
}

/** A batch contact's claimed call as it is opened, ONGOING from its slot. */
export interface NewBatchCallRow {
  callId: string;
  contactId: string;
  phoneNumber: string;
  /** The batch contact's attempt: its earlier attempts in the batch + 1. */
  attempt: number;
  seq: number;
  /** Its slot: the call row's start until it is sent. */
  startAt: Date;
}

/** A call's end as it is written (the JSON columns as text, the numbers as given). */
export interface CallEndWrite {
  id: string;
  status: string;
  duration: number;
  answeredAt: Date | null;
  endedAt: Date;
  error: string | null;
  transcription: string;
  charge: number;
  sipCode: number | null;
  endedReason: string | null;
  failureSource: string | null;
  turns: string | null;
  toolCalls: string | null;
}

/** A call as its end left it. */
export interface EndedCall {
  id: string;
  user_id: string;
  agent_id: string;
  contact_id: string;
  batch_id: string | null;
  status: CallStatus;
  phone_number: string;
  error: string | null;
  duration: number | null;
  created_at: Date;
}

/** A call as the end's update returns it. */
export interface EndedCallRow extends EndedCall {
  status_callback_url: string | null;
  status_callback_events: string[] | null;
  batch_seq: number | null;
  attempt: number;
  minutes_charged: number;
  /** Whose failure the end was, as `CallLifecycle` decided and wrote it (domain/failure.ts). */
  failure_source: FailureSource | null;
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
  /** What playing a call's recording needs; only `userId`'s call when given. */
  forRecording(callId: string, userId: string | null): Promise<RecordedCallRow | undefined>;
  /** A batch's latest calls, newest first; all of them when `limit` is null. */
  recentOfBatch(batchId: string, limit: number | null): Promise<RecentCallRow[]>;
  /** How many of a batch's calls started in (from, to], and how many of them in (recentFrom, to]. */
  startedSince(
    batchId: string,
    from: Date,
    recentFrom: Date,
    to: Date,
  ): Promise<{ all: number; recent: number }>;
  /**
   * A batch's calls in progress, the youngest one's start, the mean length (dial to end) of its
   * latest `sample` ended calls, and how many in progress are still unsent with their slot before
   * `slotBefore` (held by their SIP trunk's caps).
   */
  callsUp(
    batchId: string,
    sample: number,
    slotBefore: Date,
  ): Promise<{ live: number; youngest: Date | null; mean_ms: number | null; held: number } | undefined>;
  /** Calls created per second over the batch's last 10 minutes of calls (epoch second, count). */
  perSecond(batchId: string): Promise<Array<{ second: number; count: number }>>;
  /**
   * Minutes charged to the user per UTC day, for the calls started since `since`: days with none
   * are absent (`day` is `YYYY-MM-DD`).
   */
  usageByDay(userId: string, since: Date): Promise<Array<{ day: string; minutes: number }>>;
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
  /** The contact's call in progress, if any. */
  ongoingOfContact(contactId: string): Promise<string | undefined>;
  /** How many calls the contact has had outside any batch (single and web calls). */
  singleCallsOfContact(contactId: string): Promise<number>;
  insert(call: NewCallRow): Promise<void>;
  /**
   * Opens a batch's claimed calls; a contact with a call up already gets none (the unique index
   * on a contact's ONGOING call): the ids of the calls opened.
   */
  insertBatchCalls(
    batch: { id: string; userId: string; agentId: string },
    calls: NewBatchCallRow[],
    provider: string,
    now: Date,
  ): Promise<string[]>;
  /** Applies ends to calls still ONGOING, in one statement: the calls ended. */
  end(ends: CallEndWrite[], now: Date): Promise<EndedCallRow[]>;
  /** Removes the call if it is still ONGOING: whether it did. */
  deleteOngoing(callId: string): Promise<boolean>;
}
