import type { Redis } from 'ioredis';
import type { Leases } from '../../ports.js';

/**
 * Places held by members, as a sorted set scored by lease expiry in Redis's own clock: expired
 * leases are dropped first, a member that holds a place renews it, and a new member gets one
 * only while fewer than `limit` are held. One script, so two workers never take the last place
 * together; a worker that dies loses its places when their leases run out.
 */
const ACQUIRE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local limit = tonumber(ARGV[1])
local expiry = now + tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZSCORE', KEYS[1], ARGV[2]) or redis.call('ZCARD', KEYS[1]) < limit then
  redis.call('ZADD', KEYS[1], expiry, ARGV[2])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]) * 2)
  return 1
end
return 0
`;

export class RedisLeases implements Leases {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'leases:',
  ) {
    if (!redis.acquireLease) redis.defineCommand('acquireLease', { numberOfKeys: 1, lua: ACQUIRE });
  }

  async acquire(key: string, limit: number, member: string, leaseMs: number): Promise<boolean> {
    return Number(await this.redis.acquireLease(`${this.prefix}${key}`, limit, member, leaseMs)) === 1;
  }

  async release(key: string, member: string): Promise<void> {
    await this.redis.zrem(`${this.prefix}${key}`, member);
  }
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    acquireLease(key: string, limit: number, member: string, leaseMs: number): Promise<unknown>;
  }
}
