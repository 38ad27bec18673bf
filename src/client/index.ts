import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { CallStatus, TranscriptEntry } from '../domain/call.js';
import type { BatchThrottle, ThrottleReason } from '../domain/throttle.js';
import type {
  BatchCancelledPayload,
  BatchCompletedPayload,
  BatchFailedPayload,
  BatchStatusPayload,
  CallCompletedPayload,
  CallEvent,
  CallProgressPayload,
  WebhookEvent,
  WebhookPayload,
} from '../domain/webhooks.js';
import type { BatchBody } from '../http/routes/v1/batch.create.js';
import type { PreflightReply } from '../http/routes/v1/batch.preflight.js';
import type { DialBody } from '../http/routes/v1/call.dial.js';
import type { LiveCallStatus } from '../ports.js';
import type { CallMetrics, SummaryReply } from '../services/analysis.js';
import type { BatchListItem, BatchStatistics } from '../services/batch-reads.js';
import type { DialResult } from '../services/calls/intake.js';
import type { CallListItem, PersistentCallStatus } from '../services/calls/reads.js';
import type { Suppression } from '../services/suppressions.js';
import type { AccountView } from '../services/users.js';
import type { DeliveryView } from '../services/webhooks.js';

/**
 * A typed client of the outdial API. Its request and reply types are the ones the server's route
 * schemas and services are written in (the same source the OpenAPI document is generated from),
 * so a change to the API that breaks a client breaks its compilation first.
 */

/** The answer of pauseBatch and resumeBatch. */
export interface BatchStateChange {
  success: boolean;
  batchId: string;
  status: 'paused' | 'scheduled' | 'pending' | 'processing';
  message: string;
}

export type DialRequest = Omit<Static<typeof DialBody>, 'userId'>;
export type BatchRequest = Omit<Static<typeof BatchBody>, 'userId'>;
export type {
  AccountView,
  BatchCancelledPayload,
  BatchCompletedPayload,
  BatchFailedPayload,
  BatchListItem,
  BatchStatistics,
  BatchStatusPayload,
  BatchThrottle,
  CallCompletedPayload,
  CallEvent,
  CallListItem,
  CallMetrics,
  CallProgressPayload,
  DeliveryView,
  DialResult,
  LiveCallStatus,
  PersistentCallStatus,
  PreflightReply,
  SummaryReply,
  Suppression,
  ThrottleReason,
  WebhookEvent,
  WebhookPayload,
};

export interface BatchAccepted {
  success: boolean;
  batchId: string;
  status: string;
  message: string;
  links: { status: string; dashboard: string };
}

/** An answer other than 2xx, with the spec's error body. */
export class OutdialError extends Error {
  override name = 'OutdialError';
  constructor(
    readonly status: number,
    readonly body: { error?: string; code?: string; message?: string; details?: Record<string, unknown> },
  ) {
    super(`${status} ${body.error ?? 'Error'}${body.message ? `: ${body.message}` : ''}`);
  }
}

export interface ClientOptions {
  /** Where outdial answers, e.g. https://outdial.example.com */
  baseUrl: string;
  apiKey: string;
  /** A fetch of your own (tests, proxies); the global one by default. */
  fetch?: typeof fetch;
}

/** Per request options of the creating calls. */
export interface SendOptions {
  /** Sent as the Idempotency-Key header: 1 to 255 printable ASCII characters, per user, kept 24 h. */
  idempotencyKey?: string;
}

export class OutdialClient {
  private readonly base: string;
  private readonly userId: string;

  constructor(private readonly options: ClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.userId = userOfApiKey(options.apiKey);
  }

