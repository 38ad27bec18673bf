import type { AgentsRepo } from './agents.js';
import type { AnalysisRepo } from './analysis.js';
import type { BatchContactsRepo } from './batch-contacts.js';
import type { BatchPayloadsRepo } from './batch-payloads.js';
import type { BatchesRepo } from './batches.js';
import type { BreakersRepo } from './breakers.js';
import type { CallViewsRepo } from './call-views.js';
import type { CallsRepo } from './calls.js';
import type { ContactsRepo } from './contacts.js';
import type { DialOwnersRepo } from './dial-owners.js';
import type { DialsRepo } from './dials.js';
import type { IdempotencyKeysRepo } from './idempotency-keys.js';
import type { KeysRepo } from './keys.js';
import type { LocksRepo } from './locks.js';
import type { SealedColumnsRepo } from './sealed-columns.js';
import type { SessionsRepo } from './sessions.js';
import type { SipTrunksRepo } from './sip-trunks.js';
import type { SuppressionsRepo } from './suppressions.js';
import type { UsersRepo } from './users.js';
import type { WebhookDeliveriesRepo } from './webhook-deliveries.js';

/**
 * The Store port: every read and write of the database goes through one of these repositories.
 * The PostgreSQL/PGlite implementation is `pgStore` in the postgres adapter; its queries live in
 * its `repos/` folder, one class per repository.
 */
export interface Repos {
  users: UsersRepo;
  keys: KeysRepo;
  sessions: SessionsRepo;
  agents: AgentsRepo;
  sipTrunks: SipTrunksRepo;
  sealedColumns: SealedColumnsRepo;
  webhookDeliveries: WebhookDeliveriesRepo;
  batches: BatchesRepo;
  batchPayloads: BatchPayloadsRepo;
  contacts: ContactsRepo;
  calls: CallsRepo;
  analysis: AnalysisRepo;
  callViews: CallViewsRepo;
  batchContacts: BatchContactsRepo;
  idempotencyKeys: IdempotencyKeysRepo;
  suppressions: SuppressionsRepo;
  dials: DialsRepo;
  dialOwners: DialOwnersRepo;
  locks: LocksRepo;
  breakers: BreakersRepo;
  /**
   * Runs `run` once the transaction these repositories belong to has committed, before `tx`
   * resolves, and never if it rolls back; outside a transaction, at once. For the reactions that
   * must see the change stored (`EventBus` in services/events.ts); `run` must not throw.
   */
  afterCommit(run: () => Promise<void>): void;
}

export interface Store extends Repos {
  /**
   * Runs `fn` in one transaction: every repository it is given reads and writes inside it, and
   * the whole is rolled back if `fn` throws. Code called from `fn` takes the `repos`, not the Store.
   */
  tx<T>(fn: (repos: Repos) => Promise<T>): Promise<T>;
  /**
   * Runs `fn` with a Store over one connection that holds the advisory lock `name` (per schema)
   * throughout, so that processes sharing the database run it one at a time. The embedded
   * database has one process and one connection: there the connection alone is enough.
   */
  exclusive<T>(name: string, fn: (store: Store) => Promise<T>): Promise<T>;
}

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
