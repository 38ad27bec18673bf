/**
 * The circuit breaker of one dependency (issue 24 §3), as pure rules: what a service failure, a
 * success and a probe's answer do to it. The breakers themselves live in the shared database
 * (`breakers`), written by `Breakers` (services/breakers.ts) alone.
 *
 * - `closed`: calls go through; consecutive service failures are counted from the first of the
 *   streak, and `threshold` of them within `windowMs` open it.
 * - `open`: no new call that depends on it is placed; a probe is due at `nextProbeAt`.
 * - `half-open`: a probe is in flight (leased until `nextProbeAt`); calls are still held back.
 *   Its success closes the breaker; its failure opens it again, with the next probe later
 *   (doubling from `probeMs` up to `probeMaxMs`).
 *
 * Only a probe closes an open breaker: a call that ends well while the breaker is open may have
 * talked to the dependency before it failed, so it proves nothing about now.
 */
import type { Dependency, DependencyKind } from './dependencies.js';

export const BREAKER_STATES = ['closed', 'open', 'half-open'] as const;
export type BreakerState = (typeof BREAKER_STATES)[number];

export interface BreakerPolicy {
  /** OUTDIAL_BREAKER_THRESHOLD: consecutive service failures that open a breaker (default 3). */
  threshold: number;
  /** OUTDIAL_BREAKER_WINDOW_MS: the streak counts only failures this close to its first (default 60 000). */
  windowMs: number;
  /** OUTDIAL_BREAKER_PROBE_MS: the first probe this long after the opening (default 2 000). */
  probeMs: number;
  /** OUTDIAL_BREAKER_PROBE_MAX_MS: the longest wait between probes (default 15 000). */
  probeMaxMs: number;
}

export const DEFAULT_BREAKER_POLICY: BreakerPolicy = {
  threshold: 3,
  windowMs: 60_000,
  probeMs: 2_000,
  probeMaxMs: 15_000,
};

export interface Breaker {
  key: string;
  kind: DependencyKind;
  name: string;
  state: BreakerState;
  /** Consecutive service failures of the current streak (closed), or since the opening. */
  failures: number;
  streakStartedAt: Date | null;
  openedAt: Date | null;
  /** Open: when the next probe is due; half-open: when the probe's lease ends. */
  nextProbeAt: Date | null;
  /** Probes that failed since the opening (the backoff's exponent). */
  probes: number;
  lastSuccessAt: Date | null;
  lastFailureAt: Date | null;
  lastError: string | null;
  /** The last probe's round trip. */
  latencyMs: number | null;
}

/** A breaker that holds calls back: open, or half-open with its probe in flight. */
export function holdsCalls(breaker: Pick<Breaker, 'state'>): boolean {
  return breaker.state !== 'closed';
}

/** What a closed breaker has nothing of: a streak, an opening, a probe due. */
const NOTHING_COUNTED = {
  state: 'closed',
  failures: 0,
  streakStartedAt: null,
  openedAt: null,
  nextProbeAt: null,
  probes: 0,
} as const satisfies Partial<Breaker>;

export function closedBreaker(dependency: Dependency): Breaker {
  return {
    key: dependency.key,
    kind: dependency.kind,
    name: dependency.name,
    ...NOTHING_COUNTED,
    lastSuccessAt: null,
    lastFailureAt: null,
    lastError: null,
    latencyMs: null,
  };
}

/** The wait before probe number `probes + 1` after an opening: doubling, capped. */
export function probeDelayMs(probes: number, policy: BreakerPolicy): number {
  return Math.min(policy.probeMs * 2 ** Math.min(probes, 30), policy.probeMaxMs);
}

/** A call failed on this dependency: the streak grows, and opens the breaker at the threshold. */
export function afterFailure(breaker: Breaker, error: string, now: Date, policy: BreakerPolicy): Breaker {
  const base = { ...breaker, lastFailureAt: now, lastError: error };
  if (breaker.state !== 'closed') return { ...base, failures: breaker.failures + 1 };
  const fresh =
    breaker.failures === 0 ||
    breaker.streakStartedAt === null ||
    now.getTime() - breaker.streakStartedAt.getTime() > policy.windowMs;
  const failures = fresh ? 1 : breaker.failures + 1;
  const streakStartedAt = fresh ? now : breaker.streakStartedAt;
  if (failures < policy.threshold) return { ...base, failures, streakStartedAt };
  return {
    ...base,
    state: 'open',
    failures,
    streakStartedAt,
    openedAt: now,
    probes: 0,
    nextProbeAt: new Date(now.getTime() + probeDelayMs(0, policy)),
  };
}

/**
 * A call went well on this dependency: a closed breaker's streak ends. An open one stays open
 * (see above); its last success is still recorded.
 */
export function afterSuccess(breaker: Breaker, now: Date): Breaker {
  if (breaker.state !== 'closed') return { ...breaker, lastSuccessAt: now };
  return { ...breaker, failures: 0, streakStartedAt: null, lastSuccessAt: now };
}

/** A probe is taken: half-open, leased for `leaseMs` (another process may probe after it). */
export function probeTaken(breaker: Breaker, now: Date, leaseMs: number): Breaker {
  return { ...breaker, state: 'half-open', nextProbeAt: new Date(now.getTime() + leaseMs) };
}

/** A probe answered: closed, with nothing counted against it. */
export function probeSucceeded(breaker: Breaker, now: Date, latencyMs: number): Breaker {
  return { ...breaker, ...NOTHING_COUNTED, lastSuccessAt: now, latencyMs };
}

/** A probe failed: open again, the next probe further off. */
export function probeFailed(
  breaker: Breaker,
  error: string,
  now: Date,
  latencyMs: number,
  policy: BreakerPolicy,
): Breaker {
  const probes = breaker.probes + 1;
  return {
    ...breaker,
    state: 'open',
    openedAt: breaker.openedAt ?? now,
    probes,
    nextProbeAt: new Date(now.getTime() + probeDelayMs(probes, policy)),
    lastFailureAt: now,
    lastError: error,
    latencyMs,
  };
}
