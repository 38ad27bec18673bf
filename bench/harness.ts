import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { MemoryLiveCache } from '../src/adapters/memory/live-cache.js';
import { openDatabase } from '../src/adapters/postgres/database.js';
import { RedisLiveCache } from '../src/adapters/redis/live-cache.js';
import { loadConfig } from '../src/config.js';
import { createRuntime, type Runtime } from '../src/main.js';

export const DATABASE_URL = process.env.DATABASE_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';

export interface BenchRuntime {
  runtime: Runtime;
  base: string;
  key: string;
  userId: string;
  agentId: string;
  schema: string | null;
  close(): Promise<void>;
}

/** A listening outdial on a fresh schema (PostgreSQL + Redis) or a fresh data dir (PGlite + memory). */
export async function startBenchRuntime(
  store: 'postgres' | 'pglite',
  env: Record<string, string> = {},
): Promise<BenchRuntime> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-bench-'));
  const schema = store === 'postgres' ? `bench_${Date.now().toString(36)}` : null;
  if (schema) {
    const admin = await openDatabase({ databaseUrl: DATABASE_URL, pgliteDir: '' });
    await admin.db.executeQuery({
      sql: `create schema ${schema}`,
      parameters: [],
      query: { kind: 'RawNode' },
    } as never);
    await admin.close();
  }
  const database = await openDatabase({
    databaseUrl: schema ? DATABASE_URL : undefined,
    pgliteDir: path.join(dataDir, 'pgdata'),
    ...(schema ? { schema, poolSize: 10 } : {}),
  });
  const cache = schema
    ? new RedisLiveCache({ url: `${REDIS_URL}/3`, keyPrefix: `${schema}:` })
    : new MemoryLiveCache();
  const config = loadConfig({
    OUTDIAL_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    PORT: '0',
    HOST: '127.0.0.1',
    OUTDIAL_ADMIN_TOKEN: 'bench-admin-token-0123456789',
    OUTDIAL_JWT_SECRET: 'bench-jwt-secret-0123456789-0123456789-abc',
    ...env,
  });
  const runtime = await createRuntime(config, { logger: pino({ level: 'warn' }), database, cache });
  await runtime.app.listen({ port: 0, host: '127.0.0.1' });
  const address = runtime.app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const admin = (url: string, body: unknown) =>
    fetch(`${base}${url}`, {
      method: 'POST',
      headers: { authorization: 'Bearer bench-admin-token-0123456789', 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<Record<string, string>>);
  const user = await admin('/admin/v1/users', { name: 'bench', minutes: 10_000_000 });
  const agent = await admin('/admin/v1/agents', { userId: user.id, name: 'bench' });
  const key = await admin('/admin/v1/keys', { userId: user.id });
  return {
    runtime,
    base,
    key: key.key ?? '',
    userId: user.id ?? '',
    agentId: agent.id ?? '',
    schema,
    async close() {
      await runtime.close();
      await cache.close();
      if (schema) {
        await database.db.executeQuery({
          sql: `drop schema ${schema} cascade`,
          parameters: [],
          query: { kind: 'RawNode' },
        } as never);
      }
      await database.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export function contacts(count: number, prefix = 1415) {
  return Array.from({ length: count }, (_, i) => ({
    phoneNumber: `+1${prefix}${String(i).padStart(7, '0')}`,
    name: `Contact ${i}`,
    email: `contact${i}@example.com`,
    company: 'Example Inc',
    metadata: { source: 'bench', row: i },
  }));
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export function report(title: string, rows: Array<[string, string]>): void {
  process.stdout.write(`\n${title}\n`);
  const width = Math.max(...rows.map(([k]) => k.length));
  for (const [k, v] of rows) process.stdout.write(`  ${k.padEnd(width)}  ${v}\n`);
}
