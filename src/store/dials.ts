import type { Repos } from './index.js';

/** A step of a call on its way: it went out (`started`) or was answered. */
export interface CallProgress {
  kind: 'started' | 'answered';
  callId: string;
  at: Date;
}

/**
 * Hears of each step inside the transaction that records it (the call events queue their
 * webhooks there: an event is written if and only if its step is), with that transaction's
 * repositories.
 */
export type CallProgressSink = (repos: Repos, changes: CallProgress[]) => Promise<void>;

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
}
