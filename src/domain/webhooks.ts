import { createHmac } from 'node:crypto';
import type { AgentCallFields } from './agent-call.js';
import type { CallStatus, TranscriptEntry } from './call.js';

/** The events outdial sends; `event` in every payload, and the filter of the delivery log. */
export const WEBHOOK_EVENTS = [
  'call.started',
  'call.answered',
  'call.completed',
  'batch.completed',
  'batch.failed',
  'batch.paused',
  'batch.resumed',
  'batch.cancelled',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** Where a delivery stands in the outbox: pending until it succeeds or its attempts run out. */
export type WebhookDeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** The events of one call a single call's `statusCallBackEvents` may ask for. */
export const CALL_EVENTS = ['call.started', 'call.answered', 'call.completed'] as const;
export type CallEvent = (typeof CALL_EVENTS)[number];
/** Without `statusCallBackEvents`, statusCallBackUrl hears of the end only (as before issue 16). */
export const DEFAULT_CALL_EVENTS: readonly CallEvent[] = ['call.completed'];

/**
 * Where a single call's `event` goes: its statusCallBackUrl when its statusCallBackEvents (null:
 * the default) ask for it, else nowhere.
 */
export function singleCallUrl(
  call: { status_callback_url: string | null; status_callback_events: readonly string[] | null },
  event: CallEvent,
): string | null {
  const subscribed = call.status_callback_events ?? DEFAULT_CALL_EVENTS;
  return call.status_callback_url && subscribed.includes(event) ? call.status_callback_url : null;
}

/** Whether anyone listens for a single call's progress (`call.started` or `call.answered`). */
export function singleCallWantsProgress(call: {
  status_callback_url: string | null;
  status_callback_events: readonly string[] | null;
}): boolean {
  return singleCallUrl(call, 'call.started') !== null || singleCallUrl(call, 'call.answered') !== null;
}

/**
 * A call started dialing (`call.started`) or was answered (`call.answered`): sent to the batch's
 * onCallEvent, or to a single call's statusCallBackUrl when its statusCallBackEvents ask for it.
 */
export interface CallProgressPayload {
  event: 'call.started' | 'call.answered';
  /** When it happened: the moment the call went out, or the moment it was answered. */
  timestamp: string;
  call: {
    id: string;
    contactId: string;
    agentId: string;
    batchId: string | null;
    phoneNumber: string;
    contactName: string;
    /** When the call went out. */
    startTime: string;
    /** When it was answered (call.answered); null in call.started. */
    answeredAt: string | null;
  };
}

/** The spec's onCallComplete payload (also the single call's statusCallBackUrl payload). */
export interface CallCompletedPayload {
  event: 'call.completed';
  success: boolean;
  call: {
    id: string;
    contactId: string;
    agentId: string;
    batchId: string | null;
    status: CallStatus;
    startTime: string;
    endTime: string | null;
    duration: number | null;
    phoneNumber: string;
    contactName: string;
    transcription: TranscriptEntry[];
    recordingUrl: string | null;
    summary: string | null;
    metricJson: Record<string, unknown> | null;
  } & AgentCallFields;
  /** The JSON Schema of metricJson for the call's agent. */
  metricSchema: Record<string, unknown>;
}

/** The spec's onBatchComplete payload. */
export interface BatchCompletedPayload {
  event: 'batch.completed';
  batchId: string;
  agentId: string;
  userId: string;
  statistics: {
    total: number;
    processed: number;
    succeeded: number;
    failed: number;
    percentComplete: number;
    successRate: number;
  };
  timestamps: { createdAt: string; startedAt: string | null; completedAt: string };
}

/** The spec's onBatchFailed payload. */
export interface BatchFailedPayload {
  event: 'batch.failed';
  batchId: string;
  agentId: string;
  error: string;
  code: string;
  timestamp: string;
}

/** A batch was paused or resumed (sent to onBatchEvent, else onBatchComplete). */
export interface BatchStatusPayload {
  event: 'batch.paused' | 'batch.resumed';
  batchId: string;
  agentId: string;
  userId: string;
  /** The status the batch is in after the event. */
  status: 'paused' | 'scheduled' | 'pending' | 'processing';
  /**
   * Why it was paused (batch.paused), or why the pause it ends began (batch.resumed): `operator`
   * (the API's pause and resume) or `dependency-unavailable` (a breaker opened, and its recovery
   * resumed the batch, issue 24 §3). Additive to the spec.
   */
  pauseReason: 'operator' | 'dependency-unavailable';
  /** With `dependency-unavailable`: the key of the dependency's breaker (e.g. `llm:http://…/v1`, `trunk:<id>`). */
  dependency: string | null;
  timestamp: string;
}

/** A batch was cancelled (sent to onBatchEvent, else onBatchComplete). */
export interface BatchCancelledPayload {
  event: 'batch.cancelled';
  batchId: string;
  agentId: string;
  userId: string;
  status: 'cancelled';
  /** Contacts that will not be dialed because of the cancel (as the cancel's reply says). */
  cancelledJobs: number;
  timestamp: string;
}

export type WebhookPayload =
  | CallProgressPayload
  | CallCompletedPayload
  | BatchCancelledPayload
  | BatchCompletedPayload
  | BatchFailedPayload
  | BatchStatusPayload;

const SECRET_PREFIX = 'whsec_';

/** The HMAC key of a `whsec_...` secret: the bytes its base64 part encodes. */
export function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('a webhook secret starts with whsec_');
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
}

