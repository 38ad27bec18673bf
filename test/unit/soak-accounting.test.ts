import { describe, expect, it } from 'vitest';
import { type AttemptRow, account } from '../../scripts/soak/accounting.js';
import { answeredSeconds, readCarrierLog } from '../../scripts/soak/carrier-log.js';

/** One message as sipp's -trace_msg writes it: a dashed line with the time, the direction, the message. */
function entry(time: string, direction: 'sent' | 'received', lines: string[]): string {
  return `----------------------------------------------- 2026-11-24 ${time}\nUDP message ${direction} [100] bytes :\n\n${lines.join('\n')}\n\n`;
}

const invite = (time: string, number: string, sipCallId: string, extra: string[] = []) =>
  entry(time, 'received', [
    `INVITE sip:${number}@127.0.0.1:5070 SIP/2.0`,
    `Call-ID: ${sipCallId}`,
    'CSeq: 1 INVITE',
    ...extra,
  ]);
const final = (time: string, code: number, sipCallId: string) =>
  entry(time, 'sent', [`SIP/2.0 ${code} Reason`, `Call-ID: ${sipCallId}`, 'CSeq: 1 INVITE']);
const bye = (time: string, sipCallId: string) =>
  entry(time, 'sent', ['BYE sip:outdial@127.0.0.1:5080 SIP/2.0', `Call-ID: ${sipCallId}`, 'CSeq: 1 BYE']);

const row = (
  id: string,
  phoneNumber: string,
  status: string,
  minutesCharged = 0,
  error: string | null = null,
  failureSource: string | null = null,
) => ({ id, phoneNumber, status, error, minutesCharged, failureSource }) satisfies AttemptRow;