  /**
   * Starts a call. With `idempotencyKey`, a retry of the same request (same key, same body) within
   * 24 h answers the first call again instead of dialing twice.
   */
  dial(request: DialRequest, options: SendOptions = {}): Promise<DialResult> {
    return this.send('POST', '/api/v1/call/dial', { ...request, userId: this.userId }, options);
  }
  liveCall(callId: string): Promise<LiveCallStatus> {
    return this.send('GET', `/api/v1/status/call?${q({ callId })}`);
  }
  async call(callId: string): Promise<PersistentCallStatus> {
    return (
      await this.send<{ data: PersistentCallStatus }>('GET', `/api/v1/call/check-status?${q({ callId })}`)
    ).data;
  }
  /**
   * One page of your calls (single and campaign ones), newest first. `from` and `to` are ISO 8601
   * instants on the creation time (`from` inclusive, `to` exclusive). Pass `nextCursor` back as
   * `cursor` for the next page; it is null on the last one.
   */
  async listCalls(
    filters: {
      status?: CallStatus;
      batchId?: string;
      phoneNumber?: string;
      from?: string;
      to?: string;
      limit?: number;
      cursor?: string;
    } = {},
  ): Promise<{ items: CallListItem[]; nextCursor: string | null }> {
    const response = await this.raw('GET', `/api/v1/calls?${q(filters)}`);
    return {
      items: (await response.json()) as CallListItem[],
      nextCursor: response.headers.get('x-next-cursor'),
    };
  }
  callMetrics(query: { callId: string; agentId: string; contactId: string }): Promise<CallMetrics> {
    return this.send('GET', `/api/v1/call/get-metric?${q({ ...query, userId: this.userId })}`);
  }
  createSummary(callId: string, transcription: TranscriptEntry[]): Promise<SummaryReply> {
    return this.send('POST', '/api/v1/call/create-summary', { callId, transcription });
  }
  /** Submits a batch; `idempotencyKey` makes a retry answer the first batch instead of creating another. */
  createBatch(request: BatchRequest, options: SendOptions = {}): Promise<BatchAccepted> {
    return this.send('POST', '/api/v1/batch', { ...request, userId: this.userId }, options);
  }
  /**
   * What createBatch would do with this request, without creating anything: invalid contacts
   * (listed, not refused), duplicates, suppressed, outside their window now, without consent,
   * the minutes, and `wouldBeAccepted` with the `refusal` createBatch would get.
   */
  preflightBatch(request: BatchRequest): Promise<PreflightReply> {
    return this.send('POST', '/api/v1/batch/preflight', { ...request, userId: this.userId });
  }
  /** The key's user: minutes available and reserved, the concurrent-call limit and the calls up now. */
  account(): Promise<AccountView> {
    return this.send('GET', '/api/v1/account');
  }
  batch(batchId: string, limit?: number | 'all'): Promise<BatchStatistics> {
    return this.send(
      'GET',
      `/api/v1/batch/check-status?${q({ batchId, ...(limit === undefined ? {} : { limit: String(limit) }) })}`,
    );
  }
  listBatches(
    filters: { status?: string; tag?: string; limit?: number; cursor?: string } = {},
  ): Promise<BatchListItem[]> {
    return this.send('GET', `/api/v1/batch/list?${q(filters)}`);
  }
  cancelBatch(batchId: string): Promise<{
    success: boolean;
    batchId: string;
    status: 'cancelled';
    cancelledJobs: number;
    message: string;
  }> {
    return this.send('POST', `/api/v1/batch/cancel?${q({ batchId })}`);
  }
  /** Pauses a batch: no new call starts; calls already up finish. */
  pauseBatch(batchId: string): Promise<BatchStateChange> {
    return this.send('POST', `/api/v1/batch/pause?${q({ batchId })}`);
  }
  /** Resumes a paused batch where it stopped. */
  resumeBatch(batchId: string): Promise<BatchStateChange> {
    return this.send('POST', `/api/v1/batch/resume?${q({ batchId })}`);
  }
  /** The batch's export, as CSV text. */
  async exportBatch(batchId: string): Promise<string> {
    const response = await this.raw('GET', `/api/v1/batch/${encodeURIComponent(batchId)}/export?format=csv`);
    return response.text();
  }
  webhookDeliveries(
    filters: { batchId?: string; callId?: string; status?: string; limit?: number } = {},
  ): Promise<DeliveryView[]> {
    return this.send('GET', `/api/v1/webhooks/deliveries?${q(filters)}`);
  }
  retryDelivery(deliveryId: string): Promise<DeliveryView> {
    return this.send('POST', `/api/v1/webhooks/deliveries/${encodeURIComponent(deliveryId)}/retry`);
  }