export interface SignatureInput {
  /** The `webhook-id`: one per event, the same on every attempt. */
  id: string;
  /** Unix seconds of this attempt. */
  timestamp: number;
  /** The exact bytes sent. */
  body: string;
  /** The current secret first; during a rotation's overlap, the previous one after it. */
  secrets: string[];
}

/**
 * The signature headers of one attempt: `x-outdial-signature` (hex HMAC-SHA256 of the body with
 * the current secret: always one value, as the contract describes it) and the Standard Webhooks
 * `webhook-signature` (`v1,<base64 HMAC of "{id}.{timestamp}.{body}">`, one per secret,
 * space-separated, which that standard defines for rotations). So during a rotation's overlap a
 * receiver still on the old secret verifies `webhook-signature`.
 */
export function signatureHeaders(input: SignatureInput): Record<string, string> {
  const [current] = input.secrets;
  if (current === undefined) throw new Error('a delivery is signed with at least one secret');
  const standard = input.secrets.map(
    (secret) =>
      `v1,${createHmac('sha256', secretKey(secret)).update(`${input.id}.${input.timestamp}.${input.body}`).digest('base64')}`,
  );
  return {
    'x-outdial-signature': createHmac('sha256', secretKey(current)).update(input.body).digest('hex'),
    'webhook-id': input.id,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': standard.join(' '),
  };
}

export type AttemptResult =
  | { kind: 'delivered'; status: number }
  | { kind: 'rejected'; status: number }
  | { kind: 'error'; error: string; retryable: boolean };

export type NextStep =
  | { state: 'succeeded' }
  | { state: 'failed'; reason: string }
  | { state: 'retry'; delayMs: number };

/**
 * What follows an attempt: a 2xx is done; 410 Gone stops at once; other answers and network errors
 * are retried after `retryDelaysMs[attempt - 1]` while delays remain (so 1 + delays attempts in
 * all), then the delivery is failed and dropped.
 */
export function afterAttempt(result: AttemptResult, attempt: number, retryDelaysMs: number[]): NextStep {
  if (result.kind === 'delivered') return { state: 'succeeded' };
  if (result.kind === 'rejected' && result.status === 410) {
    return { state: 'failed', reason: 'the receiver answered 410 Gone: not retried' };
  }
  if (result.kind === 'error' && !result.retryable) return { state: 'failed', reason: result.error };
  const delayMs = retryDelaysMs[attempt - 1];
  if (delayMs === undefined) {
    return { state: 'failed', reason: `gave up after ${attempt} attempt${attempt === 1 ? '' : 's'}` };
  }
  return { state: 'retry', delayMs };
}
