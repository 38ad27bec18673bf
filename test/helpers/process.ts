import { type ChildProcess, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createTestStorage, DATABASE_TEST_URL, STORE, type TestStorage } from './app.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'src/cli/index.ts');

/**
 * A port nobody listens on right now. `PORT=0` cannot be used for a child: the banner prints the
 * configured port, not the one the kernel picked.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

/** The environment a child gets: the test's store, and nothing from the parent's outdial settings. */
export function childEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'warn' };
  for (const [name, value] of Object.entries(extra)) if (value !== undefined) env[name] = value;
  return env;
}

/** DATABASE_URL for a child process that works in `schema` (through libpq's `options`, which pg honours). */
export function schemaDatabaseUrl(schema: string): string {
  const separator = DATABASE_TEST_URL.includes('?') ? '&' : '?';
  return `${DATABASE_TEST_URL}${separator}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
}

/**
 * Where `outdial serve` keeps its state in a process test: a fresh data dir always, and on the
 * postgres project a schema of its own (its DATABASE_URL). On pglite there is no DATABASE_URL, so
 * the child runs the embedded database in `<dataDir>/pgdata`, as a user's first `npm start` does.
 */
export interface ProcessStore {
  dataDir: string;
  databaseUrl: string | undefined;
  /** The PostgreSQL schema (postgres project only), to look at what the children wrote. */
  storage: TestStorage | null;
  dispose(): Promise<void>;
}

export async function createProcessStore(label: string): Promise<ProcessStore> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `outdial-${label}-`));
  const storage = STORE === 'postgres' ? await createTestStorage('postgres') : null;
  return {
    dataDir,
    databaseUrl: storage?.schema ? schemaDatabaseUrl(storage.schema) : undefined,
    storage,
    async dispose() {
      await storage?.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export interface Child {
  process: ChildProcess;
  output(): string;
  stderr(): string;
  /** Resolves when stdout has matched `pattern`, with the match; fails early if the process exits. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** The exit code (null when a signal ended it). */
  exited(): Promise<number | null>;
  /**
   * Sends `signal` and waits for the exit. A process still alive after `timeoutMs` is killed with
   * SIGKILL and null is returned, so a hung shutdown fails an `expect(code).toBe(0)` instead of
   * hanging the run.
   */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<number | null>;
}

const running = new Set<ChildProcess>();
// Never leave a server behind when the test worker goes away, whatever happened to the test.
process.once('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts `outdial <args>` from the sources, as `npm start` does. */
export function startCli(args: string[], env: NodeJS.ProcessEnv): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(child);
  let out = '';
  let err = '';
  let exitCode: number | null | undefined;
  const exit = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      exitCode = code;
      running.delete(child);
      resolve(code);
    }),
  );
  // 'close' comes after the pipes are drained: what the child wrote last is in `out` by then.
  const closed = new Promise<void>((resolve) => child.once('close', () => resolve()));
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  const exitedAndDrained = async () => {
    const code = await exit;
    await closed;
    return code;
  };
  return {
    process: child,
    output: () => out,
    stderr: () => err,
    async waitFor(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const match = out.match(pattern);
        if (match) return match;
        if (exitCode !== undefined)
          throw new Error(`process exited (${exitCode}) before ${pattern}:\n${out}\n${err}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`timed out waiting for ${pattern}:\n${out}\n${err}`);
    },
    exited: exitedAndDrained,
    async stop(signal = 'SIGTERM', timeoutMs = 20_000) {
      if (exitCode !== undefined) return exitedAndDrained();
      child.kill(signal);
      let timer: NodeJS.Timeout | undefined;
      const hung = new Promise<'hung'>((resolve) => {
        timer = setTimeout(() => resolve('hung'), timeoutMs);
      });
      const result = await Promise.race([exit, hung]);
      clearTimeout(timer);
      if (result !== 'hung') return exitedAndDrained();
      child.kill('SIGKILL');
      await exit;
      return null;
    },
  };
}

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `outdial <args>` to completion (killed, with code null, if it runs past `timeoutMs`). */
export async function runCli(args: string[], env: NodeJS.ProcessEnv, timeoutMs = 60_000): Promise<CliResult> {
  const child = startCli(args, env);
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, timeoutMs);
  });
  await Promise.race([child.exited(), timedOut]);
  clearTimeout(timer);
  const code = child.process.exitCode === null ? await child.stop('SIGKILL') : await child.exited();
  return { code, stdout: child.output(), stderr: child.stderr() };
}

/** What a first `outdial serve` prints after "listening on". */
export interface Banner {
  url: string;
  adminToken: string | null;
  demo: {
    userId: string;
    agentId: string;
    apiKey: string;
    curl: { url: string; authorization: string; body: string };
  } | null;
}

/** The end of the first-start banner: the curl's `-d '{...}'` line. */
export const DEMO_CURL_PRINTED = /\n\s+-d '\{.*\}'\n/;
export const LISTENING = /listening on (http:\/\/\S+)/;

export function parseBanner(output: string): Banner {
  const url = output.match(LISTENING)?.[1];
  if (!url) throw new Error(`no "listening on" line in:\n${output}`);
  const adminToken = output.match(/Admin token \(generated now[^\n]*\n\s+(\S+)\n/)?.[1] ?? null;
  const userId = output.match(/\n\s+user:\s+(\S+)\n/)?.[1];
  const agentId = output.match(/\n\s+agent:\s+(\S+)\n/)?.[1];
  const apiKey = output.match(/\n\s+API key:\s+(\S+)\n/)?.[1];
  const curl = output.match(
    /\n\s+curl -s -X POST (\S+) \\\n\s+-H "Authorization: ([^"]+)" -H "Content-Type: application\/json" \\\n\s+-d '(.+)'\n/,
  );
  const demo =
    userId && agentId && apiKey && curl?.[1] && curl[2] && curl[3]
      ? { userId, agentId, apiKey, curl: { url: curl[1], authorization: curl[2], body: curl[3] } }
      : null;
  return { url, adminToken, demo };
}

/** Pino's JSON lines of level error (50) or fatal (60) in a child's stdout. */
export function errorLogLines(output: string): string[] {
  return output.split('\n').filter((line) => /^\{.*"level":(50|60)\b/.test(line));
}
