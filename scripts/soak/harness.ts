/**
 * What both soak modes share (scripts/soak.ts, scripts/soak/outages.ts): the databases, the
 * secrets every process of a run shares, outdial's processes started and killed under one name,
 * bounded calls to the HTTP API, and the Redis keys a run leaves behind.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { Redis } from 'ioredis';
import { type Child, startCli } from '../../test/helpers/process.js';
export const DATABASE_URL = process.env.DATABASE_TEST_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Redis database 5: the tests use 1 and 2; the soak deletes its own keys there before and after each run. */
export const REDIS_URL = `${process.env.REDIS_TEST_URL ?? 'redis://127.0.0.1:6379'}/5`;
export const ADMIN_TOKEN = `soak-admin-${randomBytes(8).toString('hex')}`;
export const JWT_SECRET = randomBytes(32).toString('hex');
// Processes on separate data dirs must share the sealing key, as hosts of one deployment do.
export const ENCRYPTION_KEY = randomBytes(32).toString('hex');

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const log = (line: string) => process.stdout.write(`${line}\n`);

/** One outdial process of a run (the API or a worker), killed and started again under one name. */
export class Role {
  private child: Child | null = null;
  private starting: Promise<void> | null = null;
  private closed = false;
  starts = 0;
  kills = 0;

  constructor(
    readonly name: string,
    private readonly args: string[],
    private readonly env: NodeJS.ProcessEnv,
    private readonly ready: RegExp,
    private readonly logFile: string,
  ) {}

  start(): Promise<void> {
    // A restart timer that fires after the run stopped (a failed run) must not leave a process behind.
    if (this.closed) return Promise.resolve();
    this.starting ??= (async () => {
      this.starts++;
      const child = startCli(this.args, this.env);
      this.child = child;
      void child.exited().then(() => this.saveLog(child));
      // tsx compiles the sources at each start: 5-20 s on this busy 2-core machine.
      await child.waitFor(this.ready, 120_000);
    })();
    return this.starting;
  }

  /** Resolves once the process is up (it may be starting again after a kill). */
  async up(): Promise<void> {
    await (this.starting ?? this.start());
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (!child) return;
    this.kills++;
    this.child = null;
    this.starting = null;
    await child.stop('SIGKILL');
  }

  /** A clean stop (SIGTERM), or SIGKILL after 20 s; no start after it. */
  async stop(): Promise<void> {
    this.closed = true;
    const child = this.child;
    this.child = null;
    this.starting = null;
    if (!child) return;
    const timer = setTimeout(() => child.process.kill('SIGKILL'), 20_000);
    await child.stop('SIGTERM');
    clearTimeout(timer);
  }

  private saveLog(child: Child): void {
    fs.appendFileSync(
      this.logFile,
      `--- ${this.name} start ${this.starts}, exit ${child.process.exitCode ?? child.process.signalCode}\n${child.output()}${child.stderr()}`,
    );
  }
}

/** A request to the API with a bound on its time; network errors are returned, not thrown. */
export async function call(
  base: string,
  method: string,
  url: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  try {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await res.text();
    return { status: res.status, json: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
  } catch (error) {
    return { status: 0, json: { error: (error as Error).message } };
  }
}

export async function must(
  promise: Promise<{ status: number; json: Record<string, unknown> }>,
  status: number,
  what: string,
) {
  const res = await promise;
  if (res.status !== status) throw new Error(`${what}: ${res.status} ${JSON.stringify(res.json)}`);
  return res.json;
}

export async function deleteKeys(): Promise<void> {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 2 });
  try {
    await redis.connect();
    let cursor = '0';
    for (let rounds = 0; rounds < 10_000; rounds++) {
      const [next, keys] = await redis.scan(cursor, 'MATCH', 'outdial:*', 'COUNT', 1000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
      if (cursor === '0') break;
    }
  } finally {
    redis.disconnect();
  }
}

/**
 * The deployment of both soak modes: an `outdial api` and two `outdial worker`s, each with the
 * environment `env` gives its name and its RTP ports, logging to one file; started in order and
 * added to `roles` (which the caller stops).
 */
export async function startDeployment(
  env: (name: string, rtpPorts: string) => NodeJS.ProcessEnv,
  logFile: string,
  roles: Role[],
): Promise<{ api: Role; workers: Role[] }> {
  const api = new Role('api', ['api'], env('api', '45000-45199'), /listening on/, logFile);
  const workers = [1, 2].map(
    (n) =>
      new Role(
        `worker${n}`,
        ['worker'],
        env(`worker${n}`, `${45_000 + n * 1000}-${45_999 + n * 1000}`),
        /worker running/,
        logFile,
      ),
  );
  roles.push(api, ...workers);
  await api.start();
  await Promise.all(workers.map((worker) => worker.start()));
  return { api, workers };
}

/**
 * The customer, through the admin API: a user with ample minutes, a key, a trunk to sipp whose
 * caps (20 INVITEs/s, 30 at once) make calls wait for a place, and an agent that dials through it.
 */
export async function seedCustomer(
  base: string,
  sippPort: number,
  names: { user: string; agent: string },
  basicDetails: Record<string, unknown>,
): Promise<{ userId: string; key: string; trunkId: string; agentId: string }> {
  const user = await must(
    call(base, 'POST', '/admin/v1/users', ADMIN_TOKEN, {
      name: names.user,
      minutes: 1_000_000,
      maxConcurrentCalls: 1000,
    }),
    201,
    'create user',
  );
  const userId = String(user.id);
  const key = String(
    (await must(call(base, 'POST', '/admin/v1/keys', ADMIN_TOKEN, { userId }), 201, 'create key')).key,
  );
  const trunk = await must(
    call(base, 'POST', '/admin/v1/sip-trunks', ADMIN_TOKEN, {
      userId,
      name: 'sipp',
      host: '127.0.0.1',
      port: sippPort,
      fromNumber: '+14155550100',
      maxCallsPerSecond: 20,
      maxConcurrentCalls: 30,
    }),
    201,
    'create trunk',
  );
  const agent = await must(
    call(base, 'POST', '/admin/v1/agents', ADMIN_TOKEN, {
      userId,
      name: names.agent,
      sipTrunkId: trunk.id,
      basicDetails,
    }),
    201,
    'create agent',
  );
  return { userId, key, trunkId: String(trunk.id), agentId: String(agent.id) };
}
