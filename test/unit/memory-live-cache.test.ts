import { describe, expect, it } from 'vitest';
import { MemoryLiveCache } from '../../src/adapters/memory/live-cache.js';
import type { LiveCallEntry } from '../../src/ports.js';

const entry = (callId: string, batchId: string | null = null): LiveCallEntry => ({
  callId,
  userId: 'usr_1',
  status: 'ONGOING',
  startTime: new Date(0).toISOString(),
  phoneNumber: '+14155550123',
  contactId: 'cnt_1',
  batchId,
  error: null,
  duration: null,
  recordingUrl: null,
});

describe('MemoryLiveCache', () => {
  it('keeps at most maxEntries, dropping the least recently written', async () => {
    const cache = new MemoryLiveCache({ maxEntries: 3 });
    for (const id of ['a', 'b', 'c']) await cache.putCall(entry(id, 'bat_1'));
    await cache.putCall({ ...entry('a', 'bat_1'), status: 'COMPLETED' });
    await cache.putCall(entry('d', 'bat_1'));
    expect(cache.size).toBe(3);
    expect(await cache.getCall('b')).toBeNull();
    expect((await cache.getCall('a'))?.status).toBe('COMPLETED');
    expect((await cache.getBatchCalls('bat_1')).map((e) => e.callId).sort()).toEqual(['a', 'c', 'd']);
  });

  it('forgets entries after the TTL (30 days by default)', async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const cache = new MemoryLiveCache({ clock: { now: () => new Date(now) } });
    await cache.putCall(entry('a', 'bat_1'));
    now += 29 * 24 * 3600 * 1000;
    expect(await cache.getCall('a')).not.toBeNull();
    now += 2 * 24 * 3600 * 1000;
    expect(await cache.getCall('a')).toBeNull();
    expect(await cache.getBatchCalls('bat_1')).toEqual([]);
  });
});
