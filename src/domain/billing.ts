import { assertNever, type FinalCallStatus } from './call.js';

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
