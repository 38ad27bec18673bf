import dgram from 'node:dgram';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { ADMIN_TOKEN, eventually } from '../helpers/app.js';
import { type SharedHosts, sharedHosts } from '../helpers/hosts.js';
import { type ChatServer, isPersona, simulatedAiEnv, startChatServer } from '../helpers/model-servers.js';
import { freePort, startCli } from '../helpers/process.js';
import { type Sipp, startSipp } from '../helpers/sipp.js';

/** Whether this process can bind UDP `port` on loopback: nobody else holds it. */
function udpPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = dgram.createSocket('udp4');
    socket.once('error', () => resolve(false));
    socket.bind(port, '127.0.0.1', () => socket.close(() => resolve(true)));
  });
}

/**
 * `outdial api` holds no SIP or RTP stack: a single call through a trunk that it is asked for is
 * handed to a worker, which places it (once) and settles it. Seen from outside: the API answers
 * the dial, the carrier's INVITE comes from the worker's SIP port, the API's SIP port is never
 * bound, and the call ends with the carrier's answer. Its load is not the API's (issue 24 §7):
 * an API process at its AI-call bound (a simulated AI call it holds itself) refuses another
 * simulated AI dial with 503 OVERLOADED, yet still takes the SIP dial the worker will hold.
 */
describe('outdial api hands its SIP calls to the workers', () => {
  let hosts: SharedHosts | undefined;
  let far: Sipp | undefined;
  let chat: ChatServer | undefined;
  let letAgentSpeak: () => void = () => {};
  const agentMaySpeak = new Promise<void>((resolve) => {
    letAgentSpeak = resolve;
  });
  afterAll(async () => {
    letAgentSpeak();
    far?.child.kill('SIGKILL');
    await hosts?.stop();
    await chat?.close();
  });

  it('places a single SIP call from a worker, never from the API process, whatever the API holds', async () => {
    // The simulator's AI calls are held by the process that dials them: the API's own. The
    // agent's model answers only once the test lets it, so the first one stays up.
    chat = await startChatServer({
      respond: async (record) => {
        if (isPersona(record)) return 'Sure, what is it about?';
        await agentMaySpeak;
        return 'Thank you for your time. Goodbye!';
      },
    });
    const llm = simulatedAiEnv(chat);
    hosts = await sharedHosts(5);
    const { base, children } = hosts;
    const log = path.join(hosts.tempDir('outdial-api-role-'), 'sipp.log');
    far = await startSipp('busy', { calls: 1, messageLog: log, timeoutSeconds: 90 });
    const shared = hosts;
    const env = (sipPort: number, rtpPorts: string) =>
      shared.env({
        ...llm,
        OUTDIAL_MAX_AI_CALLS: '1',
        OUTDIAL_DEMO_MINUTES: '100',
        OUTDIAL_SIP_BIND: '127.0.0.1',
        OUTDIAL_SIP_PORT: String(sipPort),
        OUTDIAL_RTP_PORTS: rtpPorts,
      });
    const apiSipPort = await freePort();
    const workerSipPort = await freePort();
    const api = startCli(['api'], env(apiSipPort, '47000-47099'));
    children.push(api);
    await api.waitFor(/API key:\s+(\S+)/, 60_000);
    const key = api.output().match(/API key:\s+(\S+)/)?.[1] ?? '';
    const userId = api.output().match(/user:\s+(usr_\S+)/)?.[1] ?? '';
    const worker = startCli(['worker'], env(workerSipPort, '47100-47199'));
    children.push(worker);
    await worker.waitFor(/worker running/, 60_000);

    const admin = async (url: string, body: unknown) => {
      const res = await fetch(`${base}${url}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(201);
      return ((await res.json()) as { id: string }).id;
    };
    const trunkId = await admin('/admin/v1/sip-trunks', {
      userId,
      name: 'sipp',
      host: '127.0.0.1',
      port: far.port,
      fromNumber: '+14155550100',
    });
    const agentId = await admin('/admin/v1/agents', {
      userId,
      name: 'Phone agent',
      sipTrunkId: trunkId,
      basicDetails: { agent_name: 'Ava', agentLanguage: 'en-us', prompts: [] },
    });

    const dial = (agentConfigId: string, to: string) =>
      fetch(`${base}/api/v1/call/dial`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ agentConfigId, to }),
      });
    // The API at its one AI call: a simulated AI call of the demo agent, held (and answered) here.
    const demoAgentId = api.output().match(/agent:\s+(agt_\S+)/)?.[1] ?? '';
    expect((await dial(demoAgentId, '+14155550126')).status).toBe(200);
    const refused = await dial(demoAgentId, '+14155550127');
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toBe('5');
    expect(await refused.json()).toMatchObject({ code: 'OVERLOADED' });

    const dialed = await dial(agentId, '+14155550125');
    expect(dialed.status).toBe(200);
    const { callId } = (await dialed.json()) as { callId: string };

    const ended = await eventually(
      async () => {
        const res = await fetch(`${base}/api/v1/call/check-status?callId=${callId}`, {
          headers: { authorization: `Bearer ${key}` },
        });
        const call = ((await res.json()) as { data: { status: string; sipStatusCode: number | null } }).data;
        return call.status === 'ONGOING' ? undefined : call;
      },
      30_000,
      100,
    );
    expect(ended).toMatchObject({ status: 'BUSY', sipStatusCode: 486 });

    // The carrier was asked once, by the worker's SIP socket.
    const sent = fs.readFileSync(log, 'utf8');
    const invites = sent.match(/^INVITE sip:/gm) ?? [];
    expect(invites).toHaveLength(1);
    expect(sent).toMatch(new RegExp(`^Via: SIP/2\\.0/UDP 127\\.0\\.0\\.1:${workerSipPort}`, 'm'));
    // The record names the worker process as its owner.
    const records = await sql<{ owner: string; state: string }>`
      select owner, state from dials where call_id = ${callId}`.execute(hosts.handle.db);
    expect(records.rows).toHaveLength(1);
    expect(records.rows[0]?.state).toBe('ended');
    expect(records.rows[0]?.owner.split(':')[1]).toBe(String(worker.process.pid));
    // Nothing in the API process ever bound its SIP port.
    expect(await udpPortFree(apiSipPort)).toBe(true);
  }, 120_000);
});
