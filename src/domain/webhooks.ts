import { createHmac } from 'node:crypto';
import type { CallStatus, TranscriptEntry } from './call.js';

/** The events outdial sends; `event` in every payload, and the filter of the delivery log. */
export type WebhookEvent = 'call.completed' | 'batch.completed' | 'batch.failed';

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
  };
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

export type WebhookPayload = CallCompletedPayload | BatchCompletedPayload | BatchFailedPayload;

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
 * The signature headers of one attempt: `x-outdial-signature` (hex HMAC-SHA256 of the body, one
 * value per secret, comma-separated) and the Standard Webhooks `webhook-signature` (`v1,<base64
 * HMAC of "{id}.{timestamp}.{body}">`, one per secret, space-separated).
 */
export function signatureHeaders(input: SignatureInput): Record<string, string> {
  const hex: string[] = [];
  const standard: string[] = [];
  for (const secret of input.secrets) {
    const key = secretKey(secret);
    hex.push(createHmac('sha256', key).update(input.body).digest('hex'));
    standard.push(
      `v1,${createHmac('sha256', key).update(`${input.id}.${input.timestamp}.${input.body}`).digest('base64')}`,
    );
  }
  return {
    'x-outdial-signature': hex.join(','),
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
