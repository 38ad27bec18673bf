import type { CallEndedEvent, DialRecord } from '../ports.js';

/**
 * The dial records (the shared `dials` table): what a call is opened and returned with, and its
 * steps on the way to the network and back. Every step names the process (`owner`) that writes it.
 */
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
   * Writes `owner`'s waiting record of a call about to be placed (nothing when one exists): true
   * when the record is `owner`'s and still waiting.
   */
  hold(owner: string, callId: string, provider: string): Promise<boolean>;
  /**
   * In one statement: each of these calls whose record `owner` holds waiting (or that has none
   * yet) becomes sent at its `at`, and its ONGOING call's recorded start becomes that moment.
   * Returns the calls that became sent, with their sent time.
   */
  send(owner: string, calls: SendingCall[]): Promise<Array<{ callId: string; sentAt: Date }>>;
  /** `owner`'s sent record of the call is waiting again (the carrier refused it for capacity). */
  refused(owner: string, callId: string): Promise<void>;
  /** Keeps the call's first answer on `owner`'s record: true when this was it. */
  answered(owner: string, callId: string, at: Date): Promise<boolean>;
  /** Keeps the provider's end on `owner`'s record, if it is still waiting or sent. */
  ended(owner: string, event: CallEndedEvent): Promise<void>;
  find(callId: string): Promise<DialRecord | null>;
  /** Moves the record of a call from the gone owner `from` to `owner`: false when another took it first. */
  adopt(owner: string, callId: string, from: string): Promise<boolean>;
  /** Gives `owner`'s waiting record of a call to the workers (`HAND_OFF_OWNER`): false when it is not. */
  handOff(owner: string, callId: string): Promise<boolean>;
  /** Deletes settled records (ended or returned) created more than `keepDays` days ago. */
  pruneSettled(keepDays: number): Promise<void>;
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

/** A call to mark sent (`DialsRepo.send`). */
export interface SendingCall {
  callId: string;
  provider: string;
  at: Date;
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
