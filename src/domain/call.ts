/**
 * Call states. The spec names ONGOING and COMPLETED; the other final states are the outcomes a
 * telephone network reports (see docs/decisions.md).
 */
export const CALL_STATUSES = ['ONGOING', 'COMPLETED', 'NO_ANSWER', 'BUSY', 'FAILED', 'VOICEMAIL'] as const;
export type CallStatus = (typeof CALL_STATUSES)[number];
export type FinalCallStatus = Exclude<CallStatus, 'ONGOING'>;

/**
 * How the callee is reached: 'phone' (a provider dials a number: the simulator, a SIP trunk) or
 * 'web' (the dashboard's "Talk to this agent": a browser's microphone over a WebSocket).
 */
export const CALL_CHANNELS = ['phone', 'web'] as const;
export type CallChannel = (typeof CALL_CHANNELS)[number];

export interface TranscriptEntry {
  role: 'assistant' | 'user';
  content: string;
}

export function isFinal(status: CallStatus): status is FinalCallStatus {
  return status !== 'ONGOING';
}

/**
 * Minutes taken from the balance for a finished call: each started minute of connected time, as a
 * carrier bills it. The far end answered on COMPLETED and on VOICEMAIL (a machine picked up), and
 * on a FAILED call with a duration (it failed or was cut off after the answer); a FAILED call
 * nobody answered has duration 0 and costs nothing.
 */
export function minutesToCharge(status: FinalCallStatus, durationSeconds: number | null): number {
  switch (status) {
    case 'COMPLETED':
    case 'VOICEMAIL':
    case 'FAILED':
      return durationSeconds && durationSeconds > 0 ? Math.ceil(durationSeconds / 60) : 0;
    case 'NO_ANSWER':
    case 'BUSY':
      return 0;
    default:
      return assertNever(status);
  }
}

/** A call counts as succeeded in statistics only when a person answered and the talk ended normally. */
export function isSuccess(status: CallStatus): boolean {
  return status === 'COMPLETED';
}

export function assertNever(value: never): never {
  throw new Error(`Unexpected value: ${String(value)}`);
}
