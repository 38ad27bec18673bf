import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutdialClient, OutdialError } from '../../src/client/index.js';
import { type Account, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { callEnded, dialCall } from '../helpers/calls.js';
import { childEnv, runCli } from '../helpers/process.js';

/** `outdial call list` and the TypeScript client's listCalls against a listening app. */
describe(`calls list from the CLI and the client (${STORE})`, () => {
  let t: TestApp;
  let alice: Account;
  let env: NodeJS.ProcessEnv;
  let base: string;
  const callIds: string[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount();
    base = await t.runtime.app.listen({ port: 0, host: '127.0.0.1' });
    env = childEnv({ OUTDIAL_URL: base, OUTDIAL_API_KEY: alice.key });
    for (const [to, name] of [
      ['+14155550131', 'Ada Lovelace'],
      ['+14155550001', 'Busy Bee'],
      ['+14155550133', 'Grace Hopper'],
    ] as const) {
      const callId = await dialCall(t, alice, to, name);
      callIds.push(callId);
      await callEnded(t, alice, callId);
    }
  }, 60_000);
  afterAll(() => t.close());

  it('prints a table, newest first, with the command for the next page', async () => {
    const listed = await runCli(['call', 'list', '--limit', '2'], env);
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    const lines = listed.stdout.trimEnd().split('\n');
    expect(lines).toHaveLength(4);
    expect(lines[0]).toMatch(/^CALL\s+CREATED\s+STATUS\s+NUMBER\s+CONTACT\s+DURATION\s+BATCH$/);
    expect(lines[1]).toMatch(
      new RegExp(
        `^${callIds[2]}  \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\dZ  COMPLETED  \\+14155550133  Grace Hopper  \\d+ s\\s+-$`,
      ),
    );
    expect(lines[2]).toMatch(new RegExp(`^${callIds[1]}  .*  BUSY\\s+\\+14155550001  Busy Bee\\s+0 s\\s+-$`));
    // The columns line up: every cell of a column starts where its title does.
    expect(lines[1]?.indexOf('+1415')).toBe(lines[0]?.indexOf('NUMBER'));
    expect(lines[2]?.indexOf('+1415')).toBe(lines[0]?.indexOf('NUMBER'));
    expect(lines[3]).toBe(`More: outdial call list --limit 2 --cursor ${callIds[1]}`);
  }, 60_000);

  it('passes every filter flag and prints JSON with --json; a bad filter names its field', async () => {
    const json = await runCli(
      [
        'call',
        'list',
        '--status',
        'COMPLETED',
        '--phone-number',
        '+14155550131',
        '--from',
        '2000-01-01T00:00:00Z',
        '--to',
        '2999-01-01T00:00:00Z',
        '--json',
      ],
      env,
    );
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout);
    expect(parsed.nextCursor).toBeNull();
    expect(parsed.calls).toHaveLength(1);
    expect(parsed.calls[0]).toMatchObject({
      callId: callIds[0],
      contactName: 'Ada Lovelace',
      phoneNumber: '+14155550131',
      status: 'COMPLETED',
      batchId: null,
    });
    const none = await runCli(['call', 'list', '--batch-id', 'bat_none', '--cursor', callIds[2] ?? ''], env);
    expect(none.stdout).toBe('(no calls)\n');
    const bad = await runCli(['call', 'list', '--phone-number', '555'], env);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/^outdial: 400 Bad Request: phoneNumber: 555 is not a valid number for US/);
    expect(bad.stderr).toContain('  phoneNumber: 555 is not a valid number for US');
  }, 90_000);

  it('the TypeScript client pages through the calls and reports a refused filter', async () => {
    const client = new OutdialClient({ baseUrl: base, apiKey: alice.key });
    const first = await client.listCalls({ limit: 2 });
    expect(first.items.map((c) => c.callId)).toEqual([callIds[2], callIds[1]]);
    expect(first.nextCursor).toBe(callIds[1]);
    const second = await client.listCalls({ limit: 2, cursor: first.nextCursor ?? '' });
    expect(second).toEqual({ items: [expect.objectContaining({ callId: callIds[0] })], nextCursor: null });
    const busy = await client.listCalls({ status: 'BUSY' });
    expect(busy.items.map((c) => c.callId)).toEqual([callIds[1]]);
    const refused = await client.listCalls({ from: 'yesterday' }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OutdialError);
    expect((refused as OutdialError).status).toBe(400);
    expect((refused as OutdialError).body.details).toEqual({
      fieldErrors: { from: ['must match format "date-time"'] },
    });
  });
});
