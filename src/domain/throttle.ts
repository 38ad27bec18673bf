import { campaignAllowance, campaignPlaces, type UserCallLoad } from './allowance.js';
import type { BatchStatus, PauseReason } from './batch.js';
import { assertNever } from './call.js';

/** Why a batch dials below its configured rate (issue 24 §5: the names are the API's). */
export const THROTTLE_REASONS = [
  'user-concurrency',
  'trunk-capacity',
  'calling-window',
  // A breaker its agent needs is open: the batch is paused until the dependency answers a probe.
  'dependency-unavailable',
] as const;
export type ThrottleReason = (typeof THROTTLE_REASONS)[number];

export type BatchThrottle =
  | {
      reason: 'user-concurrency';
      /** The user's maxConcurrentCalls. */
      limit: number;
      /** The user's calls in progress, single and batch. */
      inProgress: number;
      /** Places campaigns leave free for the user's single calls. */
      keptForSingleCalls: number;
    }
  | {
      reason: 'trunk-capacity';
      /** The batch's calls past their slot and still waiting for a place on their SIP trunk. */
      waitingForTrunk: number;
    }
  | {
      reason: 'calling-window';
      waitingForWindow: number;
      /** The earliest opening among the contacts that wait (ISO 8601), null if none is known. */
      nextOpening: string | null;
    }
  | { reason: 'dependency-unavailable'; dependency: string };

/** What the batch's status read knows, from counts, for the throttle. */
export interface ThrottleFacts {
  status: BatchStatus;
  /** Why a paused batch is paused (null otherwise), and the breaker key with `dependency-unavailable`. */
  pauseReason?: PauseReason | null;
  pausedDependency?: string | null;
  /** Whether a queued contact is due now (not waiting for a retry nor its window). */
  dueNow: boolean;
  /** The user's load, read for a dialing batch with contacts due; null otherwise. */
  load: UserCallLoad | null;
  waitingForTrunk: number;
  waitingForWindow: number;
  nextOpening: Date | null;
}

/**
 * Why a batch is held below its rate, or null when nothing holds it. Derived from what the status
 * read counts, not recorded by the dispatcher, so every API process gives the same answer with no
 * write on the dispatcher's path. The user's places come first (they hold contacts already due),
 * then the trunk (calls claimed but not sent), then the window (nothing due, contacts wait for it).
 * A batch waiting only for its retries is not throttled: its time left says when they are due.
 */
export function batchThrottle(facts: ThrottleFacts): BatchThrottle | null {
  if (facts.status === 'paused' && facts.pauseReason === 'dependency-unavailable') {
    return { reason: 'dependency-unavailable', dependency: facts.pausedDependency ?? 'unknown' };
  }
  if (facts.status !== 'processing' && facts.status !== 'pending') return null;
  if (facts.dueNow && facts.load && campaignAllowance(facts.load).freePlaces === 0) {
    const { maxConcurrentCalls, callsInProgress } = facts.load;
    return {
      reason: 'user-concurrency',
      limit: maxConcurrentCalls,
      inProgress: callsInProgress,
      keptForSingleCalls: maxConcurrentCalls - campaignPlaces(maxConcurrentCalls),
    };
  }
  if (facts.waitingForTrunk > 0) return { reason: 'trunk-capacity', waitingForTrunk: facts.waitingForTrunk };
  if (!facts.dueNow && facts.waitingForWindow > 0) {
    return {
      reason: 'calling-window',
      waitingForWindow: facts.waitingForWindow,
      nextOpening: facts.nextOpening?.toISOString() ?? null,
    };
  }
  return null;
}

/** The throttle in a sentence, for the dashboard and the CLI. */
export function throttleText(throttle: BatchThrottle | null): string {
  if (!throttle) return 'No: dialing at its configured rate';
  switch (throttle.reason) {
    case 'user-concurrency':
      return `Your concurrent-call limit: ${throttle.inProgress} of ${throttle.limit} calls in progress (${throttle.keptForSingleCalls} kept for single calls)`;
    case 'trunk-capacity':
      return `SIP trunk capacity: ${throttle.waitingForTrunk} calls waiting for a place on the trunk`;
    case 'calling-window':
      return `Calling window: ${throttle.waitingForWindow} contacts wait for it to open${throttle.nextOpening ? ` (next at ${throttle.nextOpening})` : ''}`;
    case 'dependency-unavailable':
      return `A service it needs is unavailable: ${throttle.dependency}`;
    default:
      return assertNever(throttle);
  }
}
