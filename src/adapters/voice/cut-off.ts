import { billedSeconds } from '../../domain/billing.js';
import type { CallEndedEvent, DialRecord } from '../../ports.js';

/**
 * The end of an answered call whose process stopped without reporting it (a crash, a kill): FAILED,
 * with the answer time kept and the connected time up to the owner's last heartbeat (at least
 * 1 s), charged like any connected time. The SIP and web providers, and the simulator for its AI
 * conversations, settle their cut-off calls so.
 */
export function cutOffAfterAnswer(
  callId: string,
  record: DialRecord & { answeredAt: Date },
  extra: Pick<CallEndedEvent, 'sipCode'> = {},
): CallEndedEvent {
  const heartbeat = lastHeartbeat(record);
  const answeredAt = record.answeredAt;
  const endedAt = new Date(Math.max(heartbeat.getTime(), answeredAt.getTime()));
  const duration = billedSeconds(answeredAt, endedAt);
  return {
    callId,
    status: 'FAILED',
    duration,
    answeredAt,
    endedAt,
    error: `The call was cut off after ${duration} s connected: the process that placed it stopped`,
    transcription: [],
    ...extra,
    endedReason: 'error',
  };
}

/** When the call's owner was last seen alive (its lease's renewal), or the record's last step. */
export function lastHeartbeat(record: DialRecord): Date {
  return record.ownerSeenAt ?? record.sentAt ?? record.createdAt;
}
