import { DateTime } from 'luxon';
import type { FinalCallStatus } from './call.js';
import { assertNever } from './call.js';

export const BATCH_STATUSES = [
  'ingesting',
  'scheduled',
  'pending',
  'processing',
  'paused',
  'completed',
  'cancelled',
  'failed',
] as const;
export type BatchStatus = (typeof BATCH_STATUSES)[number];

/**
 * Why a batch is paused (issue 24 §3): `operator` (the API's pause) or `dependency-unavailable`
 * (a breaker its agent depends on opened; its first successful probe resumes the batch).
 */
export const PAUSE_REASONS = ['operator', 'dependency-unavailable'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];

/**
 * A batch contact's state: queued (waiting to be dialed, maybe for its calling window or a
 * retry), dialing (a call is up or being placed), done (its last attempt ended), cancelled (by a
 * cancel or a failure of the batch), suppressed (its number is on the user's suppression list:
 * not dialed, or not again), skipped (no consent record under requireConsent).
 */
export const BATCH_CONTACT_STATES = [
  'queued',
  'dialing',
  'done',
  'cancelled',
  'suppressed',
  'skipped',
] as const;
export type BatchContactState = (typeof BATCH_CONTACT_STATES)[number];

/** A contact's consent to be called: where it came from, when, and the words agreed to. */
export interface ConsentRecord {
  source: string;
  /** ISO 8601 instant. */
  obtainedAt: string;
  text?: string;
}

export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/**
 * When a batch may call a contact, in the contact's own zone: from `start` to `end` ("HH:MM",
 * 24-hour; end after start), on `days` (every day when absent).
 */
export interface CallingWindow {
  start: string;
  end: string;
  days?: Weekday[];
}

export interface RetryPolicy {
  maxAttempts: number;
  noAnswerDelayMs: number;
  busyDelayMs: number;
  /**
   * Whether a VOICEMAIL attempt is tried again. Off by default: the agent's voicemailMessage was
   * left on the machine, and another attempt would leave it a second time (issue 24).
   */
  retryOnVoicemail: boolean;
}

export const DEFAULT_RETRY: RetryPolicy = {
  maxAttempts: 3,
  noAnswerDelayMs: 3_600_000,
  busyDelayMs: 300_000,
  retryOnVoicemail: false,
};

/**
 * What happens to a batch contact after an attempt ends: done, or another attempt after a delay.
 * NO_ANSWER waits noAnswerDelay, BUSY and FAILED wait busyDelay; `attempts` counts the first call
 * too. VOICEMAIL is final unless the policy retries it (then it waits noAnswerDelay, as a machine
 * is a person who did not answer), whether or not a message was left: the call's end does not
 * say reliably that one was (docs/decisions.md, "Voicemail is left once").
 */
export function nextStep(
  outcome: FinalCallStatus,
  attempts: number,
  policy: RetryPolicy,
): { retry: false } | { retry: true; delayMs: number } {
  if (outcome === 'COMPLETED' || attempts >= policy.maxAttempts) return { retry: false };
  switch (outcome) {
    case 'VOICEMAIL':
      return policy.retryOnVoicemail ? { retry: true, delayMs: policy.noAnswerDelayMs } : { retry: false };
    case 'NO_ANSWER':
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
