import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openApiDocument } from '../../src/http/openapi-document.js';

const run = promisify(execFile);
const bin = (name: string) => path.resolve('node_modules/.bin', name);

/**
 * The document as an integrator lints it: written to a file as `npm run openapi` writes it, then
 * given to the two linters integrators use, each with its stock rules. Warnings are part of the
 * contract too: docs/decisions.md says which ones we keep, and the lists below are exactly those
 * (none so far), so a new route that lacks what the linters ask for fails here.
 */
describe('the OpenAPI document under third-party linters', () => {
  let dir: string;
  let file: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-openapi-'));
    file = path.join(dir, 'openapi.json');
    fs.writeFileSync(file, `${JSON.stringify(await openApiDocument('0.0.0-test'), null, 2)}\n`);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('has no error and no warning under Redocly CLI with the recommended rules', async () => {
    // Redocly exits 1 on an error: read its report either way.
    const result = await run(bin('redocly'), ['lint', '--extends=recommended', '--format=json', file], {
      cwd: dir,
      env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
    }).catch((error: { stdout: string }) => error);
    const report = JSON.parse(result.stdout) as {
      totals: { errors: number; warnings: number };
      problems: Array<{ ruleId: string; severity: string; message: string }>;
    };
    const found = report.problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`);
    expect(found).toEqual([]);
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 });
  }, 60_000);

  it("has no error and no warning under Spectral with spectral:oas (the repository's .spectral.yaml)", async () => {
    const out = path.join(dir, 'spectral.json');
    // Spectral exits 1 when it finds an error; the report file is written either way.
    await run(
      bin('spectral'),
      ['lint', file, '--ruleset', path.resolve('.spectral.yaml'), '--format', 'json', '--output', out],
      { cwd: dir },
    ).catch(() => undefined);
    const results = JSON.parse(fs.readFileSync(out, 'utf8')) as Array<{
      code: string;
      severity: number;
      message: string;
      path: string[];
    }>;
    // Severity 0 is an error, 1 a warning (2 and 3, information and hints, are not reported by spectral:oas).
    const found = results.map((r) => `${r.severity} ${r.code} at ${r.path.join('.')}: ${r.message}`);
    expect(found).toEqual([]);
  }, 60_000);
});
