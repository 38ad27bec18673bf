import type { EndedReason } from '../../../domain/agent-call.js';
import type { FinalCallStatus } from '../../../domain/call.js';
import type { CallEndedEvent, DialRecord, ProviderCallState } from '../../../ports.js';
import { cutOffAfterAnswer, lastHeartbeat } from '../cut-off.js';

/**
 * The end of a call nobody talked on: no answer, no audio, no transcription. `ours` names the
 * service failure it was, if any (a trunk unreachable or refusing, a process cut off before the
 * answer): the end reason, or `null` with the service named as its source.
 */
export function unanswered(
  callId: string,
  status: FinalCallStatus,
  error: string | null,
  sipCode: number | null,
  endedAt: Date,
  ours?: { endedReason: EndedReason | null },
): CallEndedEvent {
  return {
    callId,
    status,
    duration: 0,
    answeredAt: null,
    endedAt,
    error,
    transcription: [],
    sipCode,
    endedReason: ours?.endedReason ?? null,
    ...(ours ? { failureSource: 'service' as const } : {}),
  };
}

/**
 * A SIP call no process here holds, settled from its shared record as a carrier would: its
 * reported end; or, cut off, FAILED with the answer time kept and the connected time up to the
 * owner's last heartbeat (charged like any connected time), or unanswered with nothing charged.
 * A record still waiting is not known: nothing reached the network.
 */
export function settleFromRecord(callId: string, record: DialRecord): ProviderCallState {
  if (record.ended) return { known: true, ended: record.ended };
  if (record.state !== 'sent') return { known: false, ended: null };
  const heartbeat = lastHeartbeat(record);
  if (!record.answeredAt) {
    return {
      known: true,
      ended: unanswered(
        callId,
        'FAILED',
        'The call was cut off before an answer: the process that placed it stopped',
        null,
        heartbeat,
        { endedReason: null },
      ),
    };
  }
  return {
    known: true,
    ended: cutOffAfterAnswer(callId, { ...record, answeredAt: record.answeredAt }, { sipCode: 200 }),
  };
}
