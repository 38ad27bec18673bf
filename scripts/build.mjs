// The one owner of dist/: `npm run build` runs this file, and bin/outdial.js (what `npm start` runs)
// calls buildIfStale() so that a checkout always runs the JavaScript of its current sources.
//
// Why built JavaScript and not tsx: on a fresh clone, `npm start` through tsx reached ready in
// 3.7 s at 346 MB; the same start from dist/ took 2.5 s at 287 MB (docs/benchmarks.md, first start).
// The build itself takes about 4 s, once.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = path.join(ROOT, 'dist');
/** Written last by a successful build: its mtime is the build's. */
const STAMP = path.join(DIST, '.build-stamp');
/** A directory, so that taking it is atomic; holds the builder's pid. */
const LOCK = path.join(ROOT, '.outdial-build.lock');
/** What the build reads besides src/. */
const INPUTS = ['tsconfig.json', 'tsconfig.build.json', 'package.json', 'scripts/build.mjs'];
/** Non-TypeScript files that ship beside the compiled code. */
const ASSETS = ['adapters/postgres/migrations', 'adapters/postgres/pgimage', 'http/dashboard/assets'];

/** Whether this is a checkout that can build: the sources are here and TypeScript is installed. */
export function canBuild() {
  if (!fs.existsSync(path.join(ROOT, 'src'))) return false;
  try {
    createRequire(path.join(ROOT, 'package.json')).resolve('typescript/package.json');
    return true;
  } catch {
    return false;
  }
}

/**
 * Why dist/ must be built, or undefined when it is current: missing, or older than a source file
 * (by modification time, which a checkout, a pull or an edit all move forward).
 */
export function staleReason() {
  let built;
  try {
    built = fs.statSync(STAMP).mtimeMs;
  } catch {
    return fs.existsSync(DIST) ? 'dist/ was not made by this build script' : 'dist/ is missing';
  }
  for (const input of INPUTS) {
    const file = path.join(ROOT, input);
    if (fs.existsSync(file) && fs.statSync(file).mtimeMs > built) return `${input} changed`;
  }
  // 196 files: about 10 ms.
  for (const entry of fs.readdirSync(path.join(ROOT, 'src'), { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    if (fs.statSync(file).mtimeMs > built) return `${path.relative(ROOT, file)} changed`;
  }
  return undefined;
}

/**
 * Compiles src/ into dist/ and copies the assets. Returns whether it succeeded; tsc's messages go to
 * stderr. A build with type errors still emits JavaScript, but does not count as a build.
 */
export function build() {
  const typescript = createRequire(path.join(ROOT, 'package.json')).resolve('typescript/package.json');
  const tsc = path.join(path.dirname(typescript), 'bin', 'tsc');
  const compiled = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.build.json')], {
    cwd: ROOT,
    stdio: ['ignore', process.stderr, process.stderr],
  });
  if (compiled.status !== 0) return false;
  for (const asset of ASSETS) {
    fs.cpSync(path.join(ROOT, 'src', asset), path.join(DIST, asset), { recursive: true });
  }
  fs.writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  return true;
}

function lockHolderAlive() {
  try {
    const pid = Number(fs.readFileSync(path.join(LOCK, 'pid'), 'utf8'));
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: the process exists but is another user's.
    return error?.code === 'EPERM';
  }
}

const sleep = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/**
 * Builds dist/ when it is missing or stale, saying so on stderr (stdout stays the command's own,
 * `--json` included). Two processes started at once build once: the second waits for the first.
 * Returns 'current', 'built' or 'failed'.
 */
export function buildIfStale(log = (line) => process.stderr.write(`${line}\n`)) {
  let reason = staleReason();
  if (!reason) return 'current';
  // A builder killed between taking the lock and writing its pid leaves no pid: given up after 2 min.
  const deadline = Date.now() + 120_000;
  for (;;) {
    try {
      fs.mkdirSync(LOCK);
      fs.writeFileSync(path.join(LOCK, 'pid'), String(process.pid));
      break;
    } catch (error) {
      if (error?.code !== 'EEXIST') throw error;
      const orphaned = fs.existsSync(path.join(LOCK, 'pid')) ? !lockHolderAlive() : Date.now() > deadline;
      if (orphaned) {
        fs.rmSync(LOCK, { recursive: true, force: true });
        continue;
      }
      sleep(100);
    }
  }
  try {
    reason = staleReason();
    if (!reason) return 'current';
    log(`Building dist/ from src/ (${reason}); this happens once after a change and takes a few seconds`);
    const started = performance.now();
    if (!build()) return 'failed';
    log(`Built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return 'built';
  } finally {
    fs.rmSync(LOCK, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const started = performance.now();
  if (!build()) process.exit(1);
  process.stdout.write(`Built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}
