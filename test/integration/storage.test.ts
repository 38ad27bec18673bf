import { Redis } from 'ioredis';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { loadMigrations, migrate } from '../../src/adapters/postgres/migrate.js';
import { LIVE_TTL_SECONDS, type LiveCallEntry } from '../../src/ports.js';
import { createTestCache, createTestStorage, STORE } from '../helpers/app.js';
import { redisTestUrl } from '../helpers/redis.js';

const entry = (callId: string, batchId: string | null): LiveCallEntry => ({
  callId,
  userId: 'usr_1',
  status: 'ONGOING',
  startTime: new Date().toISOString(),
  phoneNumber: '+14155550123',
  contactId: 'cnt_1',
  batchId,
  error: null,
  duration: null,
  recordingUrl: null,
});

describe(`migrations on ${STORE}`, () => {
  const disposers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const dispose of disposers) await dispose();
  });

  it('apply once, in order, and a second run finds nothing to do', async () => {
    const storage = await createTestStorage();
    disposers.push(() => storage.dispose());
    const handle = await storage.open();
    await migrate(handle);
    expect(await migrate(handle)).toEqual([]);
    const versions = await handle.db
      .selectFrom('schema_migrations')
      .select('version')
      .orderBy('version')
      .execute();
    expect(versions.map((v) => v.version)).toEqual(loadMigrations().map((m) => m.version));
  });

  // Registered only where it means something (PGlite is one process), so no run reports it skipped.
  if (STORE === 'postgres')
    it('are safe when several processes start at once', async () => {
      const storage = await createTestStorage('postgres');
      disposers.push(() => storage.dispose());
      const handles = await Promise.all(Array.from({ length: 4 }, () => storage.open()));
      const applied = await Promise.all(handles.map((handle) => migrate(handle)));
      expect(applied.flat().sort((a, b) => a - b)).toEqual(loadMigrations().map((m) => m.version));
      const first = handles[0];
      if (!first) throw new Error('no handle');
      const rows = await sql<{ n: number }>`select count(*)::int as n from schema_migrations`.execute(
        first.db,
      );
      expect(rows.rows[0]?.n).toBe(loadMigrations().length);
    });
});

describe(`live cache on ${STORE}`, () => {
  it('stores calls and batch members, and reads them back', async () => {
    const { cache, dispose } = await createTestCache();
    try {
      await cache.putCall(entry('call_a', 'bat_1'));
      await cache.putCall({ ...entry('call_a', 'bat_1'), status: 'COMPLETED', duration: 30 });
      await cache.putCall(entry('call_b', 'bat_1'));
      await cache.putCall(entry('call_c', null));
      expect(await cache.getCall('call_a')).toMatchObject({ status: 'COMPLETED', duration: 30 });
      expect(await cache.getCall('call_missing')).toBeNull();
      const members = await cache.getBatchCalls('bat_1');
      expect(members.map((m) => m.callId).sort()).toEqual(['call_a', 'call_b']);
      expect(members.find((m) => m.callId === 'call_a')?.status).toBe('COMPLETED');
      await cache.ping();
    } finally {
      await dispose();
    }
  });

  if (STORE === 'postgres')
    it('sets a 30-day expiry on every Redis key it writes', async () => {
      const { cache, prefix, redisUrl, dispose } = await createTestCache('postgres');
      const redis = new Redis(redisUrl ?? redisTestUrl(1));
      try {
        await cache.putCall(entry('call_ttl', 'bat_ttl'));
        for (const key of [`${prefix}call:call_ttl`, `${prefix}batch:bat_ttl:calls`]) {
          const ttl = await redis.ttl(key);
          expect(ttl, key).toBeGreaterThan(LIVE_TTL_SECONDS - 60);
          expect(ttl, key).toBeLessThanOrEqual(LIVE_TTL_SECONDS);
        }
      } finally {
        await redis.quit();
        await dispose();
      }
    });
});
