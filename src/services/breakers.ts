/**
 * The circuit breakers (issue 24 §3): the one writer of the `breakers` table, and the one reader
 * the dispatcher, the single dial, the answered call and the health report ask whether a
 * dependency is up. The rules are domain/breaker.ts's; what each call depends on is
 * domain/dependencies.ts's.
 *
 * - Evidence: each call's end (the `breaker-evidence` reaction to `call.ended`) counts a service
 *   failure against the dependency its end reason names, or ends a closed breaker's streak.
 * - Probes: the `breaker-probes` loop asks each open breaker's dependency a real small question
 *   (the `DependencyProber` port) when its probe is due; an answer closes it and resumes every
 *   batch it paused, a failure keeps it open with the next probe further off.
 * - Reads come from a snapshot of the table at most `SNAPSHOT_MS` old, so no call path pays a
 *   query; a change this process makes is in its snapshot at once, another process's within that.
 */
import type { Logger } from 'pino';
import {
  afterFailure,
  afterSuccess,
  type Breaker,
  type BreakerPolicy,
  holdsCalls,
  probeFailed,
  probeSucceeded,
  probeTaken,
} from '../domain/breaker.js';
import {
  type Dependency,
  type DependencyKind,
  dependencyKindOfEnd,
  type EngineDependencyKind,
  engineDependencies,
  kindOfKey,
  type ModelDependencies,
  trunkDependency,
} from '../domain/dependencies.js';
import { failureSourceOf } from '../domain/failure.js';
import type { Metrics } from '../metrics.js';
import type { CallEndedEvent, Clock, DependencyGate, DependencyProber, DialAgent } from '../ports.js';
import type { Store } from '../store/index.js';

/** How old a snapshot of the breakers may be when read. */
export const SNAPSHOT_MS = 1000;
/** A probe's own timeout; its lease (half-open) lasts this and a margin. */
export const PROBE_TIMEOUT_MS = 5000;
const PROBE_LEASE_MS = PROBE_TIMEOUT_MS + 5000;
const STATE_VALUES = { closed: 0, 'half-open': 1, open: 2 } as const;

export interface BreakersOptions {
  store: Store;
  clock: Clock;
  logger: Logger;
  metrics: Metrics;
  policy: BreakerPolicy;
  /** The engine that holds this deployment's AI calls and the model endpoints configured. */
  engine: EngineDependencyKind;
  models: ModelDependencies;
}

/** A call's end, as the breakers read it. */
export interface EndEvidence {
  status: CallEndedEvent['status'];
  endedReason?: CallEndedEvent['endedReason'];
  failureSource?: CallEndedEvent['failureSource'];
  answeredAt: Date | null;
  error: string | null;
}

/** A call's agent and whether a conversation engine holds its calls here; null when it is gone. */
export type AgentOfCall = () => Promise<{ agent: Pick<DialAgent, 'sipTrunkId'>; heldHere: boolean } | null>;

export class Breakers implements DependencyGate {
  private snapshot = new Map<string, Breaker>();
  private readAt = Number.NEGATIVE_INFINITY;
  private reading: Promise<void> | null = null;
  /** The model dependencies of every AI call here. */
  readonly engineDependencies: Dependency[];

  constructor(private readonly options: BreakersOptions) {
    this.engineDependencies = engineDependencies(options.engine, options.models);
  }

  /**
   * What a call of `agent` needs: its SIP trunk, if it names one, and, when a conversation engine
   * holds its calls here (`heldHere`), the engine's model endpoints.
   */
  dependenciesOf(agent: Pick<DialAgent, 'sipTrunkId'>, heldHere: boolean): Dependency[] {
    const out = heldHere ? [...this.engineDependencies] : [];
    if (agent.sipTrunkId) out.push(trunkDependency({ id: agent.sipTrunkId }));
    return out;
  }

  /** The first of `dependencies` whose breaker holds calls back, from a snapshot at most SNAPSHOT_MS old. */
  async blocking(dependencies: Dependency[]): Promise<Breaker | null> {
    if (dependencies.length === 0) return null;
    await this.fresh();
    return this.blockingNow(dependencies);
  }

