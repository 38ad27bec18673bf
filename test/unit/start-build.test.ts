import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../helpers/process.js';

/**
 * `npm start` runs bin/outdial.js, which builds dist/ when it is missing or older than the sources
 * (scripts/build.mjs). Each test works on a copy of the checkout's build inputs, so the project's
 * own dist/ is never touched; node_modules is linked.
 */

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function outdial(dir: string, args: string[]): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(dir, 'bin/outdial.js'), ...args], {
      cwd: dir,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A build transpiles the whole project: under a second on a quiet machine, more beside CPU hogs. */
const BUILD_TIMEOUT_MS = 240_000;

const building = (run: Run) => run.stderr.split('\n').filter((line) => line.startsWith('Building dist/'));

describe('npm start builds dist/ once, and again when the sources change', () => {
  let dir: string;

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-build-'));
    for (const entry of [
      'bin',
      'src',
      'scripts/build.mjs',
      'package.json',
      'tsconfig.json',
      'tsconfig.build.json',
    ]) {
      fs.cpSync(path.join(ROOT, entry), path.join(dir, entry), { recursive: true });
    }
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it(
    'a first run without dist/ builds it, says why on stderr, and runs the command',
    async () => {
      const run = await outdial(dir, ['--help']);
      expect(run.code).toBe(0);
      expect(building(run)).toEqual(['Building dist/ from src/ (dist/ is missing); once after a change']);
      expect(run.stderr).toMatch(/^Built dist\/ in \d+\.\d s$/m);
      // stdout is the command's alone (scripts parse `--json` output).
      expect(run.stdout).toMatch(/^Usage: outdial /);
      expect(fs.existsSync(path.join(dir, 'dist/cli/index.js'))).toBe(true);
      // The assets ship beside the compiled code.
      expect(fs.readdirSync(path.join(dir, 'dist/adapters/postgres/migrations')).length).toBeGreaterThan(0);
      expect(fs.existsSync(path.join(dir, 'dist/http/dashboard/assets/app.js'))).toBe(true);
    },
    BUILD_TIMEOUT_MS,
  );

  it('a later run with current sources does not build', async () => {
    const run = await outdial(dir, ['--help']);
    expect(run.code).toBe(0);
    expect(run.stderr).toBe('');
    expect(run.stdout).toMatch(/^Usage: outdial /);
  });

  it(
    'an edited source is rebuilt once, even by two commands started together',
    async () => {
      const file = path.join(dir, 'src/cli/index.ts');
      fs.appendFileSync(file, "\nexport const editedMarker = 'edited-after-the-first-build';\n");
      const runs = await Promise.all([outdial(dir, ['--help']), outdial(dir, ['--help'])]);
      for (const run of runs) expect(run.code).toBe(0);
      expect(runs.flatMap(building)).toEqual([
        'Building dist/ from src/ (src/cli/index.ts changed); once after a change',
      ]);
      expect(fs.readFileSync(path.join(dir, 'dist/cli/index.js'), 'utf8')).toContain(
        'edited-after-the-first-build',
      );
      expect(fs.existsSync(path.join(dir, '.outdial-build.lock'))).toBe(false);
    },
    BUILD_TIMEOUT_MS,
  );
});
