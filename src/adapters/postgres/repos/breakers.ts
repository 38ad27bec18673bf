import type { Selectable } from 'kysely';
import type { Breaker, BreakerState } from '../../../domain/breaker.js';
import type { Dependency, DependencyKind } from '../../../domain/dependencies.js';
import type { BreakersRepo } from '../../../store/breakers.js';
import type { BreakersTable, Db } from '../database.js';

function fromRow(row: Selectable<BreakersTable>): Breaker {
  return {
    key: row.key,
    kind: row.kind as DependencyKind,
    name: row.name,
    state: row.state as BreakerState,
    failures: row.failures,
    streakStartedAt: row.streak_started_at,
    openedAt: row.opened_at,
    nextProbeAt: row.next_probe_at,
    probes: row.probes,
    lastSuccessAt: row.last_success_at,
    lastFailureAt: row.last_failure_at,
    lastError: row.last_error,
    latencyMs: row.latency_ms,
  };
}

export class PgBreakersRepo implements BreakersRepo {
  constructor(private readonly db: Db) {}

  async all(): Promise<Breaker[]> {
    return (await this.db.selectFrom('breakers').selectAll().orderBy('key').execute()).map(fromRow);
  }

  async lockOrCreate(dependency: Dependency): Promise<Breaker> {
    await this.db
      .insertInto('breakers')
      .values({ key: dependency.key, kind: dependency.kind, name: dependency.name })
      .onConflict((oc) => oc.column('key').doNothing())
      .execute();
    const row = await this.db
      .selectFrom('breakers')
      .selectAll()
      .where('key', '=', dependency.key)
      .forUpdate()
      .executeTakeFirstOrThrow();
    return fromRow(row);
  }

  async save(breaker: Breaker, now: Date): Promise<void> {
    await this.db
      .updateTable('breakers')
      .set({
        name: breaker.name,
        state: breaker.state,
        failures: breaker.failures,
        streak_started_at: breaker.streakStartedAt,
        opened_at: breaker.openedAt,
        next_probe_at: breaker.nextProbeAt,
        probes: breaker.probes,
        last_success_at: breaker.lastSuccessAt,
        last_failure_at: breaker.lastFailureAt,
        last_error: breaker.lastError,
        latency_ms: breaker.latencyMs,
        updated_at: now,
      })
      .where('key', '=', breaker.key)
      .execute();
  }

  async holding(keys: string[]): Promise<string | null> {
    if (keys.length === 0) return null;
    const row = await this.db
      .selectFrom('breakers')
      .select('key')
      .where('key', 'in', keys)
      .where('state', '<>', 'closed')
      .orderBy('key')
      .limit(1)
      .executeTakeFirst();
    return row?.key ?? null;
  }

  async dueForProbe(now: Date): Promise<string[]> {
    const rows = await this.db
      .selectFrom('breakers')
      .select('key')
      .where('state', '<>', 'closed')
      .where('next_probe_at', '<=', now)
      .orderBy('next_probe_at')
      .execute();
    return rows.map((row) => row.key);
  }
}
