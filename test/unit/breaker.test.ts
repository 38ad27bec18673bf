import { describe, expect, it } from 'vitest';
import {
  afterFailure,
  afterSuccess,
  type BreakerPolicy,
  closedBreaker,
  holdsCalls,
  probeDelayMs,
  probeFailed,
  probeSucceeded,
  probeTaken,
} from '../../src/domain/breaker.js';
import {
  dependencyKindOfEnd,
  engineDependencies,
  engineKindOf,
  modelDependency,
} from '../../src/domain/dependencies.js';

const policy: BreakerPolicy = { threshold: 3, windowMs: 60_000, probeMs: 2_000, probeMaxMs: 15_000 };
const llm = modelDependency('llm', { url: 'http://user:pw@10.0.0.5:8000/v1/?x=1', model: 'm' });
const at = (s: number) => new Date(Date.UTC(2026, 11, 2, 12, 0, s));

describe('a circuit breaker', () => {
  it('is keyed by the endpoint without its credentials or query', () => {
    expect(llm.key).toBe('llm:http://10.0.0.5:8000/v1');
    expect(llm.name).toBe('llm m at http://10.0.0.5:8000/v1');
  });

  it('opens at the third service failure within the window, with a probe due after probeMs', () => {
    let b = closedBreaker(llm);
    b = afterFailure(b, 'HTTP 503', at(0), policy);
    b = afterFailure(b, 'HTTP 503', at(10), policy);
    expect(b.state).toBe('closed');
    expect(holdsCalls(b)).toBe(false);
    b = afterFailure(b, 'HTTP 503', at(20), policy);
    expect(b.state).toBe('open');
    expect(holdsCalls(b)).toBe(true);
    expect(b.openedAt).toEqual(at(20));
    expect(b.nextProbeAt).toEqual(at(22));
    expect(b.lastError).toBe('HTTP 503');
  });

  it('starts a new streak when the failures are further apart than the window', () => {
    let b = closedBreaker(llm);
    b = afterFailure(b, 'e', at(0), policy);
    b = afterFailure(b, 'e', at(30), policy);
    b = afterFailure(b, 'e', new Date(at(0).getTime() + 61_000), policy);
    expect(b.state).toBe('closed');
    expect(b.failures).toBe(1);
  });

  it('ends a streak on a call that went well, but stays open on one while open', () => {
    let b = afterFailure(afterFailure(closedBreaker(llm), 'e', at(0), policy), 'e', at(1), policy);
    b = afterSuccess(b, at(2));
    expect(b.failures).toBe(0);
    b = afterFailure(b, 'e', at(3), policy);
    b = afterFailure(b, 'e', at(4), policy);
    expect(b.state).toBe('closed');
    b = afterFailure(b, 'e', at(5), policy);
    expect(b.state).toBe('open');
    const after = afterSuccess(b, at(6));
    expect(after.state).toBe('open');
    expect(after.lastSuccessAt).toEqual(at(6));
  });

  it('goes half-open under a probe, closes on its answer, and backs off on its failure', () => {
    let b = closedBreaker(llm);
    for (const s of [0, 1, 2]) b = afterFailure(b, 'down', at(s), policy);
    const taken = probeTaken(b, at(4), 10_000);
    expect(taken.state).toBe('half-open');
    expect(holdsCalls(taken)).toBe(true);
    const failed = probeFailed(taken, 'connect ECONNREFUSED', at(5), 3, policy);
    expect(failed.state).toBe('open');
    expect(failed.probes).toBe(1);
    expect(failed.nextProbeAt).toEqual(at(9));
    const closed = probeSucceeded(probeTaken(failed, at(9), 10_000), at(10), 42);
    expect(closed.state).toBe('closed');
    expect(closed.failures).toBe(0);
    expect(closed.openedAt).toBeNull();
    expect(closed.latencyMs).toBe(42);
  });

  it('doubles the wait between probes up to probeMaxMs', () => {
    expect([0, 1, 2, 3, 4, 40].map((n) => probeDelayMs(n, policy))).toEqual([
      2_000, 4_000, 8_000, 15_000, 15_000, 15_000,
    ]);
  });
});

describe("a call's dependencies", () => {
  const models = {
    llm: { url: 'http://llm/v1', model: 'l' },
    stt: { url: 'http://stt/v1', model: 's' },
    tts: null,
    realtime: { url: 'ws://rt/v1', model: 'r' },
  };

  it('follow the engine OUTDIAL_CONVERSATION_ENGINE names', () => {
    expect(engineKindOf('auto', 'http://llm/v1')).toBe('llm');
    expect(engineKindOf('', undefined)).toBe('scripted');
    expect(engineKindOf('offline', 'http://llm/v1')).toBe('scripted');
    expect(engineKindOf('./my-engine.mjs', null)).toBe('custom');
    expect(engineDependencies('llm', models).map((d) => d.key)).toEqual([
      'llm:http://llm/v1',
      'stt:http://stt/v1',
    ]);
    expect(engineDependencies('realtime', models).map((d) => d.key)).toEqual(['realtime:ws://rt/v1']);
    expect(engineDependencies('scripted', models).map((d) => d.key)).toEqual(['stt:http://stt/v1']);
    expect(engineDependencies('custom', models)).toEqual([]);
  });

  it('an end reason names the dependency it failed on', () => {
    expect(dependencyKindOfEnd('model-unavailable', 'llm')).toBe('llm');
    expect(dependencyKindOfEnd('model-unavailable', 'realtime')).toBe('realtime');
    expect(dependencyKindOfEnd('tts-unavailable', 'llm')).toBe('tts');
    expect(dependencyKindOfEnd('trunk-unreachable', 'llm')).toBe('trunk');
    expect(dependencyKindOfEnd('overloaded', 'llm')).toBeNull();
    expect(dependencyKindOfEnd('callee-hung-up', 'llm')).toBeNull();
  });
});
