import type { Redis } from 'ioredis';
import type { Admission, RateLimiter } from '../../ports.js';

/**
 * GCRA reservation in one Lua script, so every worker sharing this Redis draws slots from one
 * schedule. Time is Redis's own clock (TIME), so workers whose clocks disagree still agree on the
 * slots; the script returns each slot as a delay from that clock's now, in microseconds.
 */
const RESERVE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = 1000000 / tonumber(ARGV[1])
local wanted = tonumber(ARGV[2])
local horizon = tonumber(ARGV[3]) * 1000
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local start = math.max(tat, now)
if wanted <= 0 or start > now + horizon then return {} end
local fit = math.floor((now + horizon - start) / interval) + 1
local count = math.min(wanted, fit)
local newTat = start + count * interval
redis.call('SET', KEYS[1], string.format('%.0f', newTat), 'PX', math.ceil((newTat - now) / 1000) + 60000)
local delays = {}
for i = 0, count - 1 do delays[#delays + 1] = string.format('%.0f', start + i * interval - now) end
return delays
`;

const RELEASE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat == 0 then return 0 end
local back = tonumber(ARGV[2]) * (1000000 / tonumber(ARGV[1]))
local newTat = math.max(tat - back, now)
redis.call('SET', KEYS[1], string.format('%.0f', newTat), 'PX', 60000)
return 1
`;

/**
 * A sliding log of real starts per key (a sorted set scored by Redis time in microseconds), one
 * entry per member: a call admitted again (the SIP provider, right before its INVITE) no longer
 * starts at its earlier moment, so that entry is dropped before counting, and moved to now when
 * admitted.
 */
const ADMIT = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local rate = tonumber(ARGV[1])
local window = tonumber(ARGV[2]) * 1000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now - window))
redis.call('ZREM', KEYS[1], ARGV[3])
local count = redis.call('ZCARD', KEYS[1])
if count < rate then
  redis.call('ZADD', KEYS[1], string.format('%.0f', now), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000) * 2)
  return {0, string.format('%.0f', now)}
end
local blocker = redis.call('ZRANGE', KEYS[1], count - rate, count - rate, 'WITHSCORES')
local wait = math.ceil((tonumber(blocker[2]) + window - now) / 1000)
if wait < 1 then wait = 1 end
return {wait, '0'}
`;

export class RedisRateLimiter implements RateLimiter {
  constructor(
    private readonly redis: Redis,
    private readonly prefix = 'ratelimit:',
  ) {
    if (!redis.reserveSlots) {
      redis.defineCommand('reserveSlots', { numberOfKeys: 1, lua: RESERVE });
      redis.defineCommand('releaseSlots', { numberOfKeys: 1, lua: RELEASE });
      redis.defineCommand('admitStart', { numberOfKeys: 1, lua: ADMIT });
    }
  }

  async reserve(key: string, ratePerSecond: number, wanted: number, horizonMs: number): Promise<number[]> {
    const delays = (await this.redis.reserveSlots(
      `${this.prefix}${key}`,
      ratePerSecond,
      wanted,
      horizonMs,
    )) as string[];
    return delays.map((micros) => Number(micros) / 1000);
  }

  async release(key: string, ratePerSecond: number, count: number): Promise<void> {
    if (count <= 0) return;
    await this.redis.releaseSlots(`${this.prefix}${key}`, ratePerSecond, count);
  }

  async admit(key: string, ratePerSecond: number, windowMs: number, member: string): Promise<Admission> {
    const [wait, micros] = (await this.redis.admitStart(
      `${this.prefix}starts:${key}`,
      ratePerSecond,
      windowMs,
      member,
    )) as [number, string];
    const waitMs = Number(wait);
    // Redis's clock, in whole microseconds: the moment every process's starts are ordered by.
    return waitMs === 0
      ? { waitMs: 0, at: new Date(Math.floor(Number(micros) / 1000)) }
      : { waitMs, at: null };
  }

  async close(): Promise<void> {}
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    reserveSlots(key: string, rate: number, wanted: number, horizonMs: number): Promise<unknown>;
    releaseSlots(key: string, rate: number, count: number): Promise<unknown>;
    admitStart(key: string, rate: number, windowMs: number, member: string): Promise<unknown>;
  }
}
