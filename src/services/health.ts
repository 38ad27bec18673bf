import type { Breaker, BreakerState } from '../domain/breaker.js';
import { type Dependency, trunkDependency } from '../domain/dependencies.js';
import type { DependencyProber, LiveCache } from '../ports.js';

export interface DependencyHealth {
  status: 'up' | 'down';
  kind: string;
  latencyMs: number;
  error?: string;
}

/** One outside dependency of the user's calls (a model endpoint, a SIP trunk) in the health report. */
export interface OutsideDependencyHealth {
  /** The breaker key: `llm:<url>`, `stt:<url>`, `tts:<url>`, `realtime:<url>`, `trunk:<id>`. */
  key: string;
  kind: Dependency['kind'];
  name: string;
  /** `down` while its breaker holds calls or its last check failed; `unknown` when never checked. */
  status: 'up' | 'down' | 'unknown';
  breaker: BreakerState;
  /** When the breaker opened (null while closed). */
  since: string | null;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  lastError: string | null;
  /** The round trip of the last check (this report's probe, or the breaker's). */
  latencyMs: number | null;
  checkedAt: string | null;
}

/** A dependency of the user's calls that is down now (its breaker holds calls back). */
export interface Outage {
  key: string;
  kind: Dependency['kind'];
  name: string;
  since: string | null;
  lastError: string | null;
}

export interface HealthReport {
  status: 'ok' | 'degraded';
  database: DependencyHealth;
  cache: DependencyHealth;
  /** The model endpoints this deployment's calls use and the user's SIP trunks (issue 24 §4). */
  dependencies: OutsideDependencyHealth[];
  uptimeSeconds: number;
  version: string;
}

/** A dependency that does not answer within this time counts as down: a health probe must not hang. */
const PROBE_TIMEOUT_MS = 2000;
/** A dependency's check is reused this long: the report is polled, and a model request costs. */
const CHECK_TTL_MS = 30_000;

interface Check {
  at: Date;
  latencyMs: number;
  error: string | null;
}

export class HealthService {
  private readonly startedAt = Date.now();
  private readonly checks = new Map<string, Promise<Check>>();
  private readonly checkedAt = new Map<string, number>();

  constructor(
    private readonly options: {
      /** The database's kind and its round trip (DatabaseHandle). */
      database: { kind: string; ping(): Promise<void> };
      cache: LiveCache;
      cacheKind: string;
      version: string;
      /** The breakers (services/breakers.ts) and the engine's model dependencies. */
      breakers?: { engineDependencies: Dependency[]; all(): Promise<Breaker[]> };
      /** The user's SIP trunks. */
      trunksOf?: (userId: string) => Promise<Array<{ id: string; host: string; port: number }>>;
      /** Checks a dependency for real (adapters/probes.ts); without it, only the breakers speak. */
      prober?: DependencyProber | undefined;
    },
  ) {}

  /** The database and the cache: whether this process can serve at all (`/readyz`). */
  async core(): Promise<Pick<HealthReport, 'database' | 'cache'> & { ok: boolean }> {
    const [database, cache] = await Promise.all([
      probe(this.options.database.kind, () => this.options.database.ping()),
      probe(this.options.cacheKind, () => this.options.cache.ping()),
    ]);
    return { database, cache, ok: database.status === 'up' && cache.status === 'up' };
  }

  /** The whole report for one user: the core, and each outside dependency of their calls. */
  async report(userId: string): Promise<HealthReport> {
    const [core, dependencies] = await Promise.all([this.core(), this.dependencies(userId)]);
    const down = dependencies.some((dependency) => dependency.status === 'down');
    return {
      status: core.ok && !down ? 'ok' : 'degraded',
      database: core.database,
      cache: core.cache,
      dependencies,
      uptimeSeconds: Math.round((Date.now() - this.startedAt) / 1000),
      version: this.options.version,
    };
  }

