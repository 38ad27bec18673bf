import { sql } from 'kysely';
import type {
  ClaimedDelivery,
  DeliveryOutcome,
  DeliveryRow,
  NewDelivery,
  WebhookDeliveriesRepo,
  WebhookDeliveryStatus,
} from '../../../store/webhook-deliveries.js';
import type { Db } from '../database.js';
import { olderThan } from './keyset.js';

const VIEW_COLUMNS = [
  'id',
  'event',
  'url',
  'status',
  'attempts',
  'last_status',
  'last_error',
  'batch_id',
  'call_id',
  'created_at',
  'updated_at',
  'delivered_at',
  'next_attempt_at',
] as const;

export class PgWebhookDeliveriesRepo implements WebhookDeliveriesRepo {
  constructor(private readonly db: Db) {}

  list(
    userId: string,
    filters: { batchId?: string; callId?: string; status?: WebhookDeliveryStatus },
    before: { id: string; created_at: Date } | null,
    limit: number,
  ): Promise<DeliveryRow[]> {
    let query = this.db
      .selectFrom('webhook_deliveries')
      .select(VIEW_COLUMNS)
      .where('user_id', '=', userId)
      .orderBy('created_at', 'desc')
      .orderBy('id', 'desc')
      .limit(limit);
    if (filters.batchId) query = query.where('batch_id', '=', filters.batchId);
    if (filters.callId) query = query.where('call_id', '=', filters.callId);
    if (filters.status) query = query.where('status', '=', filters.status);
    if (before) query = query.where(olderThan(before));
    return query.execute();
  }

  async recentUrls(since: Date, limit: number): Promise<string[]> {
    const rows = await this.db
      .selectFrom('webhook_deliveries')
      .select(['url', (eb) => eb.fn.max('created_at').as('last_queued')])
      .where('created_at', '>=', since)
      .groupBy('url')
      .orderBy('last_queued', 'desc')
      .limit(limit)
      .execute();
    return rows.map((row) => row.url);
  }

  position(userId: string, deliveryId: string): Promise<{ id: string; created_at: Date } | undefined> {
    return this.db
      .selectFrom('webhook_deliveries')
      .select(['id', 'created_at'])
      .where('id', '=', deliveryId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
  }

  requeue(userId: string, deliveryId: string, now: Date): Promise<DeliveryRow | undefined> {
    return this.db
      .updateTable('webhook_deliveries')
      .set({ status: 'pending', attempts: 0, next_attempt_at: now, updated_at: now })
      .where('id', '=', deliveryId)
      .where('user_id', '=', userId)
      .where('status', '<>', 'pending')
      .returning(VIEW_COLUMNS)
      .executeTakeFirst();
  }

  async exists(userId: string, deliveryId: string): Promise<boolean> {
    const row = await this.db
      .selectFrom('webhook_deliveries')
      .select('status')
      .where('id', '=', deliveryId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    return row !== undefined;
  }

  async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedDelivery[]> {
    const result = await sql<ClaimedDelivery>`
      update webhook_deliveries d
      set attempts = d.attempts + 1, next_attempt_at = ${leaseUntil}, updated_at = ${now}
      from (
        select id from webhook_deliveries
        where status = 'pending' and next_attempt_at <= ${now}
        order by next_attempt_at
        limit ${limit}
        for update skip locked
      ) due
      where d.id = due.id
      returning d.id, d.user_id, d.url, d.body, d.attempts`.execute(this.db);
    return result.rows;
  }

  async recordOutcomes(outcomes: DeliveryOutcome[], now: Date): Promise<void> {
    const iso = (date: Date | null) => date?.toISOString() ?? null;
    await sql`
      update webhook_deliveries d set
        status = x.status,
        next_attempt_at = x.next_at::timestamptz,
        last_status = x.last_status::int,
        last_error = x.last_error,
        delivered_at = x.delivered_at::timestamptz,
        updated_at = ${now}
      from unnest(
        ${outcomes.map((o) => o.id)}::text[],
        ${outcomes.map((o) => String(o.attempts))}::text[],
        ${outcomes.map((o) => o.status)}::text[],
        ${outcomes.map((o) => o.nextAttemptAt.toISOString())}::text[],
        ${outcomes.map((o) => (o.lastStatus === null ? null : String(o.lastStatus)))}::text[],
        ${outcomes.map((o) => o.lastError)}::text[],
        ${outcomes.map((o) => iso(o.deliveredAt))}::text[]
      ) as x(id, attempts, status, next_at, last_status, last_error, delivered_at)
      where d.id = x.id and d.attempts = x.attempts::int and d.status = 'pending'`.execute(this.db);
  }

  async queue(delivery: NewDelivery): Promise<void> {
    await this.db
      .insertInto('webhook_deliveries')
      .values({
        id: delivery.id,
        user_id: delivery.userId,
        event: delivery.event,
        url: delivery.url,
        body: delivery.body,
        batch_id: delivery.batchId,
        call_id: delivery.callId,
        status: 'pending',
        next_attempt_at: delivery.now,
        created_at: delivery.now,
        updated_at: delivery.now,
      })
      .execute();
  }
}
