import { Redis } from 'ioredis';
import { LIVE_TTL_SECONDS, type LiveCache, type LiveCallEntry } from '../../ports.js';

export interface RedisLiveCacheOptions {
  url: string;
  /** Prefix of every key; tests give each file its own. */
  keyPrefix?: string;
  ttlSeconds?: number;
}

/**
 * The live view in Redis: one string per call (`call:{id}`, JSON) and one hash per batch
 * (`batch:{id}:calls`, call id -> JSON) so a batch's live status is a single HGETALL. Every write
 * renews the 30-day expiry of the keys it touches.
 */
export class RedisLiveCache implements LiveCache {
  readonly redis: Redis;
  /** The connection's latest error (refused, wrong password), or null. */
  lastError: Error | null = null;
  private readonly ttl: number;

  constructor(options: RedisLiveCacheOptions) {
    this.redis = new Redis(options.url, {
      keyPrefix: options.keyPrefix ?? 'outdial:',
      maxRetriesPerRequest: 1,
      // While Redis is away, commands fail at once instead of queueing: a dial must not wait on
      // the live view, and reads fall back to the database.
      enableOfflineQueue: false,
      // Commands issued in the same event-loop turn (call starts and ends come in bursts) go out
      // in one write: far fewer system calls at a thousand calls a second.
      enableAutoPipelining: true,
    });
    // Connection errors surface on the commands that fail; without a listener ioredis would crash
    // the process. The last one says why a start could not reach Redis.
    this.redis.on('error', (error: Error) => {
      this.lastError = error;
    });
    this.ttl = options.ttlSeconds ?? LIVE_TTL_SECONDS;
  }

  /** Resolves once connected, or after `timeoutMs` (the service then starts and keeps retrying). */
  async waitReady(timeoutMs = 5000): Promise<boolean> {
    if (this.redis.status === 'ready') return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.redis.off('ready', onReady);
        resolve(false);
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve(true);
      };
      this.redis.once('ready', onReady);
    });
  }

  async putCall(entry: LiveCallEntry): Promise<void> {
    const value = JSON.stringify(entry);
    const multi = this.redis.multi().set(`call:${entry.callId}`, value, 'EX', this.ttl);
    if (entry.batchId) {
      const key = `batch:${entry.batchId}:calls`;
      multi.hset(key, entry.callId, value).expire(key, this.ttl);
    }
    const results = await multi.exec();
    const failed = results?.find(([error]) => error);
    if (failed?.[0]) throw failed[0];
  }

  async getCall(callId: string): Promise<LiveCallEntry | null> {
    const raw = await this.redis.get(`call:${callId}`);
    return raw ? (JSON.parse(raw) as LiveCallEntry) : null;
  }

  async getBatchCalls(batchId: string): Promise<LiveCallEntry[]> {
    const all = await this.redis.hgetall(`batch:${batchId}:calls`);
    return Object.values(all).map((raw) => JSON.parse(raw) as LiveCallEntry);
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
