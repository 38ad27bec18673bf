import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutdialClient, OutdialError } from '../../src/client/index.js';
import { type Account, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { childEnv, runCli } from '../helpers/process.js';

/** `outdial suppressions ...` and the TypeScript client's suppression methods against a listening app. */
describe(`suppression list from the CLI and the client (${STORE})`, () => {
  let t: TestApp;
  let alice: Account;
  let env: NodeJS.ProcessEnv;
  let base: string;

  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    base = await t.runtime.app.listen({ port: 0, host: '127.0.0.1' });
    env = childEnv({ OUTDIAL_URL: base, OUTDIAL_API_KEY: alice.key });
  }, 60_000);
  afterAll(() => t.close());

  it('imports a CSV (added, already there and invalid lines reported), lists, adds and removes', async () => {
    await t.request({
      method: 'POST',
      url: '/api/v1/suppressions',
      key: alice.key,
      payload: { phoneNumber: '+14155550203' },
    });
    const file = path.join(t.dataDir, 'dnc.csv');
    fs.writeFileSync(
      file,
      [
        'phoneNumber,reason,ignored',
        '(415) 555-0201,asked by email,x',
        '+14155550202,,',
        '+14155550203,again,',
        'not a number,,',
        '+1000,,',
        '',
      ].join('\n'),
    );
    const imported = await runCli(['suppressions', 'import', file], env);
    expect(imported.stderr).toContain(`${file}:5: not a number is not a phone number (not added)`);
    expect(imported.stderr).toContain(`${file}:6:`);
    expect(imported.stdout).toBe('2 added, 1 already on the list, 2 invalid lines\n');
    expect(imported.code).toBe(0);

    const listed = await runCli(['suppressions', 'list', '--limit', '2'], env);
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[2]).toMatch(/^More: outdial suppressions list --cursor \S+$/);
    const all = await t.request({ method: 'GET', url: '/api/v1/suppressions', key: alice.key });
    const stored = all.json<Array<{ phoneNumber: string; reason: string | null }>>();
    expect(stored.map((s) => s.phoneNumber).sort()).toEqual(['+14155550201', '+14155550202', '+14155550203']);
    expect(stored.find((s) => s.phoneNumber === '+14155550201')?.reason).toBe('asked by email');

    // Each CLI start costs seconds on a loaded machine: add and remove, checked through the API.
    // A 10-digit number add accepts as import does: read in the account's country (US here).
    const added = await runCli(['suppressions', 'add', '4155550204', '--reason', 'by phone'], env);
    expect(added.stdout).toBe('Added +14155550204 to the suppression list\n');
    const refused = await runCli(['suppressions', 'add', '555-0123'], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('phoneNumber: 555-0123 is not a valid number for US');
    const removed = await runCli(['suppressions', 'remove', '+14155550203'], env);
    expect(removed.stdout).toBe('Removed +14155550203 from the suppression list\n');
    const after = await t.request({ method: 'GET', url: '/api/v1/suppressions', key: alice.key });
    expect(
      after
        .json<Array<{ phoneNumber: string }>>()
        .map((s) => s.phoneNumber)
        .sort(),
    ).toEqual(['+14155550201', '+14155550202', '+14155550204']);
  }, 180_000);

  it('the TypeScript client adds, pages through and removes', async () => {
    const client = new OutdialClient({ baseUrl: base, apiKey: alice.key });
    const first = await client.addSuppression('+14155550211', 'client');
    expect(first).toEqual({
      created: true,
      suppression: {
        phoneNumber: '+14155550211',
        reason: 'client',
        sourceCallId: null,
        createdAt: expect.any(String),
      },
    });
    expect((await client.addSuppression('+14155550211')).created).toBe(false);
    const seen: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await client.listSuppressions({ limit: 2, ...(cursor ? { cursor } : {}) });
      seen.push(...page.items.map((s) => s.phoneNumber));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect(seen).toContain('+14155550211');
    expect(new Set(seen).size).toBe(seen.length);
    await client.removeSuppression('+14155550211');
    await expect(client.removeSuppression('+14155550211')).rejects.toBeInstanceOf(OutdialError);
  });
});
