import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, eventually } from '../helpers/app.js';
import { type SharedHosts, sharedHosts } from '../helpers/hosts.js';
import { startCli } from '../helpers/process.js';
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
 * through one SIP trunk (sipp) that lets two calls up at a time. The first two calls ring longer
 * than the old sweep cutoff (the simulator's ring and talk times plus 10 s): neither worker may
 * dial them again. Then the worker holding the third contact (waiting for a trunk place) is
 * killed: that contact goes back to the queue and is dialed once by the other, with no attempt
 * lost, and a call the killed worker had sent is settled as cut off, never dialed again.
 */
describe('two worker hosts on one PostgreSQL and Redis, through one SIP trunk', () => {
  let hosts: SharedHosts | undefined;
  let far: Sipp | undefined;
  afterAll(async () => {
    far?.child.kill('SIGKILL');
    await hosts?.stop();
  });

  it('never dials a long call twice, and settles a killed host’s calls from the shared records', async () => {
    hosts = await sharedHosts(3);
    const { base, children } = hosts;
    const db = hosts.handle.db;
    const log = path.join(hosts.tempDir('outdial-two-hosts-'), 'sipp.log');
    far = await startSipp('ring', { calls: 6, messageLog: log, timeoutSeconds: 170 });
    const shared = hosts;
    const env = (rtpPorts: string) =>
      shared.env({
        OUTDIAL_DEMO_MINUTES: '1000',
        // The old sweep took any call older than these plus 10 s for a lost one.
        OUTDIAL_SIM_RING_MS: '20',
        OUTDIAL_SIM_TALK_MS: '100',
        OUTDIAL_SIP_BIND: '127.0.0.1',
        OUTDIAL_SIP_PORT: '0',
        OUTDIAL_RTP_PORTS: rtpPorts,
        OUTDIAL_SIP_RING_TIMEOUT_MS: '30000',
        // A call cut off with its host is ours (issue 24): its contact is dialed again after this.
        OUTDIAL_SERVICE_RETRY_MS: '1000',
      });
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
      maxConcurrentCalls: 2,
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
    const numbers = ['+14155557001', '+14155557002', '+14155557003'];
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
    await eventually(async () => (total() >= 2 ? true : undefined), 30_000, 100);
    // Past the old cutoff (10.1 s) and a sweep of each worker (every 5 s): still two INVITEs.
    await sleep(16_000);
    expect(total()).toBe(2);

    // The host of the contact still waiting for its trunk place dies.
    const records = await sql<{ owner: string; call_id: string; state: string }>`
      select owner, call_id, state from dials`.execute(db);
    expect(records.rows.map((r) => r.state).sort()).toEqual(['sent', 'sent', 'waiting']);
    const victimOwner = records.rows.find((r) => r.state === 'waiting')?.owner ?? '';
    const pid = Number(victimOwner.split(':')[1]);
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
      120_000,
      500,
    );
    expect(batch.processed).toBe(3);
    // The killed host had sent one call (never answered) and held one waiting for its trunk place.
    const cutOff = records.rows.find((r) => r.owner === victimOwner && r.state === 'sent');
    const waiting = records.rows.find((r) => r.state === 'waiting');
    const calls = await db
      .selectFrom('calls')
      .select([
        'id',
        'phone_number',
        'status',
        'error',
        'attempt',
        'duration',
        'failure_source',
        'minutes_charged',
      ])
      .where('batch_id', '=', batchId)
      .execute();
    // Every call id reached the network at most once, whoever dialed it; every number was dialed.
    const dialed = invites();
    expect([...dialed.keys()].sort()).toEqual(numbers);
    const sentIds = [...dialed.values()].flatMap((ids) => [...ids]);
    expect(new Set(sentIds).size).toBe(sentIds.length);
    // The waiting call went back to the queue: its row is gone, its contact dialed under a new id.
    expect(calls.map((call) => call.id)).not.toContain(waiting?.call_id);
    for (const call of calls) {
      if (call.id === cutOff?.call_id) {
        // Sent by the killed host and never answered: cut off, ours (issue 24), charged nothing.
        expect(call).toMatchObject({
          status: 'FAILED',
          duration: 0,
          attempt: 1,
          failure_source: 'service',
          minutes_charged: 0,
        });
        expect(call.error).toContain('cut off');
      } else {
        expect(call).toMatchObject({ status: 'NO_ANSWER', attempt: 1, failure_source: 'contact' });
      }
    }
    // Its contact kept the attempt and was dialed again, as the same attempt, under a new id; the
    // other contacts were dialed once each.
    const cutOffNumber = calls.find((call) => call.id === cutOff?.call_id)?.phone_number;
    if (cutOff) {
      expect(cutOffNumber).toBeDefined();
      expect(dialed.get(cutOffNumber ?? '')?.size).toBe(2);
      expect(calls).toHaveLength(4);
    } else {
      expect(calls).toHaveLength(3);
    }
    for (const [number, ids] of dialed) if (number !== cutOffNumber) expect(ids.size).toBe(1);
    const contacts = await db
      .selectFrom('batch_contacts')
      .select(['attempts', 'state'])
      .where('batch_id', '=', batchId)
      .execute();
    expect(contacts).toEqual(numbers.map(() => ({ attempts: 1, state: 'done' })));
  }, 200_000);
});
