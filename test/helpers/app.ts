import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { sql } from 'kysely';
import pino from 'pino';
import { inject } from 'vitest';
import { MemoryLiveCache } from '../../src/adapters/memory/live-cache.js';
import type { Db } from '../../src/adapters/postgres/database.js';
import { type DatabaseHandle, openDatabase } from '../../src/adapters/postgres/database.js';
import { migrate } from '../../src/adapters/postgres/migrate.js';
import { pgStore } from '../../src/adapters/postgres/store.js';
import { RedisLiveCache } from '../../src/adapters/redis/live-cache.js';
import type { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import { loadConfig } from '../../src/config.js';
import { createRuntime, type Runtime, type RuntimeOverrides } from '../../src/main.js';
import type { Clock, LiveCache, VoiceProvider } from '../../src/ports.js';
import { DialSteps } from '../../src/services/calls/lifecycle.js';
import { type DomainEventBus, type DomainEvents, EventBus } from '../../src/services/events.js';
import { deletePrefix, redisTestUrl } from './redis.js';

export type StoreKind = 'postgres' | 'pglite';

/**
 * The dial records' steps of another process on `db` (its lease not yet taken: `start`), which
 * announce on `events` (by default a bus of their own, which no one hears).
 */
export function dialStepsOn(
  db: Db,
  events: DomainEventBus = new EventBus<DomainEvents>(pino({ level: 'silent' })),
): DialSteps {
  return new DialSteps({ store: pgStore(db, STORE), events });
}

export const STORE: StoreKind = process.env.OUTDIAL_TEST_STORE === 'pglite' ? 'pglite' : 'postgres';
export const DATABASE_TEST_URL = process.env.DATABASE_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const ADMIN_TOKEN = 'test-admin-token-0123456789';
export const JWT_SECRET = 'test-jwt-secret-0123456789-0123456789-abcdef';

/** A database of this test file's own: a fresh schema on PostgreSQL, a copy of the migrated template on PGlite. */
export interface TestStorage {
  kind: StoreKind;
  /** Opens another handle on the same storage (a second process's view on PostgreSQL). */
  open(): Promise<DatabaseHandle>;
  dispose(): Promise<void>;
  schema: string | null;
  pgliteDir: string | null;
}

export async function createTestStorage(kind: StoreKind = STORE): Promise<TestStorage> {
  if (kind === 'postgres') {
    const schema = `t_${randomBytes(6).toString('hex')}`;
    const admin = await openDatabase({ databaseUrl: DATABASE_TEST_URL, pgliteDir: '', poolSize: 1 });
    await sql`create schema ${sql.id(schema)}`.execute(admin.db);
    const handles: DatabaseHandle[] = [];
    return {
      kind,
      schema,
      pgliteDir: null,
      async open() {
        const handle = await openDatabase({
          databaseUrl: DATABASE_TEST_URL,
          pgliteDir: '',
          schema,
          poolSize: 5,
        });
        handles.push(handle);
        return handle;
      },
      async dispose() {
        for (const handle of handles) await handle.close().catch(() => {});
        await sql`drop schema if exists ${sql.id(schema)} cascade`.execute(admin.db);
        await admin.close();
      },
    };
  }
  const template = inject('pgliteTemplate');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-pglite-'));
  if (template) fs.cpSync(template, dir, { recursive: true });
  const handles: DatabaseHandle[] = [];
  return {
    kind,
    schema: null,
    pgliteDir: dir,
    async open() {
      const handle = await openDatabase({ databaseUrl: undefined, pgliteDir: dir });
      if (!template) await migrate(handle);
      handles.push(handle);
      return handle;
    },
    async dispose() {
      for (const handle of handles) await handle.close().catch(() => {});
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Redis for one test file: the database REDIS_TEST_URL names, else 1 (test/helpers/redis.ts), under
 * a key prefix of the file's own, whose keys are deleted when the file is done. A prefix rather than FLUSHDB, so that two test
 * runs on one machine (a developer's and a helper's) cannot wipe each other's keys.
 */
export async function createTestCache(
  kind: StoreKind = STORE,
  clock?: Clock,
): Promise<{ cache: LiveCache; redisUrl: string | null; prefix: string; dispose(): Promise<void> }> {
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  if (kind === 'pglite') {
    const cache = new MemoryLiveCache(clock ? { clock } : {});
    return { cache, redisUrl: null, prefix, dispose: () => cache.close() };
  }
  const redisUrl = redisTestUrl(1);
  const cache = new RedisLiveCache({ url: redisUrl, keyPrefix: prefix });
  await cache.waitReady(5000);
  return {
    cache,
    redisUrl,
    prefix,
    async dispose() {
      await cache.close();
      await deletePrefix(redisUrl, prefix);
    },
  };
}

export interface TestApp {
  runtime: Runtime;
  storage: TestStorage;
  dataDir: string;
  provider: SimulatedVoiceProvider;
  /** The file's Redis (database 1) and key prefix on the PostgreSQL path; null on PGlite (memory). */
  redisUrl: string | null;
  cachePrefix: string;
  /** fastify.inject with a bearer token added when `key` is given. */
  request(options: InjectOptions & { key?: string }): Promise<LightMyRequestResponse>;
  admin(method: InjectOptions['method'], url: string, payload?: unknown): Promise<LightMyRequestResponse>;
  /** A user with minutes, an active agent and an API key. */
  createAccount(options?: { minutes?: number; agentName?: string; contactName?: string }): Promise<Account>;
  close(): Promise<void>;
}

export interface Account {
  userId: string;
  agentId: string;
  key: string;
  keyId: string;
}

export interface TestAppOptions {
  env?: Record<string, string>;
  overrides?: RuntimeOverrides;
  /** Start the background workers (the reconciler). */
  workers?: boolean;
  /** Puts a provider of the test's own around the simulator (which stays `TestApp.provider`). */
  wrapProvider?: (simulator: SimulatedVoiceProvider) => VoiceProvider;
}

export const FAST_SIM = { OUTDIAL_SIM_RING_MS: '30', OUTDIAL_SIM_TALK_MS: '150' };
/**
 * The suite shares 2 cores between its files, and PGlite runs its queries on the test's own event
 * loop: a lag there says nothing of a served call, and the 150 ms bound would only pause claims
 * and refuse single AI dials (503 OVERLOADED) at random. The most the setting allows: beside two
 * CPU hogs, PGlite's start alone has held a test's loop past 5 s, and the window after it refused
 * every dial. Tests of the lag bound set their own (test/unit/process-load.test.ts).
 */
export const TEST_LAG_BOUND = { OUTDIAL_MAX_EVENT_LOOP_LAG_MS: '60000' };

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const storage = await createTestStorage();
  const database = await storage.open();
  const clock = options.overrides?.clock;
  const testCache = await createTestCache(STORE, clock);
  const { cache } = testCache;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-data-'));
  const config = loadConfig({
    OUTDIAL_DATA_DIR: dataDir,
    OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
    OUTDIAL_JWT_SECRET: JWT_SECRET,
    OUTDIAL_PUBLIC_URL: 'http://outdial.test',
    LOG_LEVEL: 'silent',
    ...FAST_SIM,
    ...TEST_LAG_BOUND,
    ...options.env,
  });
  // The runtime builds the simulator from the config (an LLM configured: AI conversations), on
  // the test's clock.
  const runtime = await createRuntime(config, {
    logger: pino({ level: 'silent' }),
    database,
    cache,
    ...(options.wrapProvider ? { wrapSimulator: options.wrapProvider } : {}),
    ...options.overrides,
  });
  const provider = (options.overrides?.provider as SimulatedVoiceProvider | undefined) ?? runtime.simulator;
  if (!provider) throw new Error('startTestApp: the runtime built no simulator');
  if (options.workers) runtime.startWorkers();

  const request: TestApp['request'] = ({ key, headers, ...rest }) =>
    runtime.app.inject({
      ...rest,
      headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), ...headers },
    });
  const admin: TestApp['admin'] = (method, url, payload) =>
    runtime.app.inject({
      method,
      url,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    });

  return {
    runtime,
    storage,
    dataDir,
    provider,
    redisUrl: testCache.redisUrl,
    cachePrefix: testCache.prefix,
    request,
    admin,
    async createAccount(accountOptions = {}) {
      const user = await admin('POST', '/admin/v1/users', {
        name: 'Test user',
        minutes: accountOptions.minutes ?? 100,
      });
      const userId = user.json<{ id: string }>().id;
      const agent = await admin('POST', '/admin/v1/agents', {
        userId,
        name: accountOptions.agentName ?? 'Sales agent',
        basicDetails: { agent_name: 'Ava', agentLanguage: 'en' },
      });
      const key = await admin('POST', '/admin/v1/keys', { userId, name: 'test key' });
      const created = key.json<{ id: string; key: string }>();
      return { userId, agentId: agent.json<{ id: string }>().id, key: created.key, keyId: created.id };
    },
    async close() {
      await runtime.close();
      await testCache.dispose();
      await storage.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** Polls until `check` returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 5000,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value !== undefined) return value as Exclude<T, undefined>;
    } catch (error) {
      last = error;
    }
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  throw new Error(`condition not met within ${timeoutMs} ms${last ? `: ${String(last)}` : ''}`);
}

/** A clock tests can move; everything else reads the system clock. */
export class TestClock implements Clock {
  private offsetMs = 0;
  now(): Date {
    return new Date(Date.now() + this.offsetMs);
  }
  advance(ms: number): void {
    this.offsetMs += ms;
  }
}
