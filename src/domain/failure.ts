/**
 * Whose failure a failed attempt was (issue 24). The owner of the rule: `CallLifecycle` asks
 * `failureSourceOf` when it writes a call's end and its charge; the batch contact's next step reads
 * what was written (`calls.failure_source`).
 *
 * - `contact`: the callee's side: busy, no answer, a number the network refused, a machine that
 *   answered, a callee who hung up.
 * - `service`: ours: a model, speech or realtime server unreachable, erring or too slow; a trunk
 *   unreachable or refusing the call itself; a worker overloaded; a process cut off.
 *
 * A service failure is not charged (domain/billing.ts) and does not use one of the batch
 * contact's attempts (`serviceRetryDelayMs` sets when it is tried again).
 */
import { type EndedReason, type FailureSource, SERVICE_ENDED_REASONS } from './agent-call.js';
import type { FinalCallStatus } from './call.js';

export { FAILURE_SOURCES, type FailureSource, SERVICE_ENDED_REASONS } from './agent-call.js';

const OURS: ReadonlySet<EndedReason> = new Set(SERVICE_ENDED_REASONS);

export function isServiceReason(reason: EndedReason | null | undefined): boolean {
  return reason != null && OURS.has(reason);
}

/**
 * Whose failure an ended call was: null when it did not fail (COMPLETED). A transport that knows
 * (a dial the provider refused) says so itself; otherwise the end reason decides, and a failure
 * with no reason of ours (busy, no answer, voicemail, a number the network refused) is the
 * contact's.
 */
export function failureSourceOf(end: {
  status: FinalCallStatus;
  endedReason?: EndedReason | null;
  failureSource?: FailureSource | null;
}): FailureSource | null {
  if (end.failureSource) return end.failureSource;
  if (isServiceReason(end.endedReason)) return 'service';
  return end.status === 'COMPLETED' ? null : 'contact';
}

/** The first retry after a service failure waits this long; each one in a row doubles it. */
export const SERVICE_RETRY_FIRST_MS = 30_000;
/** The longest wait between tries of a contact whose calls keep failing on our side. */
export const SERVICE_RETRY_MAX_MS = 30 * 60_000;

/**
 * When a batch contact is tried again after its `failuresInARow`th service failure in a row (1 for
 * the first): `firstMs` (OUTDIAL_SERVICE_RETRY_MS, 30 s), then twice as long each time, up to 30
 * min. It keeps its attempt; the backoff only spares a callee repeated apologies while the service
 * is down.
 */
export function serviceRetryDelayMs(failuresInARow: number, firstMs = SERVICE_RETRY_FIRST_MS): number {
  const doublings = Math.min(Math.max(failuresInARow - 1, 0), 16);
  return Math.min(firstMs * 2 ** doublings, SERVICE_RETRY_MAX_MS);
}
