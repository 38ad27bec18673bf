import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestStorage, DATABASE_TEST_URL, eventually, STORE, type TestStorage } from '../helpers/app.js';
import { type Child, childEnv, freePort, runCli, startCli } from '../helpers/process.js';

describe(`outdial serve and the CLI, from a first start (${STORE})`, () => {
  let storage: TestStorage | null = null;
  let server: Child;
  let dataDir: string;
  let base: string;
  let env: NodeJS.ProcessEnv;
  let demo: { adminToken: string; userId: string; agentId: string; key: string };

  beforeAll(async () => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-cli-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    let databaseUrl: string | undefined;
    if (STORE === 'postgres') {
      storage = await createTestStorage('postgres');
      databaseUrl = `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`;
    }
    env = childEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      OUTDIAL_DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      OUTDIAL_SIM_RING_MS: '50',
      OUTDIAL_SIM_TALK_MS: '200',
    });
    server = startCli(['serve'], env);
    await server.waitFor(/Place a simulated call/, 90_000);
    const out = server.output();
    demo = {
      adminToken: out.match(/Admin token[^\n]*\n\s+(\S+)/)?.[1] ?? '',
      userId: out.match(/user:\s+(usr_\S+)/)?.[1] ?? '',
      agentId: out.match(/agent:\s+(agt_\S+)/)?.[1] ?? '',
      key: out.match(/API key:\s+(\S+)/)?.[1] ?? '',
    };
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await storage?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('prints the admin token, the demo account and a curl command that works as printed', async () => {
    expect(demo.adminToken).toMatch(/^odadm_/);
    expect(fs.readFileSync(path.join(dataDir, 'admin-token'), 'utf8').trim()).toBe(demo.adminToken);
    expect(fs.readFileSync(path.join(dataDir, 'demo-api-key'), 'utf8').trim()).toBe(demo.key);
    const curl = server
      .output()
      .match(
        /curl -s -X POST (\S+) \\\n\s+-H "Authorization: Bearer (\S+)" -H "Content-Type: application\/json" \\\n\s+-d '(.+)'/,
      );
    expect(curl).not.toBeNull();
    const [, url, key, body] = curl ?? [];
    expect(url).toBe(`${base}/api/v1/call/dial`);
    const res = await fetch(url ?? '', {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(200);
    const call = (await res.json()) as { callId: string; status: string };
    expect(call.status).toBe('ONGOING');
    const ended = await eventually(async () => {
      const r = await fetch(`${base}/api/v1/call/check-status?callId=${call.callId}`, {
        headers: { authorization: `Bearer ${demo.key}` },
      });
      const data = ((await r.json()) as { data: { status: string; transcription: unknown[] } }).data;
      return data.status === 'COMPLETED' ? data : undefined;
    }, 10_000);
    expect(ended.transcription.length).toBeGreaterThan(0);
  });

  it('manages users, credits, agents, keys and webhook secrets from the command line', async () => {
    const cli = async (...args: string[]) => {
      const result = await runCli(['--url', base, ...args, '--json'], env);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };
    const user = await cli('users', 'create', '--name', 'Acme', '--email', 'ops@acme.test', '--minutes', '5');
    expect(user).toMatchObject({
      name: 'Acme',
      email: 'ops@acme.test',
      availableMinutes: 5,
      maxConcurrentCalls: 200,
    });
    expect(await cli('users', 'update', user.id, '--max-concurrent-calls', '3')).toMatchObject({
      id: user.id,
      name: 'Acme',
      maxConcurrentCalls: 3,
    });
    const limited = await cli('users', 'create', '--name', 'Small', '--max-concurrent-calls', '2');
    expect(limited.maxConcurrentCalls).toBe(2);
    expect(await cli('credits', 'add', user.id, '10')).toEqual({ availableMinutes: 15 });
    const agent = await cli(
      'agents',
      'create',
      '--user',
      user.id,
      '--name',
      'Renewals',
      '--agent-name',
      'Ava',
      '--language',
      'en',
    );
    expect(agent).toMatchObject({
      name: 'Renewals',
      isActive: true,
      basicDetails: { agent_name: 'Ava', agentLanguage: 'en' },
    });
    expect((await cli('agents', 'list', '--user', user.id)).agents).toHaveLength(1);
    const key = await cli('keys', 'create', '--user', user.id, '--name', 'ci');
    const read = () =>
      fetch(`${base}/api/v1/agent?agentId=${agent.id}`, { headers: { authorization: `Bearer ${key.key}` } });
    expect((await read()).status).toBe(200);
    expect((await cli('agents', 'deactivate', agent.id)).isActive).toBe(false);
    const keys = await cli('keys', 'list', '--user', user.id);
    expect(keys.keys.map((k: { id: string }) => k.id)).toEqual([key.id]);
    expect((await cli('keys', 'revoke', key.id)).status).toBe('revoked');
    expect((await read()).status).toBe(401);
    const secret = await cli('webhook-secret', 'show', user.id);
    expect(secret.secret).toMatch(/^whsec_/);
    const rotated = await cli('webhook-secret', 'rotate', user.id);
    expect(rotated.previousSecret).toBe(secret.secret);
  }, 180_000);

  it("sets an agent's AI settings with agents create and update, and names a bad one", async () => {
    const cli = (...args: string[]) => runCli(['--url', base, ...args, '--json'], env);
    const json = async (...args: string[]) => {
      const result = await cli(...args);
      expect(result.code, result.stderr).toBe(0);
      return JSON.parse(result.stdout);
    };
    const instructionsFile = path.join(dataDir, 'prompt.txt');
    fs.writeFileSync(instructionsFile, 'You are Ava from {{company}}.\nBe brief.');
    const tool = {
      name: 'book_demo',
      description: 'Books a demo',
      parameters: { type: 'object', properties: { day: { type: 'string' } } },
      url: 'https://crm.example.com/book',
    };
    const toolsFile = path.join(dataDir, 'tools.json');
    fs.writeFileSync(toolsFile, JSON.stringify([tool]));
    const user = await json('users', 'create', '--name', 'AI team');
    const agent = await json(
      'agents',
      'create',
      '--user',
      user.id,
      '--name',
      'Ava',
      '--instructions-file',
      instructionsFile,
      '--first-message',
      'Hi {{firstName}}!',
      '--voicemail-message',
      'Call us back.',
      '--transfer-number',
      '+14155550100',
      '--tools-file',
      toolsFile,
      '--max-duration',
      '600',
      '--min-speech-ms',
      '400',
      '--ignore-words',
      'yeah, uh-huh ,okay',
      '--reprompt-ms',
      '6000',
      '--hangup-ms',
      '15000',
    );
    expect(agent.basicDetails).toEqual({
      instructions: 'You are Ava from {{company}}.\nBe brief.',
      firstMessage: 'Hi {{firstName}}!',
      voicemailMessage: 'Call us back.',
      transferNumber: '+14155550100',
      tools: [tool],
      maxDurationSeconds: 600,
      interruption: { minSpeechMs: 400, ignoreWords: ['yeah', 'uh-huh', 'okay'] },
      silence: { repromptMs: 6000, hangupMs: 15000 },
    });
    // update changes the flags given and keeps the rest, interruption and silence field by field.
    const updated = await json(
      'agents',
      'update',
      agent.id,
      '--instructions',
      'Shorter.',
      '--hangup-ms',
      '30000',
      '--max-duration',
      'none',
    );
    expect(updated.basicDetails).toEqual({
      ...agent.basicDetails,
      instructions: 'Shorter.',
      maxDurationSeconds: null,
      silence: { repromptMs: 6000, hangupMs: 30000 },
    });
    const refused = await cli('agents', 'update', agent.id, '--transfer-number', 'reception');
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('basicDetails.transferNumber');
    const missing = await cli('agents', 'update', agent.id, '--tools-file', path.join(dataDir, 'nope.json'));
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('cannot read the tools file');
    expect((await json('agents', 'list', '--user', user.id)).agents[0].basicDetails.instructions).toBe(
      'Shorter.',
    );
  }, 180_000);

  it('lists users a page at a time, and shows when each API key expires', async () => {
    const cli = (...args: string[]) => runCli(['--url', base, ...args], env);
    const created = [];
    for (const name of ['Lister A', 'Lister B', 'Lister C']) {
      const res = await cli(
        'users',
        'create',
        '--name',
        name,
        '--email',
        `${name.at(-1)}@list.test`,
        '--json',
      );
      created.push(JSON.parse(res.stdout) as { id: string });
    }
    const all = await cli('users', 'list', '--json');
    expect(all.code, all.stderr).toBe(0);
    const everyone = JSON.parse(all.stdout) as { users: Array<{ id: string }>; nextCursor: string | null };
    expect(everyone.nextCursor).toBeNull();
    // Newest first: the three just created lead, the demo user (the first ever) closes the list.
    expect(everyone.users.slice(0, 3).map((u) => u.id)).toEqual(created.map((u) => u.id).reverse());
    expect(everyone.users.at(-1)?.id).toBe(demo.userId);

    // Page by page with the printed cursor: the same users, each once.
    const paged: string[] = [];
    let cursorArgs: string[] = [];
    for (let pages = 0; pages < 50; pages++) {
      const res = await cli('users', 'list', '--limit', '2', ...cursorArgs);
      expect(res.code, res.stderr).toBe(0);
      paged.push(...[...res.stdout.matchAll(/^(usr_\S+)\s/gm)].map((m) => m[1] ?? ''));
      const more = res.stdout.match(/^More: outdial users list --cursor (\S+)$/m);
      if (!more) break;
      cursorArgs = ['--cursor', more[1] ?? ''];
    }
    expect(paged).toEqual(everyone.users.map((u) => u.id));
    const human = await cli('users', 'list', '--limit', '1');
    expect(human.stdout).toMatch(
      new RegExp(`^${created[2]?.id}\\s+0 min\\s+max\\s+200 calls\\s+Lister C <C@list.test>$`, 'm'),
    );

    const bad = await cli('users', 'list', '--cursor', 'nope');
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('cursor');
    const noToken = await runCli(['--url', base, '--admin-token', 'wrong-token-wrong', 'users', 'list'], env);
    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toContain('401');

    const userId = created[0]?.id ?? '';
    await cli('keys', 'create', '--user', userId, '--name', 'lasting');
    await cli('keys', 'create', '--user', userId, '--name', 'expiring', '--expires', '2031-05-06T07:08:09Z');
    const keys = await cli('keys', 'list', '--user', userId);
    expect(keys.code, keys.stderr).toBe(0);
    expect(keys.stdout).toMatch(
      /^key_\S+ {2}active {3}expires 2031-05-06T07:08:09\.000Z {2}last used never {2}expiring$/m,
    );
    expect(keys.stdout).toMatch(/^key_\S+ {2}active {3}expires never {2}last used never {2}lasting$/m);
  }, 120_000);

  it('prints human lines without --json, and fails clearly with a bad token or an unreachable server', async () => {
    const human = await runCli(
      ['--url', base, '--admin-token', demo.adminToken, 'users', 'create', '--name', 'Plain'],
      env,
    );
    expect(human.code).toBe(0);
    expect(human.stdout).toMatch(/^Created user usr_\S+ \(Plain\) with 0 minutes/);
    const bad = await runCli(
      ['--url', base, '--admin-token', 'wrong-token-wrong', 'users', 'create', '--name', 'X'],
      env,
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('401');
    const port = await freePort();
    const away = await runCli(['--url', `http://127.0.0.1:${port}`, 'users', 'create', '--name', 'X'], env);
    expect(away.code).toBe(1);
    expect(away.stderr).toContain('cannot reach outdial');
    for (const url of ['http://[bad', 'ftp://127.0.0.1:3000']) {
      const mistyped = await runCli(['--url', url, 'users', 'list'], env);
      expect(mistyped.code).toBe(1);
      expect(mistyped.stderr).toBe(
        `outdial: "${url}" is not the address of an outdial (--url or OUTDIAL_URL): give one such as http://127.0.0.1:3000\n`,
      );
    }
  }, 60_000);

  it('does not seed again or print a new admin token on a second start', async () => {
    await server.stop();
    const port = await freePort();
    const again = startCli(['serve'], { ...env, PORT: String(port) });
    try {
      await again.waitFor(/listening on/, 60_000);
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(again.output()).not.toContain('Admin token');
      expect(again.output()).not.toContain('demo user');
      const res = await fetch(`http://127.0.0.1:${port}/api/v1/agent?agentId=${demo.agentId}`, {
        headers: { authorization: `Bearer ${demo.key}` },
      });
      expect(res.status).toBe(200);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  }, 120_000);
});
