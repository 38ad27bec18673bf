/**
 * The one billing rule of a call, kept here so that every transport (SIP, web, simulator) and the
 * settling of cut-off calls bill alike (issue 23): connected time in started seconds, at least 1
 * once the far end answered, then charged in started minutes. This module owns the rule: every
 * place that bills a call's seconds or charges its minutes calls it (docs/decisions.md, "Calls:
 * first slice of issue 23").
 */

import { assertNever, type FinalCallStatus } from './call.js';
import type { FailureSource } from './failure.js';

/**
 * Seconds billed for a span of connected time given in seconds: each started second, and at least
 * 1, as a call answered and hung up at once (or a clock that steps back) is still a connected call.
 */
export function billedSecondsOf(connectedSeconds: number): number {
  return Math.max(Math.ceil(connectedSeconds), 1);
}

/** Seconds billed for a call: 0 when nobody answered, else each started second from the answer to the end, at least 1. */
export function billedSeconds(answeredAt: Date | null, endedAt: Date): number {
  if (!answeredAt) return 0;
  return billedSecondsOf((endedAt.getTime() - answeredAt.getTime()) / 1000);
}

/** Minutes charged for billed seconds: each started minute; nothing for 0 (or no duration at all). */
export function minutesCharged(seconds: number | null): number {
  return seconds && seconds > 0 ? Math.ceil(seconds / 60) : 0;
}

/**
 * Minutes taken from the balance for a finished call: each started minute of connected time, as a
 * carrier bills it. The far end answered on COMPLETED and on VOICEMAIL (a machine picked up), and
 * on a FAILED call with a duration (it failed after the answer); a FAILED call nobody answered
 * has duration 0 and costs nothing. A call that failed on our side (`failureSource` service: a
 * model or trunk down, a process cut off) costs the user nothing, whatever its connected time: its
 * seconds are still recorded as `duration` (issue 24).
 */
export function minutesToCharge(
  status: FinalCallStatus,
  durationSeconds: number | null,
  failureSource: FailureSource | null,
): number {
  if (failureSource === 'service') return 0;
  switch (status) {
    case 'COMPLETED':
    case 'VOICEMAIL':
    case 'FAILED':
      return minutesCharged(durationSeconds);
    case 'NO_ANSWER':
    case 'BUSY':
      return 0;
    default:
      return assertNever(status);
  }
}
