import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisLiveCache } from '../../src/adapters/redis/live-cache.js';
import { loadConfig } from '../../src/config.js';
import { createRuntime, type Runtime } from '../../src/main.js';
import { type Account, ADMIN_TOKEN, JWT_SECRET, startTestApp, type TestApp } from '../helpers/app.js';
import { writeSpeechWav } from '../helpers/audio.js';
import { type FarEnd, startFarEnd } from '../helpers/far-end.js';
import { type ChatRequestRecord, type ChatServer, startChatServer } from '../helpers/model-servers.js';
import { type Sipp, sipMessages, startSipp } from '../helpers/sipp.js';
import { openEventStream } from '../helpers/sse.js';
import { trunkCalls } from '../helpers/trunk-calls.js';

const ENCRYPTION_KEY = 'live-control-test-key-0123456789abcdef';

const isPersona = (record: ChatRequestRecord) =>
  String(record.messages[0]?.content ?? '').includes('answering your phone');

/**
 * Live call control where the call really is: over SIP against sipp (hangup is a BYE; transfer a
 * REFER the far end accepts or refuses), and across processes: a second app instance on the same
 * PostgreSQL and Redis takes the requests for a call the first one holds. PostgreSQL only: the
 * second instance needs a database two processes share (PGlite's path is one process, covered by
 * test/http/call.live.*.test.ts).
 */
