import type { EndedReason, ToolCallRecord, TurnMetrics } from '../domain/agent-call.js';
import type { CallChannel, CallStatus, TranscriptEntry } from '../domain/call.js';
import type { FailureSource } from '../domain/failure.js';
import type { EndedCall } from './calls.js';

/** One call of a user's calls list. */
export interface ListedCallRow {
  id: string;
  status: CallStatus;
  phone_number: string;
  channel: CallChannel;
  contact_id: string;
  contact_name: string;
  agent_id: string;
  batch_id: string | null;
  ended_reason: EndedReason | null;
  failure_source: FailureSource | null;
  duration: number | null;
  created_at: Date;
  ended_at: Date | null;
}

/** Which of a user's calls the list shows (a page of `limit + 1`, to tell whether more follow). */
export interface CallListQuery {
  status?: CallStatus;
  batchId?: string;
  singleOnly?: boolean;
  /** E.164, already normalised. */
  phoneNumber?: string;
  from?: Date;
  to?: Date;
  /** The callId the previous page ended with: this page starts strictly after it. */
  cursor?: string;
  limit: number;
}

/** The agent's side of a call, as its views show it. */
interface AgentSideColumns {
  ended_reason: EndedReason | null;
  failure_source: FailureSource | null;
  turns: TurnMetrics[] | null;
  tool_calls: ToolCallRecord[] | null;
}

/** A call as the persistent call status shows it. */
export interface PersistentCallRow extends AgentSideColumns {
  id: string;
  status: CallStatus;
  direction: string;
  duration: number | null;
  created_at: Date;
  ended_at: Date | null;
  phone_number: string;
  transcription: TranscriptEntry[] | null;
  error: string | null;
  batch_id: string | null;
  contact_id: string;
  agent_id: string;
  channel: CallChannel;
  sip_code: number | null;
  minutes_charged: number;
  contact_name: string;
  agent_name: string;
}

/** A call as its `call.completed` payload shows it. */
export interface CompletedCallRow extends AgentSideColumns {
  id: string;
  contact_id: string;
  agent_id: string;
  batch_id: string | null;
  status: CallStatus;
  created_at: Date;
  ended_at: Date | null;
  duration: number | null;
  phone_number: string;
  transcription: TranscriptEntry[] | null;
  summary: string | null;
  metric_json: Record<string, unknown> | null;
  contact_name: string;
  metric_config: Record<string, unknown>;
}

/** The reads of a user's calls: the list, the live and persistent views, the completed payload. */
export interface CallViewsRepo {
  listForUser(userId: string, query: CallListQuery): Promise<ListedCallRow[]>;
  /** Whether `callId` is one of the user's calls. */
  isUsers(userId: string, callId: string): Promise<boolean>;
  /** The user's call, as its live entry is built from. */
  liveRowForUser(userId: string, callId: string): Promise<EndedCall | undefined>;
  countOfBatchForUser(userId: string, batchId: string): Promise<number>;
  liveRowsOfBatchForUser(userId: string, batchId: string): Promise<EndedCall[]>;
  persistentForUser(userId: string, callId: string): Promise<PersistentCallRow | undefined>;
  /** The call as its `call.completed` shows it; throws when there is none. */
  completed(callId: string): Promise<CompletedCallRow>;
}
