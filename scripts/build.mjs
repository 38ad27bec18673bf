// The one owner of dist/. bin/outdial.js (what `npm start` runs) calls buildIfStale(), so that a
// checkout always runs the JavaScript of its current sources; `npm run build` (this file) also
// writes the type declarations that the published client needs.
//
// Why built JavaScript and not tsx: on a fresh clone, `npm start` through tsx peaked at 331-338 MB
// at ready; the same start from dist/ at 269-272 MB, and a later start is ready in a quarter of the
// time (docs/benchmarks.md, npm start). The JavaScript is esbuild's, file by file, the same
// transform tsx applies at run time and the test suite runs on: 196 files in under a second, where
// tsc took 4 s on a quiet machine and 17 s on a busy one. tsc checks the types in `npm test`.
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

const requireHere = createRequire(path.join(ROOT, 'package.json'));

/** Whether this is a checkout that can build: the sources are here and esbuild is installed. */
export function canBuild() {
  if (!fs.existsSync(path.join(ROOT, 'src'))) return false;
  try {
    requireHere.resolve('esbuild');
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

/** The TypeScript sources under src/. */
function sources() {
  return fs
    .readdirSync(path.join(ROOT, 'src'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => path.join(entry.parentPath, entry.name));
}

/**
 * Transpiles src/ into dist/ (one module per source, with source maps) and copies the assets.
 * Returns whether it succeeded; esbuild's messages go to stderr.
 */
export async function build() {
  const esbuild = await import(requireHere.resolve('esbuild'));
  try {
    await esbuild.build({
      entryPoints: sources(),
      outdir: DIST,
      outbase: path.join(ROOT, 'src'),
      format: 'esm',
      platform: 'node',
      target: 'node20',
      sourcemap: 'linked',
      logLevel: 'error',
    });
  } catch {
    return false;
  }
  for (const asset of ASSETS) {
    fs.cpSync(path.join(ROOT, 'src', asset), path.join(DIST, asset), { recursive: true });
  }
  fs.writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  return true;
}

/** The .d.ts files of dist/ (for `outdial/client`), by tsc, which also checks the types. */
function declarations() {
  const tsc = path.join(path.dirname(requireHere.resolve('typescript/package.json')), 'bin', 'tsc');
  const run = spawnSync(
    process.execPath,
    [tsc, '-p', path.join(ROOT, 'tsconfig.build.json'), '--emitDeclarationOnly'],
    { cwd: ROOT, stdio: 'inherit' },
  );
  return run.status === 0;
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

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Builds dist/ when it is missing or stale, saying so on stderr (stdout stays the command's own,
 * `--json` included). Two processes started at once build once: the second waits for the first.
 * Returns 'current', 'built' or 'failed'.
 */
export async function buildIfStale(log = (line) => process.stderr.write(`${line}\n`)) {
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
      await sleep(100);
    }
  }
  try {
    reason = staleReason();
    if (!reason) return 'current';
    log(`Building dist/ from src/ (${reason}); once after a change`);
    const started = performance.now();
    if (!(await build())) return 'failed';
    log(`Built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    return 'built';
  } finally {
    fs.rmSync(LOCK, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const started = performance.now();
  if (!(await build()) || !declarations()) process.exit(1);
  process.stdout.write(`Built dist/ in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
}
