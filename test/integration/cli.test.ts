import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, STORE } from '../helpers/app.js';
import {
  type Banner,
  type Child,
  childEnv,
  createProcessStore,
  DEMO_CURL_PRINTED,
  errorLogLines,
  freePort,
  LISTENING,
  type ProcessStore,
  parseBanner,
  runCli,
  startCli,
} from '../helpers/process.js';

/**
 * A user's first `npm start` on an empty data dir, the printed curl, and then every management
 * command of the CLI against that running server, as separate processes.
 */
describe(`outdial serve and the CLI, from a first start (${STORE})`, () => {
  let store: ProcessStore;
  let server: Child;
  let port: number;
  let base: string;
  /** The environment of the CLI commands: the same data dir, so they find the generated admin token. */
  let env: NodeJS.ProcessEnv;
  let banner: Banner;
  let demo: NonNullable<Banner['demo']>;
  let adminToken: string;

  beforeAll(async () => {
    store = await createProcessStore('cli');
    port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = childEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      OUTDIAL_DATA_DIR: store.dataDir,
      DATABASE_URL: store.databaseUrl,
      OUTDIAL_SIM_RING_MS: '50',
      OUTDIAL_SIM_TALK_MS: '200',
    });
    server = startCli(['serve'], env);
    await server.waitFor(DEMO_CURL_PRINTED, 90_000);
    banner = parseBanner(server.output());
    if (!banner.demo || !banner.adminToken) throw new Error(`incomplete banner:\n${server.output()}`);
    demo = banner.demo;
    adminToken = banner.adminToken;
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await store?.dispose();
  });

  /** `outdial --url <server> <args> --json` with the data dir's admin token; its parsed reply. */
  const cli = async (...args: string[]) => {
    const result = await runCli(['--url', base, ...args, '--json'], env);
    expect(result.code, `outdial ${args.join(' ')}\n${result.stderr}`).toBe(0);
    expect(result.stderr).toBe('');
    return JSON.parse(result.stdout);
  };
  const asKey = (key: string, url: string) => fetch(url, { headers: { authorization: `Bearer ${key}` } });
  const asAdmin = (url: string) => fetch(url, { headers: { authorization: `Bearer ${adminToken}` } });

  it('prints where it listens, a generated admin token kept in the data dir, and the demo account', async () => {
    expect(banner.url).toBe(base);
    expect(server.output()).toContain(
      `listening on ${base} (database: ${STORE}, cache: memory, telephony: simulator)`,
    );
    expect(adminToken).toMatch(/^odadm_[\w-]{20,}$/);
    expect(server.output()).toContain(
      `Admin token (generated now, shown once, kept in ${path.join(store.dataDir, 'admin-token')})`,
    );
    expect(fs.readFileSync(path.join(store.dataDir, 'admin-token'), 'utf8').trim()).toBe(adminToken);
    expect(fs.readFileSync(path.join(store.dataDir, 'demo-api-key'), 'utf8').trim()).toBe(demo.apiKey);
    expect(demo.userId).toMatch(/^usr_/);
    expect(demo.agentId).toMatch(/^agt_/);
    expect(server.output()).toContain('created a demo user with 100 minutes');

    const user = await asAdmin(`${base}/admin/v1/users/${demo.userId}`);
    expect(user.status).toBe(200);
    expect(await user.json()).toMatchObject({ id: demo.userId, availableMinutes: 100 });
    if (store.storage) {
      // The child worked in this file's schema: DATABASE_URL's `options=-c search_path=...` took effect.
      const handle = await store.storage.open();
      const rows = await sql<{ id: string }>`select id from users`.execute(handle.db);
      expect(rows.rows.map((row) => row.id)).toEqual([demo.userId]);
    }
  });

  it('places a call with the printed curl, exactly as printed', async () => {
    const { curl } = demo;
    expect(curl.url).toBe(`${base}/api/v1/call/dial`);
    expect(curl.authorization).toBe(`Bearer ${demo.apiKey}`);
    expect(JSON.parse(curl.body)).toMatchObject({ agentConfigId: demo.agentId });
    const res = await fetch(curl.url, {
      method: 'POST',
      headers: { authorization: curl.authorization, 'content-type': 'application/json' },
      body: curl.body,
    });
    expect(res.status).toBe(200);
    const call = (await res.json()) as { callId: string; status: string };
    expect(call.status).toBe('ONGOING');
    const ended = await eventually(async () => {
      const r = await asKey(demo.apiKey, `${base}/api/v1/call/check-status?callId=${call.callId}`);
      const { data } = (await r.json()) as { data: { status: string; transcription: unknown[] } };
      return data.status === 'ONGOING' ? undefined : data;
    }, 15_000);
    expect(ended.status).toBe('COMPLETED');
    expect(ended.transcription.length).toBeGreaterThan(0);
  });

  it('logs no errors on a clean first start', () => {
    expect(errorLogLines(server.output())).toEqual([]);
    expect(server.stderr()).toBe('');
  });

  it('manages users, credits, agents, keys and webhook secrets from the command line', async () => {
    const user = await cli('users', 'create', '--name', 'Acme', '--email', 'ops@acme.test', '--minutes', '5');
    expect(user).toMatchObject({ name: 'Acme', email: 'ops@acme.test', availableMinutes: 5 });
    expect(user.id).toMatch(/^usr_/);

    // Commands that do not depend on each other run side by side: each process costs seconds to start.
    const [credited, agent, key] = await Promise.all([
      cli('credits', 'add', user.id, '10'),
      cli(
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
      ),
      cli('keys', 'create', '--user', user.id, '--name', 'ci'),
    ]);
    expect(credited).toEqual({ availableMinutes: 15 });
    expect(agent).toMatchObject({
      userId: user.id,
      name: 'Renewals',
      type: 'OUTBOUND',
      isActive: true,
      basicDetails: { agent_name: 'Ava', agentLanguage: 'en' },
    });
    expect(key).toMatchObject({ name: 'ci', expiresAt: null });
    expect(key.id).toMatch(/^key_/);
    expect(typeof key.key).toBe('string');
    const readAgent = () => asKey(key.key, `${base}/api/v1/agent?agentId=${agent.id}`);

    const [agentList, keyList, secret, readWithKey] = await Promise.all([
      cli('agents', 'list', '--user', user.id),
      cli('keys', 'list', '--user', user.id),
      cli('webhook-secret', 'show', user.id),
      readAgent(),
    ]);
    expect(agentList.agents).toEqual([expect.objectContaining({ id: agent.id, isActive: true })]);
    expect(keyList.keys).toEqual([expect.objectContaining({ id: key.id, name: 'ci', status: 'active' })]);
    expect(JSON.stringify(keyList)).not.toContain(key.key);
    expect(secret.secret).toMatch(/^whsec_/);
    expect(readWithKey.status).toBe(200);
    expect(await readWithKey.json()).toMatchObject({ id: agent.id });

    const [deactivated, revoked, rotated] = await Promise.all([
      cli('agents', 'deactivate', agent.id),
      cli('keys', 'revoke', key.id),
      cli('webhook-secret', 'rotate', user.id),
    ]);
    expect(deactivated).toMatchObject({ id: agent.id, isActive: false });
    expect(revoked).toMatchObject({ id: key.id, status: 'revoked' });
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(secret.secret);
    expect(rotated.previousSecret).toBe(secret.secret);

    const [afterRevoke, agentsNow, secretNow] = await Promise.all([
      readAgent(),
      cli('agents', 'list', '--user', user.id),
      cli('webhook-secret', 'show', user.id),
    ]);
    expect(afterRevoke.status).toBe(401);
    expect(agentsNow.agents).toEqual([expect.objectContaining({ id: agent.id, isActive: false })]);
    expect(secretNow.secret).toBe(rotated.secret);
  }, 240_000);

  it('prints human lines without --json, and fails with exit code 1 and a message when it cannot act', async () => {
    const emptyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-no-token-'));
    const nobodyPort = await freePort();
    try {
      const [human, badToken, unreachable, noToken] = await Promise.all([
        runCli(['--url', base, '--admin-token', adminToken, 'users', 'create', '--name', 'Plain'], {
          ...env,
          OUTDIAL_DATA_DIR: emptyDir,
        }),
        runCli(
          ['--url', base, '--admin-token', 'not-the-admin-token', 'users', 'create', '--name', 'X'],
          env,
        ),
        runCli(['--url', `http://127.0.0.1:${nobodyPort}`, 'users', 'create', '--name', 'X'], env),
        runCli(['--url', base, 'users', 'create', '--name', 'X'], { ...env, OUTDIAL_DATA_DIR: emptyDir }),
      ]);
      expect(human.code, human.stderr).toBe(0);
      expect(human.stdout).toMatch(/^Created user usr_\w+ \(Plain\) with 0 minutes\n$/);

      expect(badToken.code).toBe(1);
      expect(badToken.stdout).toBe('');
      expect(badToken.stderr).toMatch(/^outdial: 401 Unauthorized/);

      expect(unreachable.code).toBe(1);
      expect(unreachable.stdout).toBe('');
      expect(unreachable.stderr).toContain(`outdial: cannot reach outdial at http://127.0.0.1:${nobodyPort}`);

      expect(noToken.code).toBe(1);
      expect(noToken.stderr).toMatch(/^outdial: No admin token: pass --admin-token/);
    } finally {
      fs.rmSync(emptyDir, { recursive: true, force: true });
    }
  }, 120_000);

  it('prints neither a new admin token nor a new demo account when started again on the same data', async () => {
    expect(await server.stop()).toBe(0);
    const again = startCli(['serve'], env);
    try {
      await again.waitFor(LISTENING, 90_000);
      // The banner is written line by line; give the rest of it (if any were coming) time to arrive.
      const livez = await eventually(async () => {
        const res = await fetch(`${base}/livez`);
        return res.status === 200 ? res : undefined;
      }, 10_000);
      expect(livez.status).toBe(200);
      await new Promise((resolve) => setTimeout(resolve, 300));
      const out = again.output();
      expect(out).not.toContain('Admin token');
      expect(out).not.toContain('odadm_');
      expect(out).not.toContain('demo user');
      expect(out).not.toContain('API key:');
      expect(out).not.toContain('curl');
      expect(fs.readFileSync(path.join(store.dataDir, 'admin-token'), 'utf8').trim()).toBe(adminToken);
      expect(fs.readFileSync(path.join(store.dataDir, 'demo-api-key'), 'utf8').trim()).toBe(demo.apiKey);
      // The first start's admin token and demo key still work.
      expect((await asKey(demo.apiKey, `${base}/api/v1/agent?agentId=${demo.agentId}`)).status).toBe(200);
      const users = await asAdmin(`${base}/admin/v1/users/${demo.userId}`);
      expect(users.status).toBe(200);
    } finally {
      expect(await again.stop()).toBe(0);
    }
  }, 120_000);
});