describe("the soak's accounting from sipp's message log", () => {
  const log = [
    // +1 answered for 65 s (two started minutes), charged 2: right.
    invite('10:00:00.000000', '+12122000010', 'a'),
    invite('10:00:00.500000', '+12122000010', 'a'), // a retransmission, not a second dial
    final('10:00:01.000000', 200, 'a'),
    invite('10:00:01.500000', '+12122000010', 'a'), // and one crossing the 200 OK
    bye('10:01:06.000000', 'a'),
    // +2 placed twice for one attempt (the second INVITE after a crash), both answered 5 s.
    invite('10:00:02.000000', '+12122000020', 'b1'),
    final('10:00:02.100000', 200, 'b1'),
    bye('10:00:07.100000', 'b1'),
    invite('10:00:40.000000', '+12122000020', 'b2'),
    final('10:00:40.100000', 200, 'b2'),
    bye('10:00:45.100000', 'b2'),
    // +3 refused for capacity once, then busy; a retry after busy is busy again: two attempts.
    invite('10:00:03.000000', '+12122000034', 'c1'),
    final('10:00:03.010000', 503, 'c1'),
    invite('10:00:04.000000', '+12122000034', 'c2'),
    final('10:00:04.010000', 486, 'c2'),
    invite('10:00:10.000000', '+12122000034', 'c3'),
    final('10:00:10.010000', 486, 'c3'),
    // +5 only ever refused for capacity: its one attempt ended FAILED without a placed INVITE.
    invite('10:00:05.000000', '+12122000057', 'e1'),
    final('10:00:05.010000', 503, 'e1'),
  ].join('');

  it('reads one call per SIP Call-ID with its number, final answer and answered span', () => {
    const calls = readCarrierLog(log);
    expect(calls.size).toBe(7);
    const a = calls.get('a');
    expect(a).toMatchObject({ number: '+12122000010', finalCode: 200, ourCallId: null });
    expect(a && answeredSeconds(a)).toBe(65);
    expect(calls.get('c1')?.finalCode).toBe(503);
  });

  it('counts lost contacts, second dials, attempts without a dial, stuck calls and minutes', () => {
    const totals = account({
      // +4 was accepted and ingested but never reached the carrier; +6 was never ingested.
      accepted: [
        '+12122000010',
        '+12122000020',
        '+12122000034',
        '+12122000040',
        '+12122000057',
        '+12122000060',
      ],
      ingested: new Set(['+12122000010', '+12122000020', '+12122000034', '+12122000040', '+12122000057']),
      contactsNotDone: 1,
      batchesNotDone: 0,
      attempts: [
        row('call_a', '+12122000010', 'COMPLETED', 2),
        row('call_b', '+12122000020', 'COMPLETED', 1),
        row('call_c1', '+12122000034', 'BUSY'),
        row('call_c2', '+12122000034', 'BUSY'),
        // Cut off by a crash before its INVITE: its attempt is used, yet the carrier never saw it.
        row(
          'call_d',
          '+12122000040',
          'FAILED',
          0,
          'The call was cut off: the process that placed it stopped',
        ),
        row('call_e', '+12122000057', 'FAILED', 0, 'The carrier had no capacity (SIP 503) after 6 tries'),
        row('call_f', '+12122000099', 'ONGOING'),
      ],
      carrier: [...readCarrierLog(log).values()],
      balanceTaken: 3,
    });
    expect(totals).toMatchObject({
      accepted: 6,
      lost: 2,
      notIngested: 1,
      dialedTwice: 1,
      numbersDialedTwice: 1,
      attemptsWithoutDial: 2,
      stuck: 2,
      answeredCalls: 3,
      answeredSeconds: 75,
      answeredMinutes: 4,
      chargedMinutes: 3,
      balanceTaken: 3,
      underCharged: 1,
      overCharged: 0,
    });
  });

  it('links INVITEs to our call ids exactly when they carry them', () => {
    const tagged = [
      invite('10:00:00.000000', '+13122000010', 'x1', ['X-Outdial-Call-Id: call_1']),
      final('10:00:00.100000', 486, 'x1'),
      invite('10:00:05.000000', '+13122000010', 'x2', ['X-Outdial-Call-Id: call_2']),
      final('10:00:05.100000', 486, 'x2'),
      invite('10:00:06.000000', '+13122000010', 'x3', ['X-Outdial-Call-Id: call_2']),
      final('10:00:06.100000', 486, 'x3'),
    ].join('');
    const totals = account({
      accepted: ['+13122000010'],
      ingested: new Set(['+13122000010']),
      contactsNotDone: 0,
      batchesNotDone: 0,
      // Three attempts in the database, yet call_2 went out twice and a third attempt never did.
      attempts: [
        row('call_1', '+13122000010', 'BUSY'),
        row('call_2', '+13122000010', 'BUSY'),
        row('call_3', '+13122000010', 'FAILED', 0, 'cut off'),
      ],
      carrier: [...readCarrierLog(tagged).values()],
      balanceTaken: 0,
    });
    expect(totals).toMatchObject({ lost: 0, dialedTwice: 1, attemptsWithoutDial: 1, stuck: 0 });
  });

  it('owes nothing for an answered call that failed on our side, and counts it apart', () => {
    const tagged = [
      // call_1 answered 65 s, then its process was cut off: ours, not charged.
      invite('10:00:00.000000', '+13122000020', 'y1', ['X-Outdial-Call-Id: call_1']),
      final('10:00:01.000000', 200, 'y1'),
      bye('10:01:06.000000', 'y1'),
      // call_2, the same contact again, answered 30 s and charged 1.
      invite('10:02:00.000000', '+13122000020', 'y2', ['X-Outdial-Call-Id: call_2']),
      final('10:02:01.000000', 200, 'y2'),
      bye('10:02:31.000000', 'y2'),
    ].join('');
    const totals = account({
      accepted: ['+13122000020'],
      ingested: new Set(['+13122000020']),
      contactsNotDone: 0,
      batchesNotDone: 0,
      attempts: [
        row('call_1', '+13122000020', 'FAILED', 0, 'cut off after 65 s', 'service'),
        row('call_2', '+13122000020', 'COMPLETED', 1),
      ],
      carrier: [...readCarrierLog(tagged).values()],
      balanceTaken: 1,
    });
    expect(totals).toMatchObject({
      answeredCalls: 2,
      answeredMinutes: 1,
      ourFailureCalls: 1,
      ourFailureMinutes: 2,
      chargedMinutes: 1,
      underCharged: 0,
      overCharged: 0,
      dialedTwice: 0,
    });
  });
});
