import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import pino from 'pino';
import { MemoryLiveCache } from '../src/adapters/memory/live-cache.js';
import { openDatabase } from '../src/adapters/postgres/database.js';
import { RedisLiveCache } from '../src/adapters/redis/live-cache.js';
import { loadConfig } from '../src/config.js';
import { createRuntime, type Runtime } from '../src/main.js';

export const DATABASE_URL = process.env.DATABASE_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const REDIS_URL = process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379';
const ADMIN_TOKEN = 'bench-admin-token-0123456789';

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
    OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
    OUTDIAL_JWT_SECRET: 'bench-jwt-secret-0123456789-0123456789-abc',
    ...env,
  });
  const runtime = await createRuntime(config, { logger: pino({ level: 'warn' }), database, cache });
  await runtime.app.listen({ port: 0, host: '127.0.0.1' });
  const address = runtime.app.server.address();
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  const user = await createBenchUser(base, 'bench');
  return {
    runtime,
    base,
    ...user,
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

/** A user with its agent and API key, through the admin API. */
export async function createBenchUser(
  base: string,
  name: string,
): Promise<{ key: string; userId: string; agentId: string }> {
  const admin = (url: string, body: unknown) =>
    fetch(`${base}${url}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    }).then((r) => r.json() as Promise<Record<string, string>>);
  // The dispatch bench keeps hundreds of one user's calls up at once: far over the default limit of 10.
  const user = await admin('/admin/v1/users', { name, minutes: 10_000_000, maxConcurrentCalls: 100_000 });
  const agent = await admin('/admin/v1/agents', { userId: user.id, name });
  const key = await admin('/admin/v1/keys', { userId: user.id });
  return { key: key.key ?? '', userId: user.id ?? '', agentId: agent.id ?? '' };
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

export interface ServerProcess {
  base: string;
  key: string;
  userId: string;
  agentId: string;
  /** Peak resident memory of the server process so far (VmHWM), in bytes. */
  peakRss(): number;
  /** Current resident memory of the server process (VmRSS), in bytes. */
  rss(): number;
  /** CPU time the server process has used so far (user + system), in ms. */
  cpuMs(): number;
  close(): Promise<void>;
}

function procStatus(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
  return kb * 1024;
}

/** A process's CPU time (user + system), in ms, from /proc/<pid>/stat (in clock ticks of 10 ms). */
export function processCpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * `outdial serve` as its own process, as a user runs it, so that its memory is measured apart from
 * the benchmark's (which holds the request body it sends). On PGlite the data dir is initialised
 * first by `outdial migrate`: initdb happens once in a server's life, not at every start.
 */
export async function startServerProcess(
  store: 'postgres' | 'pglite',
  env: Record<string, string> = {},
): Promise<ServerProcess> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-bench-'));
  const schema = store === 'postgres' ? `bench_${Date.now().toString(36)}` : null;
  const admin = schema ? await openDatabase({ databaseUrl: DATABASE_URL, pgliteDir: '' }) : null;
  if (admin && schema) await sql`create schema ${sql.id(schema)}`.execute(admin.db);
  const childEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    OUTDIAL_DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    HOST: '127.0.0.1',
    PORT: String(await freePort()),
    ...(schema
      ? {
          DATABASE_URL: `${DATABASE_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
          REDIS_URL: `${REDIS_URL}/3`,
        }
      : {}),
    ...env,
  };
  // The built CLI, as a deployment runs it (`npm run bench` builds it first); the sources otherwise.
  const cli = fs.existsSync('dist/cli/index.js')
    ? ['dist/cli/index.js']
    : ['--import', 'tsx', 'src/cli/index.ts'];
  if (!schema)
    execFileSync(process.execPath, [...cli, 'migrate'], {
      env: childEnv,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  const child = spawn(process.execPath, [...cli, 'serve'], {
    env: childEnv,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const deadline = Date.now() + 60_000;
  while (!/API key:\s+\S+\n/.test(out)) {
    if (child.exitCode !== null || Date.now() > deadline)
      throw new Error(`outdial serve did not start:\n${out}`);
    await sleep(50);
  }
  const pick = (pattern: RegExp) => pattern.exec(out)?.[1] ?? '';
  const pid = child.pid ?? 0;
  return {
    base: `http://127.0.0.1:${childEnv.PORT}`,
    key: pick(/API key:\s+(\S+)/),
    userId: pick(/user:\s+(usr_\S+)/),
    agentId: pick(/agent:\s+(agt_\S+)/),
    peakRss: () => procStatus(pid, 'VmHWM'),
    rss: () => procStatus(pid, 'VmRSS'),
    cpuMs: () => processCpuMs(pid),
    async close() {
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
      if (admin && schema) {
        await sql`drop schema ${sql.id(schema)} cascade`.execute(admin.db);
        await admin.close();
      }
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
