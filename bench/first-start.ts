import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, report, sleep } from './harness.js';

const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const CLI = 'dist/cli/index.js';
const IMAGE = 'dist/adapters/postgres/pgimage';

interface Start {
  /** From spawning `outdial serve` to its "listening on" line. */
  readyMs: number;
  /** Creating the data dir, as the start printed it (0 when it existed). */
  createMs: number;
  /** Applying the migrations, as the start printed it (0 when there were none). */
  migrateMs: number;
  /** Peak resident memory of the process up to ready (VmHWM; the target is < 300 MB). */
  peakRss: number;
  /** The same peak 3 s later: the workers' first passes and the demo seed run after ready. */
  settledRss: number;
}

/** How long after ready the peak is read again. */
const SETTLE_MS = 3_000;

/** One `outdial serve` (built, its own process) on `dataDir`, measured up to ready and a moment beyond, then stopped. */
async function serveOnce(dataDir: string): Promise<Start> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'serve'], {
    env: {
      PATH: process.env.PATH,
      OUTDIAL_DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      HOST: '127.0.0.1',
      PORT: String(await freePort()),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    while (!/listening on/.test(out)) {
      if (child.exitCode !== null || performance.now() - started > 300_000)
        throw new Error(`outdial serve did not start:\n${out}`);
      await sleep(10);
    }
    const readyMs = performance.now() - started;
    const peak = () =>
      Number(/^VmHWM:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) *
      1024;
    const peakRss = peak();
    await sleep(SETTLE_MS);
    const seconds = (pattern: RegExp) => Number(pattern.exec(out)?.[1] ?? 0) * 1000;
    return {
      readyMs,
      createMs: seconds(/^Created the embedded database .* in (\d+\.\d) s$/m),
      migrateMs: seconds(/^Applied migrations .* in (\d+\.\d) s$/m),
      peakRss,
      settledRss: peak(),
    };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/**
 * The embedded first start: `outdial serve` on an empty data dir made from the bundled image,
 * beside the same start made by PGlite's initdb (the image moved aside, as when it is missing) and a
 * second start of an existing data dir, alternated in one run so that all three see the same load.
 */
export async function benchFirstStart(): Promise<void> {
  const image: Start[] = [];
  const initdb: Start[] = [];
  const again: Start[] = [];
  for (let run = 0; run < RUNS; run++) {
    const withImage = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-bench-first-'));
    const withInitdb = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-bench-first-'));
    try {
      image.push(await serveOnce(withImage));
      again.push(await serveOnce(withImage));
      fs.renameSync(IMAGE, `${IMAGE}.aside`);
      try {
        initdb.push(await serveOnce(withInitdb));
      } finally {
        fs.renameSync(`${IMAGE}.aside`, IMAGE);
      }
    } finally {
      fs.rmSync(withImage, { recursive: true, force: true });
      fs.rmSync(withInitdb, { recursive: true, force: true });
    }
  }
  const median = (starts: Start[], key: keyof Start) => {
    const sorted = starts.map((start) => start[key]).sort((a, b) => a - b);
    return sorted[Math.floor(sorted.length / 2)] ?? 0;
  };
  const range = (starts: Start[], key: keyof Start, unit: 's' | 'MB') => {
    const values = starts.map((start) => start[key] / (unit === 's' ? 1000 : 1024 * 1024));
    const text = (value: number) => (unit === 's' ? value.toFixed(2) : value.toFixed(0));
    return `${text(Math.min(...values))}–${text(Math.max(...values))} ${unit} (median ${text(median(starts, key) / (unit === 's' ? 1000 : 1024 * 1024))})`;
  };
  const ratio = (key: keyof Start) => `${(median(image, key) / median(initdb, key)).toFixed(2)}×`;
  report(`First start of outdial serve on the embedded database, ${RUNS} runs each`, [
    ['image: ready after', range(image, 'readyMs', 's')],
    ['image: database created in', range(image, 'createMs', 's')],
    ['image: migrations applied in', range(image, 'migrateMs', 's')],
    ['image: peak RSS', range(image, 'peakRss', 'MB')],
    [`image: peak RSS ${SETTLE_MS / 1000} s after ready`, range(image, 'settledRss', 'MB')],
    ['initdb: ready after', range(initdb, 'readyMs', 's')],
    ['initdb: database created in', range(initdb, 'createMs', 's')],
    ['initdb: peak RSS', range(initdb, 'peakRss', 'MB')],
    ['second start: ready after', range(again, 'readyMs', 's')],
    ['second start: peak RSS', range(again, 'peakRss', 'MB')],
    [`second start: peak RSS ${SETTLE_MS / 1000} s after ready`, range(again, 'settledRss', 'MB')],
    ['image / initdb: ready', ratio('readyMs')],
    ['image / initdb: database created', ratio('createMs')],
    ['image / initdb: peak RSS', ratio('peakRss')],
    [
      'image beyond a second start',
      `ready +${((median(image, 'readyMs') - median(again, 'readyMs')) / 1000).toFixed(2)} s, of which migrations ${(median(image, 'migrateMs') / 1000).toFixed(2)} s; peak RSS +${((median(image, 'peakRss') - median(again, 'peakRss')) / 1024 / 1024).toFixed(0)} MB`,
    ],
  ]);
}
