import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { sql } from 'kysely';
import { openDatabase } from '../src/adapters/postgres/database.js';
import { DATABASE_URL, freePort, processCpuMs, REDIS_URL, report, sleep } from './harness.js';
import { serverPid } from './npm-start.js';
import { BARE_SERVER } from './reads.js';

const ROUNDS = Number(process.env.BENCH_READ_ROUNDS ?? 3);
const SECONDS = Number(process.env.BENCH_READ_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_READ_CONNECTIONS ?? 50);
const ROOT = process.cwd();

interface Load {
  rps: number;
  p99: number;
  errors: number;
  /** The server's CPU time (user + system, all threads) per answered request, in microseconds. */
  cpuUs: number;
}

/** One autocannon run against `url`, with the server's CPU time over the run. */
async function load(url: string, pid: number, headers: Record<string, string> = {}): Promise<Load> {
  const cpuBefore = processCpuMs(pid);
  const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers });
  const answered = Math.max(result.requests.total, 1);
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
    cpuUs: ((processCpuMs(pid) - cpuBefore) * 1000) / answered,
  };
}

/** Resolves with the first match of `pattern` in the file the server writes its output to. */
async function waitForLine(file: string, pattern: RegExp, child: ChildProcess): Promise<RegExpExecArray> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const match = pattern.exec(fs.readFileSync(file, 'utf8'));
    if (match) return match;
    if (child.exitCode !== null || Date.now() > deadline) {
      throw new Error(`npm start did not start:\n${fs.readFileSync(file, 'utf8').slice(-2000)}`);
    }
    await sleep(50);
  }
}

/**
 * `npm run bench reads-start`: `GET /api/v1/status/call` as users run outdial (`npm start`: the
 * built dist/, default log level and format, its output to a file as `npm start > outdial.log`
 * does; PostgreSQL on a fresh database, Redis), beside a bare Fastify route in its own process,
 * alternated in one run. Targets (issue 23): at least 0.5x the bare route, p99 under 20 ms.
 */
export async function benchReadsStart(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-bench-reads-'));
  const database = `bench_reads_${Date.now().toString(36)}`;
  const admin = await openDatabase({ databaseUrl: DATABASE_URL, pgliteDir: '' });
  await sql`create database ${sql.id(database)}`.execute(admin.db);
  const databaseUrl = new URL(DATABASE_URL);
  databaseUrl.pathname = `/${database}`;
  const port = await freePort();
  const output = fs.openSync(path.join(dir, 'outdial.log'), 'w');
  const server = spawn('npm', ['start'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      OUTDIAL_DATA_DIR: path.join(dir, 'data'),
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl.href,
      REDIS_URL: `${REDIS_URL}/3`,
      // The call ends within a second, so that its status carries a signed recording link.
      OUTDIAL_SIM_RING_MS: '10',
      OUTDIAL_SIM_TALK_MS: '50',
    },
    stdio: ['ignore', output, output],
    detached: true,
  });
  const bare = spawn(process.execPath, ['-e', BARE_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const logFile = path.join(dir, 'outdial.log');
    const key = (await waitForLine(logFile, /API key:\s+(\S+)\n/, server))[1];
    const agentId = (await waitForLine(logFile, /agent:\s+(agt_\S+)/, server))[1];
    const base = `http://127.0.0.1:${port}`;
    const auth = { authorization: `Bearer ${key}` };
    const dial = (await fetch(`${base}/api/v1/call/dial`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ to: '+14155550123', agentConfigId: agentId }),
    }).then((r) => r.json())) as { callId: string };
    const statusUrl = `${base}/api/v1/status/call?callId=${dial.callId}`;
    for (let i = 0; i < 100; i++) {
      const status = (await fetch(statusUrl, { headers: auth }).then((r) => r.json())) as { status: string };
      if (status.status !== 'ONGOING') break;
      await sleep(100);
    }
    const bareBase = await new Promise<string>((resolve) =>
      bare.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())),
    );
    const outdialPid = server.pid === undefined ? undefined : serverPid(server.pid);
    if (outdialPid === undefined || bare.pid === undefined) throw new Error('no server process to measure');

    const line = (l: Load) =>
      `${Math.round(l.rps)} req/s, p99 ${l.p99} ms, ${l.cpuUs.toFixed(0)} µs CPU/req${l.errors ? `, ${l.errors} errors` : ''}`;
    // JIT warm-up of both servers, not counted.
    await autocannon({ url: `${bareBase}/bare`, connections: CONNECTIONS, duration: 3 });
    await autocannon({ url: statusUrl, connections: CONNECTIONS, duration: 3, headers: auth });
    const rows: Array<[string, string]> = [];
    const ratios: number[] = [];
    for (let round = 1; round <= ROUNDS; round++) {
      const load1 = os.loadavg()[0]?.toFixed(1);
      const bareLoad = await load(`${bareBase}/bare`, bare.pid);
      const callLoad = await load(statusUrl, outdialPid, auth);
      const ratio = callLoad.rps / bareLoad.rps;
      ratios.push(ratio);
      rows.push([`round ${round} (load average ${load1}): bare Fastify route`, line(bareLoad)]);
      rows.push([
        `round ${round}: GET /api/v1/status/call`,
        `${line(callLoad)}: ${ratio.toFixed(2)}x bare, ${(callLoad.cpuUs / bareLoad.cpuUs).toFixed(2)}x its CPU/req`,
      ]);
    }
    const sorted = [...ratios].sort((a, b) => a - b);
    rows.push([
      'ratio to the bare route',
      `median ${(sorted[Math.floor(sorted.length / 2)] ?? 0).toFixed(2)}x (${sorted.map((r) => r.toFixed(2)).join(', ')})`,
    ]);
    rows.push(['targets', '>= 0.5x the bare route, p99 < 20 ms']);
    report(
      `npm start (PostgreSQL, Redis, default logging to a file), ${CONNECTIONS} connections for ${SECONDS} s each, alternated`,
      rows,
    );
  } finally {
    bare.kill();
    const exited = new Promise((resolve) => server.once('exit', resolve));
    // The whole group: npm, its shell and the server.
    if (server.pid !== undefined) process.kill(-server.pid, 'SIGINT');
    await exited;
    fs.closeSync(output);
    await sql`drop database if exists ${sql.id(database)} with (force)`.execute(admin.db);
    await admin.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
