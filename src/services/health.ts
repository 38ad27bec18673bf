import type { LiveCache } from '../ports.js';

export interface DependencyHealth {
  status: 'up' | 'down';
  kind: string;
  latencyMs: number;
  error?: string;
}

export interface HealthReport {
  status: 'ok' | 'degraded';
  database: DependencyHealth;
  cache: DependencyHealth;
  uptimeSeconds: number;
  version: string;
}

/** A dependency that does not answer within this time counts as down: a health probe must not hang. */
const PROBE_TIMEOUT_MS = 2000;

export class HealthService {
  private readonly startedAt = Date.now();

  constructor(
    private readonly options: {
      /** The database's kind and its round trip (DatabaseHandle). */
      database: { kind: string; ping(): Promise<void> };
      cache: LiveCache;
      cacheKind: string;
      version: string;
    },
  ) {}

  async report(): Promise<HealthReport> {
    const [database, cache] = await Promise.all([
      probe(this.options.database.kind, () => this.options.database.ping()),
      probe(this.options.cacheKind, () => this.options.cache.ping()),
    ]);
    return {
      status: database.status === 'up' && cache.status === 'up' ? 'ok' : 'degraded',
      database,
      cache,
      uptimeSeconds: Math.round((Date.now() - this.startedAt) / 1000),
      version: this.options.version,
    };
  }
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
