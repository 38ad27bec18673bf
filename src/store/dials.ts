import type { DialRecord } from '../ports.js';

/** The dial records a call is opened and returned with (the shared `dials` table). */
export interface DialsRepo {
  /** Waiting records, owned by `owner`, for calls not yet sent; a call with one already keeps it. */
  open(owner: string, calls: Array<{ callId: string; provider: string }>, at: Date): Promise<void>;
  /** A record sent and answered at `at` (a web call: its browser is on the line already). */
  openAnswered(owner: string, call: { callId: string; provider: string }, at: Date): Promise<void>;
  /**
   * Marks the call's record returned if it is still waiting (and `owner`'s, when given): whether
   * it was.
   */
  returnDial(callId: string, owner: string | null): Promise<boolean>;
  /**
   * ONGOING calls the reconciler must settle, gone owners' first: those with no record created
   * before `unrecordedBefore`; another owner's whose lease ran out (any other owner's, with
   * `all`); sent or ended ones not heard of since `lostBefore`; this owner's still waiting since
   * `stuckBefore`.
   */
  unsettled(query: UnsettledQuery): Promise<UnsettledCall[]>;
  /**
   * ONGOING single calls an API process without a SIP stack handed off (their waiting records
   * owned by `HAND_OFF_OWNER`), oldest first: a worker takes each and places it.
   */
  handedOff(limit: number): Promise<UnsettledCall[]>;
}

/** Which ONGOING calls `DialsRepo.unsettled` returns (see there). */
export interface UnsettledQuery {
  owner: string;
  all: boolean;
  unrecordedBefore: Date;
  lostBefore: Date;
  stuckBefore: Date;
  limit: number;
}

/** An ONGOING call the reconciler looks at, with its agent, its contact and its dial record. */
export interface UnsettledCall {
  id: string;
  phone_number: string;
  attempt: number;
  created_at: Date;
  user_id: string;
  batch_id: string | null;
  batch_seq: number | null;
  provider: string;
  agent_id: string;
  agent_name: string;
  basic_details: Record<string, unknown>;
  sip_trunk_id: string | null;
  contact_id: string;
  contact_name: string;
  contact_company: string | null;
  contact_metadata: Record<string, unknown> | null;
  variables: Record<string, string> | null;
  /** Its dial record; null for a call recorded before dial records existed. */
  record: DialRecord | null;
}