  /**
   * Whether the breaker of `key` holds calls back, read from the table now (not the snapshot); the
   * snapshot is refreshed with what was read.
   */
  async holdsCallsNow(key: string): Promise<boolean> {
    await this.read();
    const breaker = this.snapshot.get(key);
    return breaker !== undefined && holdsCalls(breaker);
  }

  /** The same from the snapshot as it is (no wait): for the answered call's first moment. */
  blockingNow(dependencies: Dependency[]): Breaker | null {
    if (this.options.clock.now().getTime() - this.readAt > SNAPSHOT_MS) void this.fresh().catch(() => {});
    for (const dependency of dependencies) {
      const breaker = this.snapshot.get(dependency.key);
      if (breaker && holdsCalls(breaker)) return breaker;
    }
    return null;
  }

  /** The DependencyGate of the answered call: the first engine dependency held back now. */
  unavailable(): { kind: Exclude<DependencyKind, 'trunk'>; name: string } | null {
    const breaker = this.blockingNow(this.engineDependencies);
    if (!breaker || breaker.kind === 'trunk') return null;
    return { kind: breaker.kind, name: breaker.name };
  }

  /** Every breaker, as the snapshot has it (refreshed when older than SNAPSHOT_MS). */
  async all(): Promise<Breaker[]> {
    await this.fresh();
    return [...this.snapshot.values()];
  }

  /** Sets the state gauge from a fresh read (the scrape). */
  async sample(): Promise<void> {
    for (const breaker of await this.all()) {
      this.options.metrics.breakerState.set(
        { dependency: breaker.key, kind: breaker.kind },
        STATE_VALUES[breaker.state],
      );
    }
  }

  /**
   * What one call's end tells its dependencies (the `breaker-evidence` reaction): a service
   * failure counts against the dependency its end reason names (a model, a speech server, the
   * trunk); any other end of an answered call ends the streaks of the engine's models, and any
   * other end at all the trunk's. The agent is read only when something may change: a service
   * failure, or a streak in progress.
   */
  async recordEnd(end: EndEvidence, agentOf: AgentOfCall): Promise<void> {
    const source = failureSourceOf(end);
    if (source === 'service') {
      const kind = dependencyKindOfEnd(end.endedReason, this.options.engine);
      if (!kind) return;
      const found = await agentOf();
      if (!found) return;
      const dependency = this.dependenciesOf(found.agent, found.heldHere).find((d) => d.kind === kind);
      if (dependency) await this.failed(dependency, end.error ?? end.endedReason ?? 'service failure');
      return;
    }
    await this.fresh();
    const streaks = [...this.snapshot.values()].filter((b) => b.state === 'closed' && b.failures > 0);
    if (streaks.length === 0) return;
    const found = await agentOf();
    if (!found) return;
    const worked = this.dependenciesOf(found.agent, found.heldHere).filter(
      (d) => d.kind === 'trunk' || end.answeredAt !== null,
    );
    for (const dependency of worked) {
      if (streaks.some((b) => b.key === dependency.key)) await this.worked(dependency);
    }
  }

  /** A service failure on `dependency`: counted, and the breaker opened at the threshold. */
  async failed(dependency: Dependency, error: string): Promise<Breaker> {
    const { store, clock, policy } = this.options;
    const [before, after] = await store.tx(async (repos) => {
      const breaker = await repos.breakers.lockOrCreate(dependency);
      const now = clock.now();
      const next = afterFailure(breaker, error.slice(0, 500), now, policy);
      await repos.breakers.save(next, now);
      return [breaker, next] as const;
    });
    this.remember(before, after);
    return after;
  }

  private async worked(dependency: Dependency): Promise<void> {
    const { store, clock } = this.options;
    const [before, after] = await store.tx(async (repos) => {
      const breaker = await repos.breakers.lockOrCreate(dependency);
      const now = clock.now();
      const next = afterSuccess(breaker, now);
      await repos.breakers.save(next, now);
      return [breaker, next] as const;
    });
    this.remember(before, after);
  }

