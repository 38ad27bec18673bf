import { AppError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import type { WebhookEvent, WebhookPayload } from '../domain/webhooks.js';
import type { Repos } from '../store/index.js';
import type { DeliveryRow, WebhookDeliveryStatus } from '../store/webhook-deliveries.js';
import { checkWebhookUrl } from '../webhooks/address-guard.js';
import type { Deps } from './deps.js';
import { openWebhookSecrets } from './users.js';

export interface QueuedWebhook {
  userId: string;
  url: string;
  payload: WebhookPayload;
  batchId?: string | null;
  callId?: string | null;
  now: Date;
}

/**
 * Writes one delivery to the outbox. Call it inside the transaction that makes the change the
 * event reports: both commit together or neither does.
 */
export async function queueWebhook(repos: Repos, webhook: QueuedWebhook): Promise<string> {
  const id = newId('dlv', webhook.now.getTime());
  await repos.webhookDeliveries.queue({
    id,
    userId: webhook.userId,
    event: webhook.payload.event,
    url: webhook.url,
    body: JSON.stringify(webhook.payload),
    batchId: webhook.batchId ?? null,
    callId: webhook.callId ?? null,
    now: webhook.now,
  });
  return id;
}

/**
 * Refuses, at request time, webhook URLs that can never be delivered to (a scheme other than http
 * or https, credentials, a loopback or private address literal, a name such as localhost), with
 * one field error per URL. Names are checked again, on the address connected to, at each attempt.
 */
export function assertWebhookUrls(urls: Record<string, string | undefined>, allowPrivate: boolean): void {
  const fieldErrors: Record<string, string[]> = {};
  for (const [field, url] of Object.entries(urls)) {
    if (url === undefined) continue;
    const checked = checkWebhookUrl(url, { allowPrivate });
    if (!checked.ok) fieldErrors[field] = [checked.reason];
  }
  const fields = Object.keys(fieldErrors);
  if (fields.length > 0) {
    const first = fields[0] as string;
    throw new AppError('INVALID_REQUEST', `${first}: ${fieldErrors[first]?.[0]}`, { fieldErrors });
  }
}

/** One row of the delivery log, as `GET /api/v1/webhooks/deliveries` shows it. */
export interface DeliveryView {
  id: string;
  event: WebhookEvent;
  url: string;
  status: WebhookDeliveryStatus;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
  batchId: string | null;
  callId: string | null;
  createdAt: string;
  updatedAt: string;
  deliveredAt: string | null;
  nextAttemptAt: string | null;
}

export interface DeliveryFilters {
  batchId?: string;
  callId?: string;
  status?: WebhookDeliveryStatus;
  cursor?: string;
  limit: number;
}

export class WebhookService {
  constructor(private readonly deps: Pick<Deps, 'store' | 'clock' | 'sealer'>) {}

  /** The user's deliveries, newest first, with optional filters and a cursor (a delivery id). */
  async list(
    userId: string,
    filters: DeliveryFilters,
  ): Promise<{ items: DeliveryView[]; nextCursor: string | null }> {
    let anchor: { id: string; created_at: Date } | null = null;
    if (filters.cursor) {
      anchor = (await this.deps.store.webhookDeliveries.position(userId, filters.cursor)) ?? null;
      if (!anchor) {
        throw new AppError('INVALID_REQUEST', 'cursor does not name one of your deliveries', {
          fieldErrors: { cursor: ['is not a delivery id from a previous page'] },
        });
      }
    }
    const rows = await this.deps.store.webhookDeliveries.list(
      userId,
      {
        ...(filters.batchId ? { batchId: filters.batchId } : {}),
        ...(filters.callId ? { callId: filters.callId } : {}),
        ...(filters.status ? { status: filters.status } : {}),
      },
      anchor,
      filters.limit + 1,
    );
    const page = rows.slice(0, filters.limit);
    const last = page.at(-1);
    return {
      items: page.map(toView),
      nextCursor: rows.length > filters.limit && last ? last.id : null,
    };
  }

  /**
   * Manual replay: the delivery is queued again now with a fresh retry schedule and the same
   * `webhook-id`, so a receiver that already has it can recognise the repeat.
   */
  async retry(userId: string, deliveryId: string): Promise<DeliveryView> {
    const now = this.deps.clock.now();
    const row = await this.deps.store.webhookDeliveries.requeue(userId, deliveryId, now);
    if (row) return toView(row);
    if (!(await this.deps.store.webhookDeliveries.exists(userId, deliveryId)))
      throw new AppError('NOT_FOUND');
    throw new AppError('CONFLICT', `Delivery ${deliveryId} is already queued`);
  }

  /**
   * The secrets that sign a user's deliveries now: the current one, and the previous one while a
   * rotation's overlap lasts.
   */
  async signingSecrets(userIds: string[]): Promise<Map<string, string[]>> {
    const result = new Map<string, string[]>();
    if (userIds.length === 0) return result;
    const now = this.deps.clock.now();
    const rows = await this.deps.store.users.webhookSecretsOf(userIds);
    for (const row of rows) {
      const { secret, previousSecret } = openWebhookSecrets(row, this.deps.sealer, now);
      result.set(row.id, previousSecret ? [secret, previousSecret] : [secret]);
    }
    return result;
  }

  /**
   * The secrets that sign an agent's HTTP tool requests on a call: those of the call's user, the
   * same as its webhooks (so a receiver checks both with one secret). Empty for an unknown call.
   */
  async signingSecretsForCall(callId: string): Promise<string[]> {
    const userId = await this.deps.store.calls.ownerOf(callId);
    if (userId === undefined) return [];
    return (await this.signingSecrets([userId])).get(userId) ?? [];
  }
}

function toView(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    event: row.event as WebhookEvent,
    url: row.url,
    status: row.status,
    attempts: row.attempts,
    lastStatus: row.last_status,
    lastError: row.last_error,
    batchId: row.batch_id,
    callId: row.call_id,
    createdAt: row.created_at.toISOString(),
    updatedAt: row.updated_at.toISOString(),
    deliveredAt: row.delivered_at?.toISOString() ?? null,
    nextAttemptAt: row.status === 'pending' ? row.next_attempt_at.toISOString() : null,
  };
}
