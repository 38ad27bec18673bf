/**
 * What the carrier saw, read from sipp's own message log (-trace_msg): one entry per SIP Call-ID,
 * that is per INVITE transaction that reached the network.
 */
export interface CarrierCall {
  sipCallId: string;
  /** The number called: the INVITE's request-URI user part. */
  number: string;
  /** Our call id, when the INVITE carried it (an `X-Outdial-Call-Id` header). */
  ourCallId: string | null;
  invitedAt: number;
  /** The carrier's final answer to the INVITE; null when it gave none (the caller vanished while it rang). */
  finalCode: number | null;
  /** When the carrier answered (its 200 OK to the INVITE), in ms. */
  answeredAt: number | null;
  /** The first BYE either way, in ms. */
  byeAt: number | null;
}

/** The header that would tie an INVITE to our call id; read when present (see docs/reliability.md). */
export const CALL_ID_HEADER = 'x-outdial-call-id';

/**
 * Parses sipp's message log: every message follows a dashed line with its date and time (sipp
 * writes the machine's local time; the soak only subtracts times of one log) and a line saying
 * whether sipp sent or received it.
 */
export function readCarrierLog(log: string): Map<string, CarrierCall> {
  const calls = new Map<string, CarrierCall>();
  const entries = log.split(/^-{5,} (\d{4}-\d{2}-\d{2}\s+\d{2}:\d{2}:\d{2}\.\d+)\s*$/m);
  for (let i = 1; i < entries.length; i += 2) {
    const at = Date.parse(`${(entries[i] ?? '').replace(/\s+/, 'T').slice(0, 23)}Z`);
    const text = entries[i + 1] ?? '';
    const sent = /^\S+ message sent/m.test(text);
    const sipCallId = /^Call-ID:\s*(\S+)/im.exec(text)?.[1];
    if (!sipCallId) continue;
    const start = /^(INVITE|BYE|SIP\/2\.0) (\S+)/m.exec(text);
    if (!start) continue;
    const cseq = /^CSeq:\s*\d+\s+(\S+)/im.exec(text)?.[1]?.toUpperCase();
    let call = calls.get(sipCallId);
    if (start[1] === 'INVITE' && !sent) {
      if (call) continue; // a retransmission
      call = {
        sipCallId,
        number: /^sip:([^@;]+)@/.exec(start[2] ?? '')?.[1] ?? '',
        ourCallId: new RegExp(`^${CALL_ID_HEADER}:\\s*(\\S+)`, 'im').exec(text)?.[1] ?? null,
        invitedAt: at,
        finalCode: null,
        answeredAt: null,
        byeAt: null,
      };
      calls.set(sipCallId, call);
      continue;
    }
    if (!call) continue;
    if (start[1] === 'BYE') {
      call.byeAt ??= at;
    } else if (sent && cseq === 'INVITE') {
      const code = Number(start[2]);
      if (code >= 200 && call.finalCode === null) {
        call.finalCode = code;
        if (code < 300) call.answeredAt = at;
      }
    }
  }
  return calls;
}

/** Seconds the carrier would bill for an answered call: from its 200 OK to the first BYE. */
export function answeredSeconds(call: CarrierCall): number {
  if (call.answeredAt === null || call.byeAt === null) return 0;
  return Math.max(0, Math.round((call.byeAt - call.answeredAt) / 1000));
}
