import { DateTime } from 'luxon';
import type { FinalCallStatus } from './call.js';
import { assertNever } from './call.js';

export const BATCH_STATUSES = [
  'ingesting',
  'scheduled',
  'pending',
  'processing',
  'completed',
  'cancelled',
  'failed',
] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/** States in which a batch may still dial. */
export const ACTIVE_BATCH_STATUSES: BatchStatus[] = ['scheduled', 'pending', 'processing'];
/** States from which POST /api/v1/batch/cancel moves a batch to cancelled. */
export const CANCELLABLE_BATCH_STATUSES: BatchStatus[] = ['ingesting', 'scheduled', 'pending', 'processing'];

export function isCancellable(status: BatchStatus): boolean {
  return CANCELLABLE_BATCH_STATUSES.includes(status);
}

export interface RetryPolicy {
  maxAttempts: number;
  noAnswerDelayMs: number;
  busyDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 3,
  noAnswerDelayMs: 3_600_000,
  busyDelayMs: 300_000,
};

/**
 * What happens to a batch contact after an attempt ends: done, or another attempt after a delay.
 * NO_ANSWER and VOICEMAIL wait noAnswerDelay, BUSY and FAILED wait busyDelay; `attempts` counts
 * the first call too.
 */
export function nextStep(
  outcome: FinalCallStatus,
  attempts: number,
  policy: RetryPolicy,
): { retry: false } | { retry: true; delayMs: number } {
  if (outcome === 'COMPLETED' || attempts >= policy.maxAttempts) return { retry: false };
  switch (outcome) {
    case 'NO_ANSWER':
    case 'VOICEMAIL':
      return { retry: true, delayMs: policy.noAnswerDelayMs };
    case 'BUSY':
    case 'FAILED':
      return { retry: true, delayMs: policy.busyDelayMs };
    default:
      return assertNever(outcome);
  }
}

/**
 * A scheduled start: an ISO 8601 date-time. With an offset or Z it is that instant; without one it
 * is read as wall-clock time in `timezone` (an IANA zone). Returns null when it cannot be read.
 */
export function parseScheduledStart(value: string, timezone: string): Date | null {
  const hasOffset = /(Z|[+-]\d{2}:?\d{2})$/i.test(value.trim());
  const parsed = hasOffset
    ? DateTime.fromISO(value.trim(), { setZone: true })
    : DateTime.fromISO(value.trim(), { zone: timezone });
  return parsed.isValid ? parsed.toJSDate() : null;
}

export function isValidTimeZone(zone: string): boolean {
  return DateTime.local().setZone(zone).isValid;
}

/** Minutes a batch is expected to need, checked against the balance before it is accepted. */
export function estimateMinutes(contacts: number, minutesPerCall: number): number {
  return Math.ceil(contacts * minutesPerCall);
}

/** The share of a batch's contacts that are done, and of those done the share that succeeded, in percent with two decimals. */
export function batchRatios(counts: { total: number; processed: number; succeeded: number }): {
  percentComplete: number;
  successRate: number;
} {
  const round2 = (value: number) => Math.round(value * 100) / 100;
  return {
    percentComplete: counts.total > 0 ? round2((counts.processed / counts.total) * 100) : 0,
    successRate: counts.processed > 0 ? round2((counts.succeeded / counts.processed) * 100) : 0,
  };
}
