import type { Logger } from 'pino';
import type { Db } from '../adapters/postgres/database.js';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { Clock, DialRecords, LiveCache, VoiceProvider } from '../ports.js';
import type { Repos, Store } from '../store/index.js';
import type { Sealer } from './sealing.js';

/**
 * Transitional (issue 23), while functions that take the caller's transaction as a Kysely `Db`
 * remain: `executor` gives the one a `Store.tx` runs on, `repos` the repositories over a `Db`
 * transaction such a function was handed.
 */
export interface LegacyBridge {
  executor(repos: Repos): Db;
  repos(db: Db): Repos;
}

/** What every service receives: built once in main.ts, passed down as one object. */
export interface Deps {
  config: Config;
  /** The database, through its repositories (src/store/). */
  store: Store;
  /** Transitional (issue 23): the Kysely handle, for the code not yet behind `store`. */
  db: Db;
  /** Transitional (issue 23): between a transaction's repositories and its Kysely executor. */
  legacy: LegacyBridge;
  cache: LiveCache;
  provider: VoiceProvider;
  /** The shared dial records; its owner is this process. */
  dials: DialRecords;
  clock: Clock;
  logger: Logger;
  jwtSecret: string;
  /** Seals and opens secrets at rest (never the JWT secret's job). */
  sealer: Sealer;
  metrics: Metrics;
}
