import { describe, expect, it } from 'vitest';
import { billedSeconds, billedSecondsOf, minutesCharged, minutesToCharge } from '../../src/domain/billing.js';

const answeredAt = new Date('2025-03-01T10:00:00.000Z');
const endedAfter = (ms: number) => new Date(answeredAt.getTime() + ms);

/** What the user's balance loses for a call answered at `answeredAt` and ended `ms` later. */
const minutesFor = (ms: number) => minutesCharged(billedSeconds(answeredAt, endedAfter(ms)));

describe('billing', () => {
  it('bills nothing for a call nobody answered', () => {
    expect(billedSeconds(null, endedAfter(45_000))).toBe(0);
    expect(minutesCharged(billedSeconds(null, endedAfter(45_000)))).toBe(0);
  });

  it('bills each started second from the answer, and at least 1 once answered', () => {
    expect(billedSeconds(answeredAt, answeredAt)).toBe(1);
    expect(billedSeconds(answeredAt, endedAfter(200))).toBe(1);
    expect(billedSeconds(answeredAt, endedAfter(1_000))).toBe(1);
    expect(billedSeconds(answeredAt, endedAfter(1_001))).toBe(2);
    expect(billedSeconds(answeredAt, endedAfter(59_400))).toBe(60);
    expect(billedSeconds(answeredAt, endedAfter(60_000))).toBe(60);
    // An end stamped before the answer (a clock that stepped back) is still a connected call.
    expect(billedSeconds(answeredAt, endedAfter(-3_000))).toBe(1);
  });

  it('bills a span given in seconds by the same rule', () => {
    expect(billedSecondsOf(0)).toBe(1);
    expect(billedSecondsOf(0.2)).toBe(1);
    expect(billedSecondsOf(7.5)).toBe(8);
    expect(billedSecondsOf(30)).toBe(30);
    for (const ms of [0, 200, 1_000, 1_001, 61_000, 90_500])
      expect(billedSecondsOf(ms / 1000)).toBe(billedSeconds(answeredAt, endedAfter(ms)));
  });

  it('charges each started minute of billed seconds', () => {
    expect(minutesFor(200)).toBe(1); // 0.2 s answered: 1 s, 1 minute
    expect(minutesFor(60_000)).toBe(1);
    expect(minutesFor(60_001)).toBe(2); // 61 s billed
    expect(minutesFor(61_000)).toBe(2);
    expect(minutesFor(120_000)).toBe(2);
    expect(minutesFor(120_500)).toBe(3);
    expect(minutesCharged(0)).toBe(0);
    expect(minutesCharged(null)).toBe(0);
  });

  it('charges connected time by started minute and nothing else', () => {
    expect(minutesToCharge('COMPLETED', 1, null)).toBe(1);
    expect(minutesToCharge('COMPLETED', 60, null)).toBe(1);
    expect(minutesToCharge('COMPLETED', 61, null)).toBe(2);
    expect(minutesToCharge('VOICEMAIL', 8, null)).toBe(1);
    expect(minutesToCharge('COMPLETED', 0, null)).toBe(0);
    expect(minutesToCharge('COMPLETED', null, null)).toBe(0);
    for (const status of ['BUSY', 'NO_ANSWER'] as const) expect(minutesToCharge(status, 30, null)).toBe(0);
    // A call that failed after the answer on the callee's side is billed by the carrier, and so here.
    expect(minutesToCharge('FAILED', 61, 'contact')).toBe(2);
    expect(minutesToCharge('FAILED', 0, 'contact')).toBe(0);
  });

  it('charges nothing for a call that failed on our side, whatever its connected time', () => {
    expect(minutesToCharge('FAILED', 61, 'service')).toBe(0);
    expect(minutesToCharge('FAILED', 1, 'service')).toBe(0);
    expect(minutesToCharge('COMPLETED', 30, 'service')).toBe(0);
  });
});
