import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, report, sleep } from './harness.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const ROOT = process.cwd();

/** The README's first command, measured as a new user meets it. */
interface Start {
  /** From spawning the command to its "listening on" line. */
  readyMs: number;
  /** The one-time build of dist/, as the start printed it (0 when dist/ was current). */
  buildMs: number;
  /** Peak resident memory of the server process up to ready (VmHWM). */
  peakRss: number;
}

/** The pids below `pid`, through /proc's children lists. */
function descendants(pid: number): number[] {
  const found: number[] = [];
  const visit = (parent: number) => {
    let tasks: string[] = [];
    try {
      tasks = fs.readdirSync(`/proc/${parent}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children = '';
      try {
        children = fs.readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8');
      } catch {}
      for (const child of children.split(' ').filter(Boolean).map(Number)) {
        found.push(child);
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

/** The server among `root` and its descendants: the node process whose arguments include `serve`. */
export function serverPid(root: number): number | undefined {
  for (const pid of [root, ...descendants(root)]) {
    try {
      const argv = fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (path.basename(argv[0] ?? '') === 'node' && argv.includes('serve')) return pid;
    } catch {}
  }
  return undefined;
}

const peakOf = (pid: number) =>
  Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;

/** Runs `command` in `dir` with an empty data dir of its own, up to ready, then stops it. */
async function startOnce(dir: string, command: string[], dataDir: string): Promise<Start> {
  const started = performance.now();
  const child: ChildProcess = spawn(command[0] ?? 'npm', command.slice(1), {
    cwd: dir,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      OUTDIAL_DATA_DIR: dataDir,
      PORT: String(await freePort()),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    // Polled every 10 ms: the harness sleeps between reads and costs no CPU of its own.
    while (!/listening on/.test(out)) {
      if (child.exitCode !== null || performance.now() - started > 300_000)
        throw new Error(`${command.join(' ')} did not start:\n${out}`);
      await sleep(10);
    }
    const readyMs = performance.now() - started;
    const pid = child.pid === undefined ? undefined : serverPid(child.pid);
    if (pid === undefined) throw new Error(`no server process under ${command.join(' ')}`);
    return {
      readyMs,
      buildMs: Number(/^Built dist\/ in (\d+\.\d) s$/m.exec(out)?.[1] ?? 0) * 1000,
      peakRss: peakOf(pid),
    };
  } finally {
    // The whole group: npm, its shell and the server.
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGINT');
    await exited;
  }
}

/** Two busy loops, one per core of a 2-core machine: the "loaded" runs. */
function startHogs(): ChildProcess[] {
  return [0, 1].map(() => spawn(process.execPath, ['-e', 'for (;;) {}'], { stdio: 'ignore' }));
}

async function measure(loaded: boolean) {
  const npm: Start[] = [];
  const tsx: Start[] = [];
  const again: Start[] = [];
  const hogs = loaded ? startHogs() : [];
  try {
    for (let run = 0; run < RUNS; run++) {
      // A fresh clone of the committed tree, with the checkout's node_modules linked in (the install
      // is measured on its own, docs/benchmarks.md).
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-bench-start-'));
      try {
        execFileSync('git', ['clone', '-q', ROOT, path.join(dir, 'outdial')]);
        const clone = path.join(dir, 'outdial');
        fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(clone, 'node_modules'));
        npm.push(await startOnce(clone, ['npm', 'start'], path.join(dir, 'data-npm')));
        again.push(await startOnce(clone, ['npm', 'start'], path.join(dir, 'data-npm')));
        // The baseline: the same first start through tsx, as `npm start` ran before.
        tsx.push(
          await startOnce(
            clone,
            [process.execPath, '--import', 'tsx', 'src/cli/index.ts', 'serve'],
            path.join(dir, 'data-tsx'),
          ),
        );
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    }
  } finally {
    for (const hog of hogs) hog.kill('SIGKILL');
  }
  return { npm, tsx, again };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? 0;

function range(starts: Start[], key: keyof Start, unit: 's' | 'MB'): string {
  const scale = unit === 's' ? 1000 : 1024 * 1024;
  const values = starts.map((start) => start[key] / scale);
  const text = (value: number) => (unit === 's' ? value.toFixed(2) : value.toFixed(0));
  return `${text(Math.min(...values))}–${text(Math.max(...values))} ${unit} (median ${text(median(values))})`;
}

/**
 * `npm run bench npm-start`: the README's `npm start` on a fresh clone (build once, then the built
 * JavaScript) beside the same first start through tsx, and a second `npm start`; on a quiet machine
 * and beside two CPU hogs, in one run.
 */
export async function benchNpmStart(): Promise<void> {
  for (const loaded of [false, true]) {
    const { npm, tsx, again } = await measure(loaded);
    const ratio = (key: keyof Start) =>
      `${(median(npm.map((start) => start[key])) / median(tsx.map((start) => start[key]))).toFixed(2)}×`;
    report(
      `npm start on a fresh clone, ${loaded ? 'beside two CPU hogs' : 'quiet'} (load average ${os.loadavg()[0]?.toFixed(1)}), ${RUNS} runs each`,
      [
        ['npm start (first): ready after', range(npm, 'readyMs', 's')],
        ['npm start (first): of which the build', range(npm, 'buildMs', 's')],
        ['npm start (first): server peak RSS at ready', range(npm, 'peakRss', 'MB')],
        ['npm start (second): ready after', range(again, 'readyMs', 's')],
        ['npm start (second): server peak RSS at ready', range(again, 'peakRss', 'MB')],
        ['baseline, tsx (first): ready after', range(tsx, 'readyMs', 's')],
        ['baseline, tsx (first): server peak RSS at ready', range(tsx, 'peakRss', 'MB')],
        ['first npm start / tsx: ready', ratio('readyMs')],
        ['first npm start / tsx: peak RSS', ratio('peakRss')],
        [
          'second npm start / tsx: ready',
          `${(median(again.map((s) => s.readyMs)) / median(tsx.map((s) => s.readyMs))).toFixed(2)}×`,
        ],
      ],
    );
  }
}
