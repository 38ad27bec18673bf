import { describe, expect, it } from 'vitest';
import { TrunkGate } from '../../src/adapters/voice/sip/trunk-gate.js';

/** Starts `count` calls through the gate, each holding its place for `holdMs`; returns start times. */
async function run(gate: TrunkGate, count: number, holdMs: number) {
  const starts: number[] = [];
  let peak = 0;
  const t0 = Date.now();
  await Promise.all(
    Array.from({ length: count }, async () => {
      await gate.acquire();
      starts.push(Date.now() - t0);
      peak = Math.max(peak, gate.inUse);
      await new Promise((resolve) => setTimeout(resolve, holdMs));
      gate.release();
    }),
  );
  return { starts: starts.sort((a, b) => a - b), peak };
}

describe('a SIP trunk gate', () => {
  it('holds the concurrency cap and lets waiting calls in as others end', async () => {
    const gate = new TrunkGate({ maxCallsPerSecond: null, maxConcurrentCalls: 3 });
    const { starts, peak } = await run(gate, 9, 100);
    expect(peak).toBe(3);
    // Three waves of three: the fourth call starts only when one of the first three ended.
    expect(starts[3]).toBeGreaterThanOrEqual(95);
    expect(starts[6]).toBeGreaterThanOrEqual(190);
    expect(gate.inUse).toBe(0);
  });

  it('spaces INVITEs by the calls-per-second cap, with no burst', async () => {
    const gate = new TrunkGate({ maxCallsPerSecond: 20, maxConcurrentCalls: null });
    const { starts } = await run(gate, 6, 0);
    for (let i = 1; i < starts.length; i++) {
      expect((starts[i] ?? 0) - (starts[i - 1] ?? 0)).toBeGreaterThanOrEqual(45);
    }
  });

  it('backs off after capacity answers: pauses, halves the rate, and recovers on answers', async () => {
    const gate = new TrunkGate({ maxCallsPerSecond: 10, maxConcurrentCalls: null });
    expect(gate.currentRate).toBe(10);
    gate.capacity();
    expect(gate.currentRate).toBe(5);
    const t0 = Date.now();
    await gate.acquire();
    expect(Date.now() - t0).toBeGreaterThanOrEqual(950); // the first pause is a second
    gate.release();
    gate.capacity();
    expect(gate.currentRate).toBe(2.5);
    gate.accepted();
    expect(gate.currentRate).toBeCloseTo(3.125);
    for (let i = 0; i < 20; i++) gate.accepted();
    expect(gate.currentRate).toBe(10);
    gate.close();
  });

  it('lets a waiting call give up, and rejects the waiting calls when it closes', async () => {
    const gate = new TrunkGate({ maxCallsPerSecond: null, maxConcurrentCalls: 1 });
    await gate.acquire();
    const stop = new AbortController();
    const abandoned = gate.acquire(stop.signal);
    const closed = gate.acquire();
    expect(gate.waiting).toBe(2);
    stop.abort();
    await expect(abandoned).rejects.toThrow('stopped while waiting');
    gate.close();
    await expect(closed).rejects.toThrow('closing');
  });

  it('applies new limits to the calls still waiting', async () => {
    const gate = new TrunkGate({ maxCallsPerSecond: null, maxConcurrentCalls: 1 });
    await gate.acquire();
    let second = false;
    const next = gate.acquire().then(() => {
      second = true;
    });
    expect(gate.waiting).toBe(1);
    await Promise.resolve();
    expect(second).toBe(false);
    gate.setLimits({ maxCallsPerSecond: null, maxConcurrentCalls: 2 });
    await next;
    expect(gate.inUse).toBe(2);
  });
});
