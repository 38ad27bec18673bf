import { describe, expect, it } from 'vitest';
import { minutesToCharge } from '../../src/domain/billing.js';

describe('billing', () => {
  it('charges connected time by started minute and nothing else', () => {
    expect(minutesToCharge('COMPLETED', 1)).toBe(1);
    expect(minutesToCharge('COMPLETED', 60)).toBe(1);
    expect(minutesToCharge('COMPLETED', 61)).toBe(2);
    expect(minutesToCharge('VOICEMAIL', 8)).toBe(1);
    expect(minutesToCharge('COMPLETED', 0)).toBe(0);
    expect(minutesToCharge('COMPLETED', null)).toBe(0);
    for (const status of ['BUSY', 'NO_ANSWER'] as const) expect(minutesToCharge(status, 30)).toBe(0);
    // A call that failed or was cut off after the answer is billed by the carrier, and so here.
    expect(minutesToCharge('FAILED', 61)).toBe(2);
    expect(minutesToCharge('FAILED', 0)).toBe(0);
  });
});