  /**
   * The user's dependencies whose breakers hold calls back now, from the breakers alone (no
   * probe): the dashboard's banner.
   */
  async outages(userId: string): Promise<Outage[]> {
    const { breakers, trunksOf } = this.options;
    if (!breakers) return [];
    const open = (await breakers.all()).filter((breaker) => breaker.state !== 'closed');
    if (open.length === 0) return [];
    const trunks = trunksOf ? await trunksOf(userId) : [];
    const mine = new Set([
      ...breakers.engineDependencies.map((dependency) => dependency.key),
      ...trunks.map((trunk) => trunkDependency(trunk).key),
    ]);
    return open
      .filter((breaker) => mine.has(breaker.key))
      .map((breaker) => ({
        key: breaker.key,
        kind: breaker.kind,
        name: breaker.name,
        since: breaker.openedAt?.toISOString() ?? null,
        lastError: breaker.lastError,
      }));
  }

  private async dependencies(userId: string): Promise<OutsideDependencyHealth[]> {
    const { breakers, trunksOf } = this.options;
    if (!breakers) return [];
    const trunks = trunksOf ? await trunksOf(userId) : [];
    const wanted = [...breakers.engineDependencies, ...trunks.map((trunk) => trunkDependency(trunk))];
    const states = new Map((await breakers.all()).map((breaker) => [breaker.key, breaker]));
    return Promise.all(
      wanted.map(async (dependency) => this.describe(dependency, states.get(dependency.key))),
    );
  }

  private async describe(
    dependency: Dependency,
    breaker: Breaker | undefined,
  ): Promise<OutsideDependencyHealth> {
    const state = breaker?.state ?? 'closed';
    // An open breaker has its own probes; a closed one is checked here, at most every CHECK_TTL_MS.
    const check = state === 'closed' ? await this.check(dependency) : null;
    const lastSuccess = latest(breaker?.lastSuccessAt ?? null, check && !check.error ? check.at : null);
    const lastFailure = latest(breaker?.lastFailureAt ?? null, check?.error ? check.at : null);
    const status =
      state !== 'closed' || check?.error ? 'down' : check || breaker?.lastSuccessAt ? 'up' : 'unknown';
    return {
      key: dependency.key,
      kind: dependency.kind,
      name: breaker?.name && breaker.name !== breaker.key ? breaker.name : dependency.name,
      status,
      breaker: state,
      since: breaker?.openedAt?.toISOString() ?? null,
      lastSuccessAt: lastSuccess?.toISOString() ?? null,
      lastFailureAt: lastFailure?.toISOString() ?? null,
      lastError: check?.error ?? breaker?.lastError ?? null,
      latencyMs: check?.latencyMs ?? breaker?.latencyMs ?? null,
      checkedAt: check?.at.toISOString() ?? null,
    };
  }

  /** The dependency's last check when young enough, else a new one (shared by concurrent reports). */
  private async check(dependency: Dependency): Promise<Check | null> {
    const prober = this.options.prober;
    if (!prober) return null;
    const at = this.checkedAt.get(dependency.key);
    const cached = this.checks.get(dependency.key);
    if (cached && at !== undefined && Date.now() - at < CHECK_TTL_MS) return cached;
    const started = performance.now();
    const running = prober.probe(dependency, { timeoutMs: PROBE_TIMEOUT_MS }).then(
      () => ({ at: new Date(), latencyMs: round(performance.now() - started), error: null }),
      (error: unknown) => ({
        at: new Date(),
        latencyMs: round(performance.now() - started),
        error: error instanceof Error ? error.message : String(error),
      }),
    );
    this.checks.set(dependency.key, running);
    this.checkedAt.set(dependency.key, Date.now());
    return running;
  }
}

function latest(a: Date | null, b: Date | null): Date | null {
  if (!a) return b;
  if (!b) return a;
  return a > b ? a : b;
}

async function probe(kind: string, ping: () => Promise<void>): Promise<DependencyHealth> {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      ping(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`no answer within ${PROBE_TIMEOUT_MS} ms`)),
          PROBE_TIMEOUT_MS,
        );
      }),
    ]);
    return { status: 'up', kind, latencyMs: round(performance.now() - started) };
  } catch (error) {
    return {
      status: 'down',
      kind,
      latencyMs: round(performance.now() - started),
      error: error instanceof Error ? error.message : String(error),
    };
  } finally {
    clearTimeout(timer);
  }
}

function round(ms: number): number {
  return Math.round(ms * 100) / 100;
}
