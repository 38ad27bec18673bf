import path from 'node:path';
import type { Logger } from 'pino';
import { MemoryLiveCache } from '../adapters/memory/live-cache.js';
import { MemoryLiveChannel } from '../adapters/memory/live-channel.js';
import { MemoryRateLimiter } from '../adapters/memory/rate-limiter.js';
import { type DatabaseHandle, openDatabase, type Progress } from '../adapters/postgres/database.js';
import { migrate, versionRange } from '../adapters/postgres/migrate.js';
import { pgStore } from '../adapters/postgres/store.js';
import type { RedisLiveCache } from '../adapters/redis/live-cache.js';
import { RedisLiveChannel } from '../adapters/redis/live-channel.js';
import { RedisRateLimiter } from '../adapters/redis/rate-limiter.js';
import type { Config } from '../config.js';
import { type Clock, type LiveCache, type LiveCallChannel, type RateLimiter, systemClock } from '../ports.js';
import type { CallTransactionEvents } from '../services/calls/lifecycle.js';
import { DialSteps } from '../services/calls/lifecycle.js';
import type { DomainEventBus, TransactionBus } from '../services/events.js';
import { resealAtStart, type Sealer } from '../services/sealing.js';
import { UnreachableError } from '../start-errors.js';
import type { Store } from '../store/index.js';

/** What a caller (a test, a benchmark) may give instead of what the config names. */
export interface StorageOverrides {
  database?: DatabaseHandle;
  cache?: LiveCache;
  clock?: Clock;
  limiter?: RateLimiter;
}

/** Where state lives: the database (and its Store), the dial records, the live cache and channel. */
export interface Storage {
  database: DatabaseHandle;
  store: Store;
  /** The dial records' steps, the transports' `records`, with this process's lease. */
  dials: DialSteps;
  cache: LiveCache;
  /** The Redis connection, when the live cache is Redis (shared by the limiter, leases, channel). */
  redisCache: RedisLiveCache | null;
  cacheKind: 'redis' | 'memory' | 'custom';
  clock: Clock;
  limiter: RateLimiter;
  liveChannel: LiveCallChannel;
}

/**
 * Opens the storage the config names, migrated and resealed, each part's close pushed to the
 * front of `opened` (so they close in the reverse order). The database is the caller's to close.
 */
export async function openStorage(
  config: Config,
  overrides: StorageOverrides,
  context: {
    database: DatabaseHandle;
    sealer: Sealer;
    logger: Logger;
    progress: Progress;
    events: DomainEventBus;
    /** The reactions inside the call's transactions (subscribed in `subscribers.ts`). */
    reactions: TransactionBus<CallTransactionEvents>;
  },
  opened: Array<() => Promise<void>>,
): Promise<Storage> {
  const { database, sealer, logger, progress, events } = context;
  const migrating = performance.now();
  const applied = await migrate(database, undefined, (versions) =>
    progress(`Applying migrations ${versionRange(versions)}`, 'info'),
  );
  if (applied.length > 0) {
    const seconds = ((performance.now() - migrating) / 1000).toFixed(1);
    progress(`Applied migrations ${versionRange(applied)} in ${seconds} s`, 'info');
  }
  const store = pgStore(database.db, database.kind);
  await resealAtStart(store, sealer, logger);
  // The dial records' steps, built before the voice side (every transport is given them), with
  // this process's lease, held from before its first call to after its last: every call it
  // places names it, and is alive while it is renewed.
  const dials = new DialSteps({ store, logger, reactions: context.reactions, events });
  await dials.start();
  opened.unshift(() => dials.close());
  // ioredis (~8 MB of resident memory) is loaded only where Redis can be in use.
  const redisModule =
    config.redisUrl || overrides.cache ? await import('../adapters/redis/live-cache.js') : null;
  const cache =
    overrides.cache ??
    (config.redisUrl && redisModule
      ? new redisModule.RedisLiveCache({ url: config.redisUrl })
      : new MemoryLiveCache());
  const redisCache: RedisLiveCache | null =
    redisModule && cache instanceof redisModule.RedisLiveCache ? cache : null;
  if (!overrides.cache) opened.unshift(() => cache.close());
  // A REDIS_URL that answers nothing in 5 s stops the start: the rate limits and the live view
  // it was set for would silently be missing. (Once started, an outage is waited out.)
  if (!overrides.cache && redisCache && config.redisUrl && !(await redisCache.waitReady(5000))) {
    throw new UnreachableError('redis', config.redisUrl, redisCache.lastError ?? 'no answer in 5 s');
  }
  const cacheKind: Storage['cacheKind'] = redisCache
    ? 'redis'
    : cache instanceof MemoryLiveCache
      ? 'memory'
      : 'custom';
  const clock = overrides.clock ?? systemClock;
  const limiter =
    overrides.limiter ?? (redisCache ? new RedisRateLimiter(redisCache.redis) : new MemoryRateLimiter(clock));
  // Live call control: commands to the process holding a call and its events, across hosts
  // through Redis pub/sub (its own subscriber connection), in this process without Redis.
  const liveChannel: LiveCallChannel = redisCache
    ? new RedisLiveChannel({
        redis: redisCache.redis,
        prefix: redisCache.redis.options.keyPrefix ?? 'outdial:',
        logger,
      })
    : new MemoryLiveChannel();
  opened.unshift(() => liveChannel.close());
  return { database, store, dials, cache, redisCache, cacheKind, clock, limiter, liveChannel };
}

/**
 * The database the config names, answering. A PostgreSQL server is asked `select 1` first: one
 * that does not answer (or refuses the login) stops the start with UnreachableError, not whichever
 * query happened to meet it.
 */
export async function openConfiguredDatabase(
  config: Pick<Config, 'databaseUrl' | 'dataDir'>,
  progress: Progress,
): Promise<DatabaseHandle> {
  const database = await openDatabase({
    databaseUrl: config.databaseUrl,
    pgliteDir: path.join(config.dataDir, 'pgdata'),
    onProgress: progress,
  });
  if (config.databaseUrl) {
    try {
      await database.ping();
    } catch (error) {
      await database.close().catch(() => {});
      throw new UnreachableError('database', config.databaseUrl, error);
    }
  }
  return database;
}