  /**
   * Probes every breaker whose probe is due, one at a time: each is taken (half-open, leased) in
   * a transaction of its own, asked outside any transaction, and its answer recorded. Returns the
   * keys of the breakers that closed; `closed` is told each one (it resumes their batches).
   */
  async probeDue(prober: DependencyProber, closed: (key: string) => Promise<void>): Promise<string[]> {
    const { store, clock } = this.options;
    const due = await store.breakers.dueForProbe(clock.now());
    const recovered: string[] = [];
    for (const key of due) {
      const taken = await this.take(key);
      if (!taken) continue;
      // A model endpoint no longer configured (its URL changed since it opened) is no dependency
      // any more: closed, so the batches it paused resume and are judged by today's dependencies.
      if (taken.kind !== 'trunk' && !this.engineDependencies.some((d) => d.key === key)) {
        if ((await this.answered(taken, null, 0))?.state === 'closed') {
          recovered.push(key);
          await closed(key);
        }
        continue;
      }
      const started = performance.now();
      let failure: string | null = null;
      try {
        await prober.probe(taken, { timeoutMs: PROBE_TIMEOUT_MS });
      } catch (error) {
        failure = error instanceof Error ? error.message : String(error);
      }
      const latencyMs = Math.round((performance.now() - started) * 100) / 100;
      const after = await this.answered(taken, failure, latencyMs);
      if (after?.state === 'closed') {
        recovered.push(key);
        await closed(key);
      }
    }
    return recovered;
  }

  /** Takes a due probe: half-open under a lease, or null when another process took it first. */
  private async take(key: string): Promise<Breaker | null> {
    const { store, clock } = this.options;
    const kind = kindOfKey(key);
    if (!kind) return null;
    const result = await store.tx(async (repos) => {
      const now = clock.now();
      const breaker = await repos.breakers.lockOrCreate({ key, kind, name: key });
      if (!holdsCalls(breaker) || (breaker.nextProbeAt && breaker.nextProbeAt > now)) return null;
      const next = probeTaken(breaker, now, PROBE_LEASE_MS);
      await repos.breakers.save(next, now);
      return [breaker, next] as const;
    });
    if (!result) return null;
    this.remember(result[0], result[1]);
    return result[1];
  }

  private async answered(taken: Breaker, failure: string | null, latencyMs: number): Promise<Breaker | null> {
    const { store, clock, policy } = this.options;
    const result = await store.tx(async (repos) => {
      const now = clock.now();
      const breaker = await repos.breakers.lockOrCreate(taken);
      // Our lease ran out and another process probed since: its answer stands.
      if (breaker.state !== 'half-open') return null;
      const next =
        failure === null
          ? probeSucceeded(breaker, now, latencyMs)
          : probeFailed(breaker, failure.slice(0, 500), now, latencyMs, policy);
      await repos.breakers.save(next, now);
      return [breaker, next] as const;
    });
    if (!result) return null;
    this.remember(result[0], result[1]);
    return result[1];
  }

  /** Keeps a change in the snapshot, and counts and logs a change of state. */
  private remember(before: Breaker, after: Breaker): void {
    this.snapshot.set(after.key, after);
    if (before.state === after.state) return;
    const { metrics, logger } = this.options;
    metrics.breakerTransitions.inc({ dependency: after.key, kind: after.kind, to: after.state });
    metrics.breakerState.set({ dependency: after.key, kind: after.kind }, STATE_VALUES[after.state]);
    const fields = { dependency: after.key, from: before.state, to: after.state, error: after.lastError };
    if (after.state === 'open' && before.state === 'closed') {
      logger.warn(fields, `${after.name} is unavailable: its calls are held back until a probe answers`);
    } else if (after.state === 'closed') {
      logger.info({ ...fields, latencyMs: after.latencyMs }, `${after.name} answered a probe: calls resume`);
    } else {
      logger.debug(fields, 'breaker changed');
    }
  }

  /** Reads the table when the snapshot is older than SNAPSHOT_MS; concurrent callers share one read. */
  private async fresh(): Promise<void> {
    if (this.options.clock.now().getTime() - this.readAt <= SNAPSHOT_MS) return;
    if (!this.reading) {
      this.reading = this.read().finally(() => {
        this.reading = null;
      });
    }
    await this.reading;
  }

  /** Reads the whole table into the snapshot. */
  private async read(): Promise<void> {
    const rows = await this.options.store.breakers.all();
    this.snapshot = new Map(rows.map((row) => [row.key, row]));
    this.readAt = this.options.clock.now().getTime();
  }
}
