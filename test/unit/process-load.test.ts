import { afterEach, describe, expect, it } from 'vitest';
import { overloadRefusal } from '../../src/services/calls/intake.js';
import { ProcessLoad } from '../../src/voice/load.js';

/**
 * The process's load gauge: AI calls counted from a session's start to its end, and the event
 * loop's lag read per window against its bound; what the dispatcher and the session read of it.
 */

const gauges: ProcessLoad[] = [];
afterEach(() => {
  for (const gauge of gauges.splice(0)) gauge.close();
});

function gauge(options: ConstructorParameters<typeof ProcessLoad>[0]): ProcessLoad {
  const built = new ProcessLoad(options);
  gauges.push(built);
  return built;
}

describe('ProcessLoad', () => {
  it('counts AI calls from start to end, once each, and says when one is past the bound', () => {
    const load = gauge({ maxAiCalls: 2, maxLagMs: 150, measure: () => 0, windowMs: 60_000 });
    const first = load.startAiCall('call_1');
    const second = load.startAiCall('call_2');
    expect([first.over, second.over]).toEqual([false, false]);
    expect(load.aiCalls).toBe(2);
    expect(load.holds('call_1')).toBe(true);
    expect(load.overloaded).toBe(true);

    const third = load.startAiCall('call_3');
    expect(third.over).toBe(true);
    expect(load.aiCalls).toBe(3);

    third.end();
    third.end();
    first.end();
    expect(load.aiCalls).toBe(1);
    expect(load.holds('call_1')).toBe(false);
    expect(load.overloaded).toBe(false);
    expect(load.startAiCall('call_4').over).toBe(false);
  });

  it('is lagging while the last window read past the bound, and recovers with the next', () => {
    const windows = [40, 151, 150, 30];
    const load = gauge({
      maxAiCalls: 8,
      maxLagMs: 150,
      measure: () => windows.shift() ?? 0,
      windowMs: 60_000,
    });
    expect(load.lagging).toBe(false);
    load.sample();
    expect([load.lagMs, load.lagging, load.overloaded]).toEqual([40, false, false]);
    load.sample();
    expect([load.lagMs, load.lagging, load.overloaded]).toEqual([151, true, true]);
    load.sample();
    expect([load.lagMs, load.lagging]).toEqual([150, false]);
    load.sample();
    expect(load.lagging).toBe(false);
  });

  it('logs a change of state, not every call', () => {
    const lines: string[] = [];
    const logger = {
      warn: (_: unknown, message: string) => lines.push(`warn ${message}`),
      info: (_: unknown, message: string) => lines.push(`info ${message}`),
      debug: (_: unknown, message: string) => lines.push(`debug ${message}`),
    } as unknown as NonNullable<ConstructorParameters<typeof ProcessLoad>[0]['logger']>;
    const windows = [500, 10];
    const load = gauge({
      maxAiCalls: 1,
      maxLagMs: 150,
      measure: () => windows.shift() ?? 0,
      windowMs: 60_000,
      logger,
    });
    load.startAiCall('call_1').end();
    load.startAiCall('call_2').end();
    load.sample();
    load.sample();
    load.sample();
    expect(lines).toEqual([
      'debug AI calls at their bound: this worker claims no more AI calls',
      'debug AI calls under their bound: claiming again',
      'debug AI calls at their bound: this worker claims no more AI calls',
      'debug AI calls under their bound: claiming again',
      'warn event loop lagging past its bound: this worker claims no calls',
      'info event loop back under its bound: claiming again',
    ]);
  });

  it('measures a blocked event loop with its real ticks', async () => {
    const load = gauge({ maxAiCalls: 8, maxLagMs: 100, windowMs: 200 });
    // A window with samples first (no lateness is known before the first tick), then the
    // loop held for 300 ms: the window that holds that delay reads it.
    await expect.poll(() => load.lagMs, { timeout: 5000, interval: 5 }).toBeGreaterThan(0);
    const until = performance.now() + 300;
    while (performance.now() < until) {
      // busy: the event loop cannot turn
    }
    await expect.poll(() => load.lagMs, { timeout: 5000, interval: 5 }).toBeGreaterThan(100);
    expect(load.lagging).toBe(true);
  });

  it('counts a call placed here as taking its place while it rings, once, until answered or released', () => {
    const load = gauge({ maxAiCalls: 2, maxLagMs: 150, measure: () => 0, windowMs: 60_000 });
    expect(load.aiRoom).toBe(2);
    load.reserve('call_1');
    load.reserve('call_1');
    expect(load.aiRoom).toBe(1);
    // Answered: the ringing place becomes the AI call's, not a second one.
    const answered = load.startAiCall('call_1');
    expect(answered.over).toBe(false);
    expect(load.aiCalls).toBe(1);
    expect(load.aiRoom).toBe(1);
    // Released after its answer (its call.ended) changes nothing; the session's end frees it.
    load.release('call_1');
    expect(load.aiRoom).toBe(1);
    load.reserve('call_2');
    expect(load.aiRoom).toBe(0);
    // Ended unanswered: its place is free again.
    load.release('call_2');
    expect(load.aiRoom).toBe(1);
    answered.end();
    expect(load.aiRoom).toBe(2);
  });
});

describe('overloadRefusal (a single AI dial)', () => {
  it('refuses with 503 OVERLOADED and a retry hint when no AI place is left or the loop lags, and not otherwise', () => {
    let lag = 0;
    const load = gauge({ maxAiCalls: 1, maxLagMs: 150, measure: () => lag, windowMs: 60_000 });
    expect(overloadRefusal(load)).toBeNull();
    load.reserve('call_1');
    const full = overloadRefusal(load);
    expect(full).toMatchObject({ code: 'OVERLOADED', details: { retryAfterSeconds: 5 } });
    expect(full?.message).toContain('OUTDIAL_MAX_AI_CALLS');
    load.release('call_1');
    expect(overloadRefusal(load)).toBeNull();
    lag = 400;
    load.sample();
    expect(overloadRefusal(load)?.message).toContain('lagging');
  });
});
