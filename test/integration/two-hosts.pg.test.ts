import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/adapters/postgres/database.js';
import {
  ADMIN_TOKEN,
  createTestStorage,
  DATABASE_TEST_URL,
  deletePrefix,
  eventually,
  JWT_SECRET,
  REDIS_TEST_URL,
  type TestStorage,
} from '../helpers/app.js';
import { type Child, childEnv, freePort, startCli } from '../helpers/process.js';
import { type Sipp, startSipp } from '../helpers/sipp.js';

/** Per number called, the SIP Call-IDs of the INVITEs sipp received (retransmissions count once). */
function invitesByNumber(log: string): Map<string, Set<string>> {
  const byNumber = new Map<string, Set<string>>();
  for (const entry of log.split(/^-{5,} \d{4}-\d{2}-\d{2}\s+\S+/m)) {
    const number = /^INVITE sip:([^@;]+)@/m.exec(entry)?.[1];
    const callId = /^Call-ID:\s*(\S+)/im.exec(entry)?.[1];
    if (!number || !callId) continue;
    const ids = byNumber.get(number) ?? new Set<string>();
    ids.add(callId);
    byNumber.set(number, ids);
  }
  return byNumber;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Two worker processes that share PostgreSQL and Redis but not a data dir (two hosts), calling
 * through one SIP trunk (sipp) that lets one call up at a time. The first call rings longer than
 * the old sweep cutoff (the simulator's ring and talk times plus 10 s): the other worker must
 * leave it alone. Then its worker is killed: its call is settled as cut off, never dialed again,
 * and the contact still waiting for the trunk is dialed once, with no attempt lost.
 */
describe('two worker hosts on one PostgreSQL and Redis, through one SIP trunk', () => {
  const children: Child[] = [];
  const dirs: string[] = [];
  let storage: TestStorage;
  let handle: DatabaseHandle | undefined;
  let far: Sipp | undefined;
  const redisUrl = `${REDIS_TEST_URL}/3`;
  afterAll(async () => {
    for (const child of children) await child.stop('SIGKILL');
    far?.child.kill('SIGKILL');
    await handle?.close();
    await storage?.dispose();
    await deletePrefix(redisUrl, 'outdial:');
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('never dials a long call twice, and settles a killed host’s calls from the shared records', async () => {
    storage = await createTestStorage('postgres');
    handle = await storage.open();
    const db = handle.db;
    const logDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-two-hosts-'));
    dirs.push(logDir);
    const log = path.join(logDir, 'sipp.log');
    far = await startSipp('ring', { calls: 4, messageLog: log, timeoutSeconds: 140 });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = (rtpPorts: string) => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-host-'));
      dirs.push(dataDir);
      return childEnv({
        HOST: '127.0.0.1',
        PORT: String(port),
        OUTDIAL_DATA_DIR: dataDir,
        DATABASE_URL: `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`,
        REDIS_URL: redisUrl,
        OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
        OUTDIAL_JWT_SECRET: JWT_SECRET,
        OUTDIAL_DEMO_MINUTES: '1000',
        // The old sweep took any call older than these plus 10 s for a lost one.
        OUTDIAL_SIM_RING_MS: '20',
        OUTDIAL_SIM_TALK_MS: '100',
        OUTDIAL_SIP_BIND: '127.0.0.1',
        OUTDIAL_SIP_PORT: '0',
        OUTDIAL_RTP_PORTS: rtpPorts,
        OUTDIAL_SIP_RING_TIMEOUT_MS: '20000',
      });
    };
    const api = startCli(['api'], env('48000-48499'));
    children.push(api);
    await api.waitFor(/API key:\s+(\S+)/, 60_000);
    const key = api.output().match(/API key:\s+(\S+)/)?.[1] ?? '';
    const userId = api.output().match(/user:\s+(usr_\S+)/)?.[1] ?? '';
    const workers = ['48500-48999', '49000-49499'].map((ports) => startCli(['worker'], env(ports)));
    children.push(...workers);
    for (const worker of workers) await worker.waitFor(/worker running/, 60_000);

    const admin = (url: string, body: unknown) =>
      fetch(`${base}${url}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    const trunk = await admin('/admin/v1/sip-trunks', {
      userId,
      name: 'sipp',
      host: '127.0.0.1',
      port: far.port,
      fromNumber: '+14155550100',
      maxConcurrentCalls: 1,
    });
    expect(trunk.status).toBe(201);
    const agent = await admin('/admin/v1/agents', {
      userId,
      name: 'Phone agent',
      sipTrunkId: ((await trunk.json()) as { id: string }).id,
      basicDetails: { agent_name: 'Ava', agentLanguage: 'en-us', prompts: [] },
    });
    expect(agent.status).toBe(201);
    const agentId = ((await agent.json()) as { id: string }).id;
    const numbers = ['+14155557001', '+14155557002'];
    const submitted = await fetch(`${base}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        agentId,
        userId,
        contacts: numbers.map((phoneNumber) => ({ phoneNumber })),
        options: { maxCallsPerSecond: 1, retryStrategy: { maxAttempts: 1 } },
      }),
    });
    expect(submitted.status).toBe(202);
    const batchId = ((await submitted.json()) as { batchId: string }).batchId;

    const invites = () => invitesByNumber(fs.existsSync(log) ? fs.readFileSync(log, 'utf8') : '');
    const total = () => [...invites().values()].reduce((sum, ids) => sum + ids.size, 0);
    await eventually(async () => (total() >= 1 ? true : undefined), 30_000, 100);
    // Past the old cutoff (10.1 s) and a sweep of each worker (every 5 s): still one INVITE.
    await sleep(16_000);
    expect(total()).toBe(1);

    // The host of the ringing call dies.
    const sent = await sql<{ owner: string; call_id: string }>`
      select owner, call_id from dials where state = 'sent'`.execute(db);
    expect(sent.rows).toHaveLength(1);
    const pid = Number(sent.rows[0]?.owner.split(':')[1]);
    const victim = workers.find((worker) => worker.process.pid === pid);
    expect(victim).toBeDefined();
    await victim?.stop('SIGKILL');

    const batch = await eventually(
      async () => {
        const row = await db
          .selectFrom('batches')
          .select(['status', 'processed'])
          .where('id', '=', batchId)
          .executeTakeFirst();
        return row?.status === 'completed' ? row : undefined;
      },
      90_000,
      500,
    );
    expect(batch.processed).toBe(2);
    // Each number reached the network exactly once, whoever dialed it.
    const dialed = invites();
    expect([...dialed.keys()].sort()).toEqual(numbers);
    for (const ids of dialed.values()) expect(ids.size).toBe(1);
    const calls = await db
      .selectFrom('calls')
      .select(['id', 'phone_number', 'status', 'error', 'attempt', 'duration'])
      .where('batch_id', '=', batchId)
      .execute();
    expect(calls).toHaveLength(2);
    const cut = calls.find((call) => call.id === sent.rows[0]?.call_id);
    expect(cut).toMatchObject({ status: 'FAILED', duration: 0, attempt: 1 });
    expect(cut?.error).toContain('cut off');
    const other = calls.find((call) => call.id !== sent.rows[0]?.call_id);
    expect(other).toMatchObject({ status: 'NO_ANSWER', attempt: 1 });
    const contacts = await db
      .selectFrom('batch_contacts')
      .select(['attempts', 'state'])
      .where('batch_id', '=', batchId)
      .execute();
    expect(contacts).toEqual([
      { attempts: 1, state: 'done' },
      { attempts: 1, state: 'done' },
    ]);
  }, 180_000);
});
