import { Redis } from 'ioredis';
import { sql } from 'kysely';
import type { Db } from '../../src/adapters/postgres/database.js';

/**
 * The Redis database a test uses. When `REDIS_TEST_URL` names one (`redis://127.0.0.1:6379/7`),
 * every test uses that one: whoever names a database has usually been given that one and no
 * other. When it names none (the default `redis://127.0.0.1:6379`), each kind of test keeps its
 * own, `defaultDb`: 1 for the in-process apps and unit tests, one per file for the files that start
 * outdial processes. Never database 0, which a developer's own outdial (or anything else) uses.
 * Read on each call, so a test can point it elsewhere for a moment.
 */
export function redisTestUrl(defaultDb: number): string {
  const given = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';
  let url: URL;
  try {
    url = new URL(given);
  } catch {
    throw new Error(`REDIS_TEST_URL is not a URL: ${given}`);
  }
  const named = url.pathname.replace(/^\/+|\/+$/g, '');
  if (named === '') {
    url.pathname = `/${defaultDb}`;
    return url.toString();
  }
  if (!/^\d+$/.test(named)) {
    throw new Error(`REDIS_TEST_URL names database "${named}": give a number (redis://host:6379/7)`);
  }
  return given;
}

/** Deletes every key under `prefix` (SCAN, never KEYS or FLUSHDB: other runs may share the database). */
export async function deletePrefix(redisUrl: string, prefix: string): Promise<void> {
  await deleteMatching(redisUrl, `${prefix}*`, () => true);
}

/** Ids as the service writes them into its Redis keys (call:<id>, ratelimit:batch:<id>, leases:trunk:<id>:calls). */
const KEY_ID = /\b(?:call|bat|trk)_[0-9a-z]+/g;

/**
 * Deletes the keys outdial processes wrote under their fixed `outdial:` prefix for the given calls,
 * batches and SIP trunks. Every key the service writes names one of these, and ids are unique, so
 * two files whose processes share one database (REDIS_TEST_URL naming it) tidy only their own keys
 * and never pull the live view, a rate window or a trunk lease from under each other.
 */
export async function deleteKeysOf(redisUrl: string, ids: Iterable<string>): Promise<void> {
  const own = new Set(ids);
  if (own.size === 0) return;
  await deleteMatching(redisUrl, 'outdial:*', (key) => (key.match(KEY_ID) ?? []).some((id) => own.has(id)));
}

/**
 * The ids of the calls, batches and SIP trunks in `db`: what deleteKeysOf takes. Calls from the dial
 * records too: a worker killed mid-call (as two-hosts.pg kills one) leaves a live entry for a call
 * whose intent was recorded, before or without its row in `calls`.
 */
export async function keyIdsIn(db: Db): Promise<string[]> {
  const { rows } = await sql<{ id: string }>`
    select id from calls union select call_id from dials union select id from batches
    union select id from sip_trunks`.execute(db);
  return rows.map((row) => row.id);
}

async function deleteMatching(redisUrl: string, pattern: string, wanted: (key: string) => boolean) {
  const redis = new Redis(redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 500);
      const chosen = keys.filter(wanted);
      if (chosen.length > 0) await redis.del(...chosen);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    await redis.quit();
  }
}
