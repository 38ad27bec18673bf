import type { WebhookDeliveryStatus } from '../domain/webhooks.js';

export type { WebhookDeliveryStatus };

/** A delivery's columns that the delivery log shows (not its body). */
export interface DeliveryRow {
  id: string;
  event: string;
  url: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  last_status: number | null;
  last_error: string | null;
  batch_id: string | null;
  call_id: string | null;
  created_at: Date;
  updated_at: Date;
  delivered_at: Date | null;
  next_attempt_at: Date;
}

/** A delivery as it is queued: pending, due at `now`. */
export interface NewDelivery {
  id: string;
  userId: string;
  event: string;
  url: string;
  body: string;
  batchId: string | null;
  callId: string | null;
  now: Date;
}

/** A delivery a sender has claimed for an attempt (`attempts` counts this one). */
export interface ClaimedDelivery {
  id: string;
  user_id: string;
  url: string;
  body: string;
  attempts: number;
}

/** What an attempt leaves on its row. */
export interface DeliveryOutcome {
  id: string;
  attempts: number;
  status: WebhookDeliveryStatus;
  nextAttemptAt: Date;
  lastStatus: number | null;
  lastError: string | null;
  deliveredAt: Date | null;
}

export interface WebhookDeliveriesRepo {
  /**
   * A user's deliveries, newest first: `limit` rows, filtered, and after `before` (a delivery's
   * id and created_at) when given.
   */
  list(
    userId: string,
    filters: { batchId?: string; callId?: string; status?: WebhookDeliveryStatus },
    before: { id: string; created_at: Date } | null,
    limit: number,
  ): Promise<DeliveryRow[]>;
  /** The id and created_at of a user's delivery (a page's cursor). */
  position(userId: string, deliveryId: string): Promise<{ id: string; created_at: Date } | undefined>;
  /** Queues a delivery that is not pending again, from attempt 0 at `now`. */
  requeue(userId: string, deliveryId: string, now: Date): Promise<DeliveryRow | undefined>;
  exists(userId: string, deliveryId: string): Promise<boolean>;
  /**
   * Claims up to `limit` due deliveries (SKIP LOCKED: workers share the outbox): counts the
   * attempt and moves the due time to `leaseUntil`.
   */
  claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedDelivery[]>;
  /** Writes attempts' results in one statement; a row only changes if it is still at its attempt. */
  recordOutcomes(outcomes: DeliveryOutcome[], now: Date): Promise<void>;
  /**
   * The distinct URLs deliveries were queued for since `since`, every user's, the most recently
   * used first, at most `limit` (what `outdial doctor` reaches out to).
   */
  recentUrls(since: Date, limit: number): Promise<string[]>;
  /** Writes one pending delivery, due at `now`. */
  queue(delivery: NewDelivery): Promise<void>;
}
