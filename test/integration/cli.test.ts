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
      maxConcurrentCalls: 10,
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