  /**
   * Adds a number to your suppression list (never dialed: 403 NUMBER_SUPPRESSED at dial time,
   * counted suppressed in a batch). `created` is false when it was already there (the stored
   * record is returned unchanged).
   */
  async addSuppression(
    phoneNumber: string,
    reason?: string,
  ): Promise<{ created: boolean; suppression: Suppression }> {
    const response = await this.raw('POST', '/api/v1/suppressions', {
      phoneNumber,
      ...(reason === undefined ? {} : { reason }),
    });
    return { created: response.status === 201, suppression: (await response.json()) as Suppression };
  }
  /** One page of your suppression list, newest first; pass `nextCursor` back for the next page (null: last page). */
  async listSuppressions(
    page: { limit?: number; cursor?: string } = {},
  ): Promise<{ items: Suppression[]; nextCursor: string | null }> {
    const response = await this.raw('GET', `/api/v1/suppressions?${q(page)}`);
    return {
      items: (await response.json()) as Suppression[],
      nextCursor: response.headers.get('x-next-cursor'),
    };
  }
  /** Removes a number from your suppression list (an OutdialError 404 when it is not on it). */
  async removeSuppression(phoneNumber: string): Promise<void> {
    await this.raw('DELETE', `/api/v1/suppressions/${encodeURIComponent(phoneNumber)}`);
  }

  private async raw(
    method: string,
    path: string,
    body?: unknown,
    options: SendOptions = {},
  ): Promise<Response> {
    const response = await (this.options.fetch ?? fetch)(`${this.base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.options.apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(options.idempotencyKey === undefined ? {} : { 'idempotency-key': options.idempotencyKey }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    if (!response.ok) {
      const text = await response.text();
      let parsed: Record<string, unknown> = {};
      try {
        parsed = JSON.parse(text) as Record<string, unknown>;
      } catch {
        parsed = { error: text.slice(0, 200) };
      }
      throw new OutdialError(response.status, parsed);
    }
    return response;
  }

  private async send<T>(method: string, path: string, body?: unknown, options: SendOptions = {}): Promise<T> {
    return (await (await this.raw(method, path, body, options)).json()) as T;
  }
}

function q(params: Record<string, string | number | undefined>): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== undefined) search.set(key, String(value));
  return search.toString();
}

/** The user an API key belongs to: the key is a JWT whose subject is the user (the server checks the rest). */
export function userOfApiKey(key: string): string {
  try {
    const payload = JSON.parse(Buffer.from(key.split('.')[1] ?? '', 'base64url').toString('utf8')) as {
      sub?: unknown;
    };
    if (typeof payload.sub === 'string') return payload.sub;
  } catch {
    // fall through
  }
  throw new Error('not an outdial API key');
}

/**
 * Verifies a webhook delivery the way docs/webhooks.md describes: the Standard Webhooks signature
 * over "{webhook-id}.{webhook-timestamp}.{body}" with the `whsec_` secret (any of its space-separated
 * values: during the 24 h after a rotation it carries the new and the old one) and a timestamp
 * within `toleranceSeconds` of now (replays). `x-outdial-signature` is not needed: it signs the
 * body alone, with the current secret only, so a receiver still on the old secret could not use it
 * during a rotation. `body` must be the bytes as received. Returns the parsed payload, or throws.
 */
export function verifyWebhook(
  headers: Record<string, string | string[] | undefined>,
  body: string | Buffer,
  secret: string,
  options: { toleranceSeconds?: number; now?: Date } = {},
): WebhookPayload {
  const header = (name: string) => {
    const value = headers[name] ?? headers[name.toLowerCase()];
    return Array.isArray(value) ? value[0] : value;
  };
  const id = header('webhook-id');
  const timestamp = header('webhook-timestamp');
  const signatures = header('webhook-signature');
  if (!id || !timestamp || !signatures) throw new Error('not an outdial webhook: signature headers missing');
  const now = (options.now ?? new Date()).getTime() / 1000;
  if (!/^\d+$/.test(timestamp) || Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? 300)) {
    throw new Error('webhook timestamp too far from now (a replay?)');
  }
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const same = (a: string, b: string) =>
    a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));
  const standard = createHmac('sha256', key)
    .update(Buffer.concat([Buffer.from(`${id}.${timestamp}.`), bytes]))
    .digest('base64');
  const standardOk = signatures.split(' ').some((part) => same(part.replace(/^v1,/, ''), standard));
  if (!standardOk) throw new Error('webhook signature does not match');
  return JSON.parse(bytes.toString('utf8')) as WebhookPayload;
}
