import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const CLI = path.join(ROOT, 'src/cli/index.ts');

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

/**
 * The sealing key every test process shares: processes with separate data dirs are separate hosts
 * of one deployment, which must share OUTDIAL_ENCRYPTION_KEY (a host without it refuses to start).
 */
export const TEST_ENCRYPTION_KEY = 'test-encryption-key-0123456789-0123456789-abcdef';

/** The environment a child gets: the test's store, and nothing from the parent's outdial settings. */
export function childEnv(extra: Record<string, string | undefined>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    LOG_LEVEL: 'warn',
    OUTDIAL_ENCRYPTION_KEY: TEST_ENCRYPTION_KEY,
    // The suite's busy cores lag every process now and then (see TEST_LAG_BOUND in app.ts).
    OUTDIAL_MAX_EVENT_LOOP_LAG_MS: '60000',
  };
  for (const [name, value] of Object.entries(extra)) if (value !== undefined) env[name] = value;
  return env;
}

export interface Child {
  process: ChildProcess;
  output(): string;
  stderr(): string;
  /** Resolves when stdout has matched `pattern`, with the match. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  exited(): Promise<number | null>;
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `outdial <args>` from the sources through tsx (`npm start` runs the same code built into dist/). */
export function startCli(args: string[], env: NodeJS.ProcessEnv): Child {
  const child = spawn(process.execPath, ['--import', 'tsx', CLI, ...args], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  const exit = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    err += chunk.toString();
  });
  return {
    process: child,
    output: () => out,
    stderr: () => err,
    async waitFor(pattern, timeoutMs = 60_000) {
      const deadline = Date.now() + timeoutMs;
      while (Date.now() < deadline) {
        const match = out.match(pattern);
        if (match) return match;
        if (child.exitCode !== null)
          throw new Error(`process exited (${child.exitCode}) before ${pattern}:\n${out}\n${err}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      throw new Error(`timed out waiting for ${pattern}:\n${out}\n${err}`);
    },
    exited: () => exit,
    async stop(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exit;
    },
  };
}

/** Runs `outdial <args>` to completion. */
export async function runCli(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = startCli(args, env);
  const code = await child.exited();
  return { code, stdout: child.output(), stderr: child.stderr() };
}
