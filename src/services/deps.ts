import type { Logger } from 'pino';
import type { Config } from '../config.js';
import type { Metrics } from '../metrics.js';
import type { Clock, DialRecords, LiveCache, VoiceProvider } from '../ports.js';
import type { Store } from '../store/index.js';
import type { Sealer } from './sealing.js';

/** What every service receives: built once in main.ts, passed down as one object. */
export interface Deps {
  config: Config;
  /** The database, through its repositories (src/store/). */
  store: Store;
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
