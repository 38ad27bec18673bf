import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStorage, DATABASE_TEST_URL, STORE, type TestStorage } from '../helpers/app.js';
import { type Child, childEnv, freePort, ROOT, runCli, startCli } from '../helpers/process.js';

/** The campaign CLI against a running `outdial serve`: a CSV in, a finished campaign out. */
describe(`outdial batch and call commands (${STORE})`, () => {
  let storage: TestStorage | null = null;
  let server: Child;
  let dataDir: string;
  let env: NodeJS.ProcessEnv;
  let agentId: string;

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-cli-batch-'));
    const port = await freePort();
    let databaseUrl: string | undefined;
    if (STORE === 'postgres') {
      storage = await createTestStorage('postgres');
      databaseUrl = `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`;
    }
    const serverEnv = childEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      OUTDIAL_DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      OUTDIAL_SIM_RING_MS: '20',
      OUTDIAL_SIM_TALK_MS: '100',
    });
    server = startCli(['serve'], serverEnv);
    await server.waitFor(/API key:\s+\S+\n/, 90_000);
    const out = server.output();
    agentId = out.match(/agent:\s+(agt_\S+)/)?.[1] ?? '';
    // A client's environment: where the server is and the key, nothing else.
    env = childEnv({
      OUTDIAL_URL: `http://127.0.0.1:${port}`,
      OUTDIAL_API_KEY: out.match(/API key:\s+(\S+)/)?.[1],
    });
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await storage?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const csv = (name: string, lines: string[]) => {
    const file = path.join(dataDir, name);
    fs.writeFileSync(file, `${lines.join('\n')}\n`);
    return file;
  };

  it('submits a CSV (bad rows reported by line and not sent), watches it finish, and reads it back', async () => {
    const file = csv('contacts.csv', [
      'phoneNumber,name,email,company,plan',
      '(415) 555-0131,Ann,ann@example.com,Acme,Pro',
      '+14155550132,"Ben, Jr.",,,Basic',
      'call me maybe,Nobody,,,',
      '+14155550134,Bad email,nope,,',
      '415-555-0135,Cleo,,,',
    ]);
    const created = await runCli(
      [
        'batch',
        'create',
        '--agent',
        agentId,
        '--csv',
        file,
        '--rate',
        '30',
        '--max-attempts',
        '1',
        '--tag',
        'cli',
        '--name',
        'From CSV',
      ],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/accepted: 3 contacts sent, 2 rows skipped/);
    expect(created.stderr).toContain(`${file}:4: call me maybe is not a phone number (not sent)`);
    expect(created.stderr).toContain(`${file}:5: "nope" is not an email address (not sent)`);
    const batchId = created.stdout.match(/Batch (bat_\S+) accepted/)?.[1] ?? '';

    const watched = await runCli(['batch', 'watch', batchId, '--every', '200'], env);
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toContain(`Batch ${batchId} completed: 3/3 processed\n  3 succeeded, 0 failed`);
    // Not a terminal (a log, CI): the progress lines on stderr are 80 columns at most too.
    expect(watched.stderr).toMatch(/\] 100% 3\/3 ok 3 failed 0 [\d.]+ calls\/s completed$/m);
    for (const line of `${watched.stdout}\n${watched.stderr}`.split('\n'))
      expect(line.length).toBeLessThanOrEqual(80);

    const status = await runCli(['batch', 'status', batchId, '--json'], env);
    expect(JSON.parse(status.stdout)).toMatchObject({
      batchId,
      name: 'From CSV',
      status: 'completed',
      tags: ['cli'],
    });
    const listed = await runCli(['batch', 'list', '--tag', 'cli', '--json'], env);
    expect(JSON.parse(listed.stdout).batches.map((b: { batchId: string }) => b.batchId)).toEqual([batchId]);
    const human = await runCli(['batch', 'list'], env);
    expect(human.stdout).toContain(`${batchId}  completed  3/3  From CSV`);
  }, 60_000);

  it('watches a campaign in an 80-column terminal without a line wider than the terminal', async () => {
    const file = csv('watched.csv', [
      'phone',
      '+14155550171',
      '+14155550172',
      '+14155550173',
      '+14155550174',
    ]);
    const created = await runCli(
      ['batch', 'create', '--agent', agentId, '--csv', file, '--rate', '2', '--json'],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const { batchId } = JSON.parse(created.stdout) as { batchId: string };
    const ESC = String.fromCharCode(27);
    // A real terminal: `script` gives the command a pseudo-terminal, sized with stty.
    const command = `stty cols 80 rows 24; exec ${process.execPath} --import tsx src/cli/index.ts batch watch ${batchId} --every 200`;
    const child = spawn('script', ['-qec', command, '/dev/null'], {
      cwd: ROOT,
      env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let screen = '';
    child.stdout.on('data', (chunk: Buffer) => {
      screen += chunk.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    expect(code, screen).toBe(0);
    // What the terminal shows: a line ends at a newline, a carriage return or a move to column 1
    // (how the bar redraws itself); other escape sequences take no room.
    const shown = screen
      .split(new RegExp(`\r\n|\r|\n|${ESC}\\[1?G`))
      .map((line) => line.replace(new RegExp(`${ESC}\\[[0-9;?]*[A-Za-z]|${ESC}[78]`, 'g'), ''));
    expect(shown).toContain(`Watching ${batchId} (Ctrl-C leaves the campaign running)`);
    expect(
      // The status the first look found: on a busy machine the campaign may be over by then.
      shown.some((line) =>
        /^\[[█░]+\] \d+% \d\/4 ok \d failed \d [\d.]+ calls\/s (processing|completed)$/.test(line),
      ),
    ).toBe(true);
    expect(shown).toContain(`Batch ${batchId} completed: 4/4 processed`);
    for (const line of shown) expect(line.length, line).toBeLessThanOrEqual(80);
  }, 60_000);

  it('leaves a voicemail once, and calls again after it with --retry-on-voicemail', async () => {
    // …0004 is answered by a machine; the agent leaves its message (issue 24 §6).
    const submit = async (name: string, flags: string[]) => {
      const file = csv(name, ['phone', '+14155570004']);
      const created = await runCli(
        ['batch', 'create', '--agent', agentId, '--csv', file, '--max-attempts', '3', ...flags, '--json'],
        env,
      );
      expect(created.code, created.stderr).toBe(0);
      return (JSON.parse(created.stdout) as { batchId: string }).batchId;
    };
    const status = async (batchId: string) =>
      JSON.parse((await runCli(['batch', 'status', batchId, '--json'], env)).stdout) as {
        status: string;
        statistics: { processed: number; pending: number };
        recentCalls: Array<{ status: string }>;
      };
    const once = await submit('voicemail-once.csv', []);
    const again = await submit('voicemail-again.csv', ['--retry-on-voicemail']);
    await expect.poll(async () => (await status(once)).status).toBe('completed');
    expect((await status(once)).recentCalls.map((call) => call.status)).toEqual(['VOICEMAIL']);
    // Its first call over, the contact waits noAnswerDelay (an hour by default) for its second.
    await expect
      .poll(async () => (await status(again)).recentCalls.map((call) => call.status))
      .toEqual(['VOICEMAIL']);
    expect(await status(again)).toMatchObject({
      status: 'processing',
      statistics: { processed: 0, pending: 1 },
    });
    expect((await runCli(['batch', 'cancel', again], env)).code).toBe(0);
  }, 60_000);

  it('cancels a scheduled campaign and dials a single call', async () => {
    const file = csv('later.csv', ['phone,name', '+14155550141,Later']);
    const created = await runCli(
      [
        'batch',
        'create',
        '--agent',
        agentId,
        '--csv',
        file,
        '--start',
        '2099-01-01T09:00:00',
        '--timezone',
        'America/New_York',
        '--json',
      ],
      env,
    );
    expect(created.code, created.stderr).toBe(0);
    const { batchId } = JSON.parse(created.stdout) as { batchId: string };
    const cancelled = await runCli(['batch', 'cancel', batchId], env);
    expect(cancelled.code).toBe(0);
    expect(cancelled.stdout).toContain('Batch cancelled: 1 pending call removed from the queue');
    const pause = await runCli(['batch', 'pause', batchId], env);
    expect(pause.code).not.toBe(0);
    expect(pause.stderr).toContain('cannot be paused');
    const dialed = await runCli(['call', 'dial', '--agent', agentId, '--to', '+14155550142', '--json'], env);
    expect(dialed.code, dialed.stderr).toBe(0);
    expect(JSON.parse(dialed.stdout)).toMatchObject({
      callId: expect.stringMatching(/^call_/),
      status: 'ONGOING',
    });
  }, 60_000);

  it('manages SIP trunks with the admin token', async () => {
    const out = server.output();
    const admin = childEnv({
      OUTDIAL_URL: env.OUTDIAL_URL,
      OUTDIAL_ADMIN_TOKEN: out.match(/Admin token[^\n]*\n\s+(\S+)/)?.[1],
    });
    const userId = out.match(/user:\s+(usr_\S+)/)?.[1] ?? '';
    const created = await runCli(
      [
        'sip-trunks',
        'create',
        '--user',
        userId,
        '--name',
        'PBX',
        '--host',
        'pbx.example.com',
        '--from',
        '+14155550100',
        '--password',
        'pw-123456',
        '--json',
      ],
      admin,
    );
    expect(created.code, created.stderr).toBe(0);
    const trunk = JSON.parse(created.stdout) as { id: string; hasPassword: boolean };
    expect(trunk.hasPassword).toBe(true);
    expect(created.stdout).not.toContain('pw-123456');
    const listed = await runCli(['sip-trunks', 'list', '--user', userId], admin);
    expect(listed.stdout).toContain(
      `${trunk.id}  PBX  pbx.example.com:5060  from +14155550100  (password set)`,
    );
    expect((await runCli(['sip-trunks', 'update', trunk.id, '--port', '5080'], admin)).stdout).toContain(
      'Updated',
    );
    expect((await runCli(['sip-trunks', 'delete', trunk.id], admin)).stdout).toContain(
      `Deleted SIP trunk ${trunk.id}`,
    );
  }, 60_000);

  it('explains what is wrong instead of sending anything', async () => {
    const noKey = await runCli(['batch', 'list'], childEnv({ OUTDIAL_URL: env.OUTDIAL_URL }));
    expect(noKey.code).toBe(1);
    expect(noKey.stderr).toContain('No API key');
    const noPhones = await runCli(
      ['batch', 'create', '--agent', agentId, '--csv', csv('bad.csv', ['name', 'Ann'])],
      env,
    );
    expect(noPhones.code).toBe(1);
    expect(noPhones.stderr).toContain('no phone number column');
    const missing = await runCli(
      ['batch', 'create', '--agent', agentId, '--csv', path.join(dataDir, 'nope.csv')],
      env,
    );
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('cannot read');
    const refused = await runCli(
      ['batch', 'create', '--agent', 'agt_unknown', '--csv', csv('one.csv', ['phone', '+14155550150'])],
      env,
    );
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('404');
    const dry = await runCli(
      [
        'batch',
        'create',
        '--agent',
        agentId,
        '--csv',
        csv('dry.csv', ['phone', '+14155550151', 'x']),
        '--dry-run',
      ],
      env,
    );
    // The server's preflight report; nothing is created.
    expect(dry.stdout).toContain(
      'Preflight (nothing created): 1 contact sent, 1 valid, 0 invalid, 0 duplicates; 1 CSV row not sent',
    );
    expect(dry.stdout).toContain('suppressed: 0, without consent: 0, outside their calling window now: 0');
    expect(dry.stdout).toContain('Would be accepted: yes');
    const listed = await runCli(['batch', 'list', '--json'], env);
    expect(listed.stdout).not.toContain('+14155550151');
    const poor = await runCli(
      [
        'batch',
        'create',
        '--agent',
        'agt_unknown',
        '--csv',
        csv('dry2.csv', ['phone', '+14155550152']),
        '--dry-run',
      ],
      env,
    );
    expect(poor.code).toBe(0);
    expect(poor.stdout).toMatch(/Would be accepted: no: 404 Agent not found or inactive/);

    // --dry-run --json: the report as JSON on stdout, the CSV rows not sent in it as well.
    const dryJson = await runCli(
      [
        'batch',
        'create',
        '--agent',
        agentId,
        '--csv',
        csv('dry3.csv', ['phone', '+14155550153', 'x', '+14155550153']),
        '--dry-run',
        '--json',
      ],
      env,
    );
    expect(dryJson.code, dryJson.stderr).toBe(0);
    expect(JSON.parse(dryJson.stdout)).toEqual({
      total: 2,
      valid: 2,
      invalid: [],
      duplicates: 1,
      suppressed: 0,
      outsideWindowNow: 0,
      withoutConsent: 0,
      estimatedMinutes: 1,
      availableMinutes: expect.any(Number),
      wouldBeAccepted: true,
      refusal: null,
      csvRowsNotSent: [{ line: 3, message: 'x is not a phone number' }],
    });
    expect(dryJson.stderr).toContain('dry3.csv:3: x is not a phone number (not sent)');
    const refusedJson = await runCli(
      [
        'batch',
        'create',
        '--agent',
        'agt_unknown',
        '--csv',
        csv('dry4.csv', ['phone', '+14155550154']),
        '--dry-run',
        '--json',
      ],
      env,
    );
    expect(refusedJson.code).toBe(0);
    expect(JSON.parse(refusedJson.stdout)).toMatchObject({
      wouldBeAccepted: false,
      refusal: { status: 404 },
      csvRowsNotSent: [],
    });
  }, 60_000);
});
