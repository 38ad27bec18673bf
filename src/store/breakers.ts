import type { Breaker } from '../domain/breaker.js';
import type { Dependency } from '../domain/dependencies.js';

/** The circuit breakers (migration 019), one row per dependency; written by `Breakers` alone. */
export interface BreakersRepo {
  /** Every breaker, in key order. */
  all(): Promise<Breaker[]>;
  /**
   * The dependency's breaker, locked until the transaction ends (only inside `Store.tx`); created
   * closed when it has no row yet. A breaker row is locked alone, in a transaction of its own.
   */
  lockOrCreate(dependency: Dependency): Promise<Breaker>;
  save(breaker: Breaker, now: Date): Promise<void>;
  /**
   * The key of the first of `keys` whose breaker holds calls back (open or half-open), read now:
   * the dispatcher's claim asks it inside its transaction, so no claim follows an opening it
   * could see.
   */
  holding(keys: string[]): Promise<string | null>;
  /** The keys of breakers holding calls whose next probe (or probe lease) is due. */
  dueForProbe(now: Date): Promise<string[]>;
}