describe('live call control over SIP and across app instances (PostgreSQL + Redis)', () => {
  let chat: ChatServer;
  let t: TestApp;
  let account: Account;
  let second: Runtime;
  let secondBase: string;
  const held: Array<(line: string) => void> = [];
  const sipps: Sipp[] = [];
  let far: FarEnd | null = null;
  let audioDir: string;

  beforeAll(async () => {
    chat = await startChatServer({
      respond: (record) => {
        if (isPersona(record)) return new Promise<string>((resolve) => held.push(resolve));
        return 'I see.';
      },
    });
    t = await startTestApp({
      workers: true,
      env: {
        OUTDIAL_LLM_URL: chat.url,
        OUTDIAL_LLM_MODEL: 'test-model',
        OUTDIAL_SIM_RING_MS: '30',
        OUTDIAL_SIP_BIND: '127.0.0.1',
        OUTDIAL_SIP_PORT: '0',
        OUTDIAL_RTP_PORTS: '44000-44999',
        // pocketsphinx on a loaded 2-core machine may take long over a line.
        OUTDIAL_MODEL_TIMEOUT_MS: '60000',
        // Every host shares the key secrets are sealed with.
        OUTDIAL_ENCRYPTION_KEY: ENCRYPTION_KEY,
      },
    });
    account = await t.createAccount({ minutes: 500 });
    // A second instance of the service: its own process state, the same database and Redis.
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-second-'));
    const database = await t.storage.open();
    second = await createRuntime(
      loadConfig({
        OUTDIAL_DATA_DIR: dataDir,
        OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
        OUTDIAL_JWT_SECRET: JWT_SECRET,
        OUTDIAL_ENCRYPTION_KEY: ENCRYPTION_KEY,
        OUTDIAL_PUBLIC_URL: 'http://outdial.test',
        LOG_LEVEL: 'silent',
      }),
      {
        logger: pino({ level: 'silent' }),
        database,
        cache: new RedisLiveCache({ url: t.redisUrl ?? '', keyPrefix: t.cachePrefix }),
      },
    );
    secondBase = await second.app.listen({ port: 0, host: '127.0.0.1' });
    audioDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-live-sip-'));
    writeSpeechWav(path.join(audioDir, 'hello.wav'), 'Hello?');
  }, 90_000);

  afterAll(async () => {
    for (const release of held.splice(0)) release('Bye.');
    for (const sipp of sipps) sipp.child.kill('SIGKILL');
    await far?.close();
    await second?.close();
    await second?.deps.cache.close();
    await t?.close();
    await chat?.close();
    if (audioDir) fs.rmSync(audioDir, { recursive: true, force: true });
  });

  const follow = (base: string, callId: string) =>
    openEventStream(`${base}/api/v1/call/events?callId=${callId}`, {
      authorization: `Bearer ${account.key}`,
    });
  const inProgress = (stream: Awaited<ReturnType<typeof follow>>) =>
    stream.next((e) => e.event === 'status' && e.data.status === 'in-progress', 60_000);

  it('takes a command through one instance for a call another holds, and streams its events there', async () => {
    const agent = await t.admin('POST', '/admin/v1/agents', {
      userId: account.userId,
      name: 'Sim agent',
      basicDetails: {
        agent_name: 'Ava',
        agentLanguage: 'en',
        firstMessage: 'Hi Jordan, this is Ava.',
        silence: { repromptMs: 0, hangupMs: 0 },
      },
    });
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to: '+14155550123', agentConfigId: agent.json().id },
    });
    const callId: string = dial.json().callId;
    // Followed through the second instance, which holds no call at all.
    const stream = await follow(secondBase, callId);
    await inProgress(stream);
    expect(second.simulator?.activeCalls).toBe(0);
    expect(t.provider.activeCalls).toBe(1);
    // Garbage on the call's channels (not JSON, or JSON of nothing we know) is ignored by both
    // instances: the call and the stream go on.
    const raw = new Redis(t.redisUrl ?? '');
    try {
      for (const channel of ['cmd', 'events']) {
        await raw.publish(`${t.cachePrefix}live:${callId}:${channel}`, '{not json');
      }
      await raw.publish(
        `${t.cachePrefix}live:${callId}:events`,
        JSON.stringify({ type: 'nonsense', seq: 999 }),
      );
    } finally {
      raw.disconnect();
    }
    const say = await second.app.inject({
      method: 'POST',
      url: `/api/v1/call/say?callId=${callId}`,
      headers: { authorization: `Bearer ${account.key}` },
      payload: { text: 'A colleague will email you today.' },
    });
    expect(say.statusCode, say.body).toBe(200);
    await stream.next((e) => e.event === 'turn' && e.data.content === 'A colleague will email you today.');
    const hangup = await second.app.inject({
      method: 'POST',
      url: `/api/v1/call/hangup?callId=${callId}`,
      headers: { authorization: `Bearer ${account.key}` },
    });
    expect(hangup.statusCode, hangup.body).toBe(200);
    expect(hangup.json()).toMatchObject({ success: true, outcome: 'ended' });
    const ended = await stream.next((e) => e.event === 'ended');
    expect(ended.data).toMatchObject({ callId, status: 'COMPLETED', endedReason: 'operator-ended' });
    expect(ended.data.transcription).toContainEqual({
      role: 'assistant',
      content: 'A colleague will email you today.',
    });
    await stream.closed;
  }, 60_000);

  /** A call through a trunk to the far end at `port`, followed (on the second instance) until the agent talks. */
  async function liveSipCall(port: number) {
    const trunk = trunkCalls(t, account);
    const agentId = await trunk.agent(
      port,
      {},
      { firstMessage: 'Hi Jordan, this is Ava from Acme.', silence: { repromptMs: 0, hangupMs: 0 } },
    );
    const callId = await trunk.dial(agentId, '+14155550123');
    const stream = await follow(secondBase, callId);
    await inProgress(stream);
    return { trunk, callId, stream };
  }

  it('hangs up a SIP call with a BYE, ended operator-ended', async () => {
    far = await startFarEnd('agent-listen', { lines: { hello: 'Hello?' }, timeoutSeconds: 120 });
    const { trunk, callId, stream } = await liveSipCall(far.port);
    const res = await t.request({
      method: 'POST',
      url: `/api/v1/call/hangup?callId=${callId}`,
      key: account.key,
    });
    expect(res.statusCode, res.body).toBe(200);
    const call = await trunk.ended(callId, 60_000);
    expect(call).toMatchObject({ status: 'COMPLETED', endedReason: 'operator-ended' });
    // sipp followed its scenario to the end: it got our BYE and answered it.
    expect(await far.sipp.done).toBe(0);
    const bye = sipMessages(far.log).find((m) => !m.sent && m.startLine.startsWith('BYE '));
    expect(bye).toBeDefined();
    const ended = await stream.next((e) => e.event === 'ended', 60_000);
    expect(ended.data).toMatchObject({ status: 'COMPLETED', endedReason: 'operator-ended' });
  }, 120_000);

  /** A far end that answers, says hello and then answers our REFER as its scenario says. */
  async function referCall(scenario: 'refer' | 'refer-busy') {
    const log = path.join(audioDir, `${scenario}.log`);
    const sipp = await startSipp(scenario, { cwd: audioDir, messageLog: log, timeoutSeconds: 90 });
    sipps.push(sipp);
    const { trunk, callId, stream } = await liveSipCall(sipp.port);
    const res = await t.request({
      method: 'POST',
      url: `/api/v1/call/transfer?callId=${callId}`,
      key: account.key,
      payload: { to: '+14155550199' },
    });
    return { sipp, log, trunk, callId, res, stream };
  }

  it('transfers a SIP call by REFER: accepted, the call ends transferred', async () => {
    const { sipp, log, trunk, callId, res } = await referCall('refer');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toEqual({ success: true, callId, outcome: 'transferred' });
    expect(await trunk.ended(callId, 60_000)).toMatchObject({ endedReason: 'transferred' });
    // sipp checked the Refer-To (the number, at the trunk) and Referred-By, and got our BYE.
    expect(await sipp.done).toBe(0);
    expect(fs.readFileSync(log, 'utf8')).toMatch(/^Refer-To: <sip:\+14155550199@127\.0\.0\.1>/m);
  }, 120_000);

  it('answers a refused SIP transfer with the far end’s reason, and the call goes on', async () => {
    const { sipp, trunk, callId, res } = await referCall('refer-busy');
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ success: false, callId, outcome: 'refused' });
    expect(res.json().reason).toMatch(/486/);
    expect((await trunk.status(callId)).status).toBe('ONGOING');
    const hangup = await t.request({
      method: 'POST',
      url: `/api/v1/call/hangup?callId=${callId}`,
      key: account.key,
    });
    expect(hangup.statusCode).toBe(200);
    expect(await trunk.ended(callId, 60_000)).toMatchObject({ endedReason: 'operator-ended' });
    expect(await sipp.done).toBe(0);
  }, 120_000);
});
