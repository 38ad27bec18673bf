import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DATABASE_TEST_URL, STORE } from '../helpers/app.js';
import { childEnv, freePort, ROOT, runCli, startCli } from '../helpers/process.js';
import { tempDirs } from '../helpers/temp-dirs.js';

/**
 * What `outdial serve` prints: its logs in both formats, the banner in a terminal, and each start
 * failure as one line on stderr with the fix, exit code 1, no stack. None of it depends on the
 * store, so each case runs under one of the two projects.
 */
describe(`what a start prints (${STORE})`, () => {
  const tempDir = tempDirs('outdial-output-');

  /** `outdial serve` on a fresh data dir and a free port of 127.0.0.1. */
  async function serve(extra: Record<string, string>) {
    const port = await freePort();
    const env = { OUTDIAL_DATA_DIR: tempDir(), PORT: String(port), HOST: '127.0.0.1', ...extra };
    return { port, child: startCli(['serve'], childEnv(env)) };
  }

  /** The start failed with exactly this one line on stderr. */
  async function failsWith(env: NodeJS.ProcessEnv, line: RegExp, args = ['serve']) {
    const result = await runCli(args, env);
    expect(result.code, result.stderr).toBe(1);
    expect(result.stderr.split('\n'), result.stderr).toHaveLength(2);
    expect(result.stderr).toMatch(new RegExp(`^outdial: ${line.source}\\n$`));
    expect(result.stderr).not.toMatch(/\n\s+at /);
    return result.stderr;
  }

  if (STORE === 'pglite') {
    it('logs one JSON record a line with LOG_FORMAT=json, one short line a request with LOG_FORMAT=pretty', async () => {
      for (const format of ['json', 'pretty'] as const) {
        const { port, child } = await serve({ LOG_LEVEL: 'info', LOG_FORMAT: format });
        try {
          await child.waitFor(/listening on/, 90_000);
          expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(200);
          if (format === 'json') {
            await child.waitFor(/"msg":"request completed"/);
            const records = child
              .output()
              .split('\n')
              .filter((line) => line.startsWith('{'))
              .map((line) => JSON.parse(line) as { msg: string; level: number });
            expect(records.map((r) => r.msg)).toEqual(
              expect.arrayContaining(['request completed', 'voice models']),
            );
            // One record a request at info, with the request, its status and its time.
            expect(records.map((r) => r.msg)).not.toContain('incoming request');
            expect(records.find((r) => r.msg === 'request completed')).toMatchObject({
              level: 30,
              req: { method: 'GET', url: '/livez' },
              res: { statusCode: 200 },
              responseTime: expect.any(Number),
            });
            expect(child.output()).not.toMatch(/^\d\d:\d\d:\d\d /m);
          } else {
            await child.waitFor(/^\d\d:\d\d:\d\d GET \/livez 200 \d+\.\d ms$/m);
            expect(child.output()).not.toMatch(/^\{/m);
            expect(child.output()).not.toMatch(/Server listening at/);
          }
        } finally {
          expect(await child.stop()).toBe(0);
        }
      }
    }, 180_000);

    it('logs no request below info in the pretty format (LOG_LEVEL keeps its meaning)', async () => {
      const { port, child } = await serve({ LOG_FORMAT: 'pretty' });
      await child.waitFor(/listening on/, 90_000);
      expect((await fetch(`http://127.0.0.1:${port}/livez`)).status).toBe(200);
      // Once the process has exited, everything it would have written is written.
      expect(await child.stop()).toBe(0);
      expect(child.output()).not.toMatch(/GET \/livez/);
    }, 120_000);

    it('prints the banner in a terminal, and stops on Ctrl-C', async () => {
      const port = await freePort();
      const env = childEnv({ OUTDIAL_DATA_DIR: tempDir(), PORT: String(port), HOST: '127.0.0.1' });
      // A real terminal: `script` gives the command a pseudo-terminal.
      const command = `stty cols 120 rows 40; exec ${process.execPath} --import tsx src/cli/index.ts serve`;
      const child = spawn('script', ['-qec', command, '/dev/null'], { cwd: ROOT, env, stdio: 'pipe' });
      let screen = '';
      const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
      const shown = new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          screen += chunk.toString().replace(/\r/g, '');
          if (screen.includes('Ctrl-C stops')) resolve();
        });
        void exited.then(() => reject(new Error(`exited before the banner:\n${screen}`)));
      });
      await shown;
      child.stdin.write('\x03');
      expect(await exited).toBe(0);
      const lines = screen.split('\n');
      expect(lines).toContain(
        `  database   embedded PGlite in ${path.join(env.OUTDIAL_DATA_DIR ?? '', 'pgdata')}`,
      );
      expect(lines).toContain('  cache      in memory');
      expect(lines).toContain('  listen     pocketsphinx, offline');
      expect(
        lines.some((line) =>
          /^ {2}outdial \S+: API and workers listening on http:\/\/127\.0\.0\.1:\d+$/.test(line),
        ),
      ).toBe(true);
      expect(lines.some((line) => /^ {2}API key: \S+$/.test(line))).toBe(true);
      expect(lines.some((line) => line.startsWith('    curl -s -X POST http://127.0.0.1:'))).toBe(true);
      expect(screen).not.toMatch(/^\{/m);
    }, 120_000);

    it('a port in use', async () => {
      const taken = net.createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      const address = taken.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      try {
        await failsWith(
          childEnv({ OUTDIAL_DATA_DIR: tempDir(), PORT: String(port), HOST: '127.0.0.1' }),
          new RegExp(`Port ${port} is in use \\(another outdial\\?\\): stop it, or set PORT=${port + 1}`),
        );
      } finally {
        taken.close();
      }
    }, 120_000);

    it('an embedded database held by another outdial names its pid; a lock left by a dead one is taken over', async () => {
      const dataDir = tempDir();
      const lock = path.join(dataDir, 'pgdata', 'outdial.lock');
      // A pid that no longer runs: a process of ours that has exited.
      const gone = spawn(process.execPath, ['-e', '']);
      await new Promise((resolve) => gone.once('exit', resolve));
      fs.mkdirSync(path.dirname(lock), { recursive: true });
      fs.writeFileSync(lock, String(gone.pid));
      const env = childEnv({ OUTDIAL_DATA_DIR: dataDir, PORT: String(await freePort()), HOST: '127.0.0.1' });
      const first = startCli(['serve'], env);
      try {
        await first.waitFor(/listening on/, 90_000);
        expect(fs.readFileSync(lock, 'utf8')).toBe(String(first.process.pid));
        await failsWith(
          { ...env, PORT: String(await freePort()) },
          new RegExp(
            `The embedded database in ${escapeRegExp(path.join(dataDir, 'pgdata'))} is in use by process ${first.process.pid} \\(another outdial\\): stop it, give this one its own OUTDIAL_DATA_DIR, or set DATABASE_URL to share a PostgreSQL server`,
          ),
        );
      } finally {
        expect(await first.stop()).toBe(0);
      }
      expect(fs.existsSync(lock)).toBe(false);
    }, 180_000);

    it('a data dir this user cannot write, and one that is a file', async () => {
      const locked = tempDir();
      fs.chmodSync(locked, 0o500);
      const env = childEnv({ OUTDIAL_DATA_DIR: locked, PORT: String(await freePort()), HOME: os.tmpdir() });
      // root writes anywhere: the start then runs as nobody (util-linux's setpriv).
      const asRoot = process.getuid?.() === 0;
      const result = asRoot
        ? await runAs(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'], env)
        : await runCli(['serve'], env);
      expect(result.code, result.stderr).toBe(1);
      expect(result.stderr).toMatch(
        new RegExp(
          `^outdial: The data dir ${escapeRegExp(locked)} cannot be used by this user \\(permission denied on ${escapeRegExp(locked)}/\\S+\\): give it write access, or set OUTDIAL_DATA_DIR to another folder\\n$`,
        ),
      );
      const file = path.join(tempDir(), 'not-a-folder');
      fs.writeFileSync(file, '');
      await failsWith(
        childEnv({ OUTDIAL_DATA_DIR: file, PORT: String(await freePort()) }),
        new RegExp(
          `The data dir ${escapeRegExp(file)} is not a folder \\(${escapeRegExp(file)} is a file\\): move the file away, or set OUTDIAL_DATA_DIR to another folder`,
        ),
      );
    }, 120_000);

    it('a bad setting', async () => {
      await failsWith(
        childEnv({ OUTDIAL_DATA_DIR: tempDir(), LOG_FORMAT: 'colour' }),
        /LOG_FORMAT must be json or pretty, got "colour"/,
      );
    }, 60_000);
  }

  if (STORE === 'postgres') {
    it('a PostgreSQL server that does not answer (never its password), or lacks the database', async () => {
      const port = await freePort();
      const line = await failsWith(
        childEnv({
          OUTDIAL_DATA_DIR: tempDir(),
          DATABASE_URL: `postgres://outdial:s3cret@127.0.0.1:${port}/calls`,
        }),
        new RegExp(
          `PostgreSQL at outdial@127\\.0\\.0\\.1:${port}/calls is not answering \\(ECONNREFUSED\\): start it, or fix DATABASE_URL`,
        ),
      );
      expect(line).not.toContain('s3cret');
      const missing = new URL(DATABASE_TEST_URL);
      missing.pathname = '/outdial_no_such_database';
      await failsWith(
        childEnv({ OUTDIAL_DATA_DIR: tempDir(), DATABASE_URL: missing.toString() }),
        /PostgreSQL at \S+\/outdial_no_such_database has no database "outdial_no_such_database": create it \(createdb outdial_no_such_database\), or fix DATABASE_URL/,
        ['migrate'],
      );
    }, 120_000);

    it('a Redis that does not answer', async () => {
      const port = await freePort();
      await failsWith(
        childEnv({
          OUTDIAL_DATA_DIR: tempDir(),
          REDIS_URL: `redis://127.0.0.1:${port}`,
          PORT: String(await freePort()),
        }),
        new RegExp(
          `Redis at 127\\.0\\.0\\.1:${port} is not answering \\(ECONNREFUSED\\): start it, fix REDIS_URL, or unset REDIS_URL to keep the live view in this process`,
        ),
      );
    }, 120_000);
  }
});

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** `outdial serve` behind a command that changes who runs it. */
async function runAs(
  prefix: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number | null; stderr: string }> {
  const [command = '', ...args] = prefix;
  const child = spawn(command, [...args, process.execPath, '--import', 'tsx', 'src/cli/index.ts', 'serve'], {
    cwd: ROOT,
    env,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { code, stderr };
}
