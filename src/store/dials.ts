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
