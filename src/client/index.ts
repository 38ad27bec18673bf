import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Static } from '@sinclair/typebox';
import type { TranscriptEntry } from '../domain/call.js';
import type { WebhookPayload } from '../domain/webhooks.js';
import type { BatchBody } from '../http/routes/v1/batch.create.js';
import type { DialBody } from '../http/routes/v1/call.dial.js';
import type { LiveCallStatus } from '../ports.js';
import type { CallMetrics, SummaryReply } from '../services/analysis.js';
import type { BatchListItem, BatchStatistics } from '../services/batch-reads.js';
import type { DialResult, PersistentCallStatus } from '../services/calls.js';
import type { DeliveryView } from '../services/webhooks.js';

/**
 * A typed client of the outdial API. Its request and reply types are the ones the server's route
 * schemas and services are written in (the same source the OpenAPI document is generated from),
 * so a change to the API that breaks a client breaks its compilation first.
 */

export type DialRequest = Omit<Static<typeof DialBody>, 'userId'>;
export type BatchRequest = Omit<Static<typeof BatchBody>, 'userId'>;
export type {
  BatchListItem,
  BatchStatistics,
  CallMetrics,
  DeliveryView,
  DialResult,
  LiveCallStatus,
  PersistentCallStatus,
  SummaryReply,
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

export class OutdialClient {
  private readonly base: string;
  private readonly userId: string;

  constructor(private readonly options: ClientOptions) {
    this.base = options.baseUrl.replace(/\/+$/, '');
    this.userId = userOfApiKey(options.apiKey);
  }

  dial(request: DialRequest): Promise<DialResult> {
    return this.send('POST', '/api/v1/call/dial', { ...request, userId: this.userId });
  }
  liveCall(callId: string): Promise<LiveCallStatus> {
    return this.send('GET', `/api/v1/status/call?${q({ callId })}`);
  }
  async call(callId: string): Promise<PersistentCallStatus> {
    return (
      await this.send<{ data: PersistentCallStatus }>('GET', `/api/v1/call/check-status?${q({ callId })}`)
    ).data;
  }
  callMetrics(query: { callId: string; agentId: string; contactId: string }): Promise<CallMetrics> {
    return this.send('GET', `/api/v1/call/get-metric?${q({ ...query, userId: this.userId })}`);
  }
  createSummary(callId: string, transcription: TranscriptEntry[]): Promise<SummaryReply> {
    return this.send('POST', '/api/v1/call/create-summary', { callId, transcription });
  }
  createBatch(request: BatchRequest): Promise<BatchAccepted> {
    return this.send('POST', '/api/v1/batch', { ...request, userId: this.userId });
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

  private async raw(method: string, path: string, body?: unknown): Promise<Response> {
    const response = await (this.options.fetch ?? fetch)(`${this.base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${this.options.apiKey}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
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

  private async send<T>(method: string, path: string, body?: unknown): Promise<T> {
    return (await (await this.raw(method, path, body)).json()) as T;
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
 * over "{webhook-id}.{webhook-timestamp}.{body}" with the `whsec_` secret, a timestamp within
 * `toleranceSeconds` of now (replays), and the `x-outdial-signature` hex HMAC of the body. `body`
 * must be the bytes as received. Returns the parsed payload, or throws.
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
  const hexes = header('x-outdial-signature');
  if (!id || !timestamp || !signatures || !hexes)
    throw new Error('not an outdial webhook: signature headers missing');
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
  const hex = createHmac('sha256', key).update(bytes).digest('hex');
  const standardOk = signatures.split(' ').some((part) => same(part.replace(/^v1,/, ''), standard));
  const hexOk = hexes.split(',').some((part) => same(part.trim(), hex));
  if (!standardOk || !hexOk) throw new Error('webhook signature does not match');
  return JSON.parse(bytes.toString('utf8')) as WebhookPayload;
}
