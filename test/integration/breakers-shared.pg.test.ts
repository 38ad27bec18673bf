import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { type ChatServer, simulatedAiEnv, startOutageChat } from '../helpers/model-servers.js';

/**
 * Issue 24 §3: a breaker is the deployment's, not a process's. Two runtimes share one PostgreSQL
 * database (two hosts); the chat model fails the calls of one of them, and the other refuses its
 * next dial with 503 without having seen a failure itself.
 */
/** Hosts of one deployment share the key secrets are sealed with. */
const SHARED = { OUTDIAL_ENCRYPTION_KEY: randomBytes(32).toString('hex') };

describe('a circuit breaker shared by two processes on one PostgreSQL', () => {
  let chat: ChatServer;
  let first: TestApp;
  let second: TestApp;
  let account: Account;
  let setDown: (down: boolean) => void = () => {};

  beforeAll(async () => {
    ({ chat, setDown } = await startOutageChat());
    // No workers: no probe closes the breaker while the test reads it.
    first = await startTestApp({ env: { ...simulatedAiEnv(chat), ...SHARED } });
    second = await startTestApp({
      env: { ...simulatedAiEnv(chat), ...SHARED },
      overrides: { database: first.runtime.database },
    });
    account = await first.createAccount({ minutes: 100 });
  });
  afterAll(async () => {
    await second?.close();
    await first?.close();
    await chat?.close();
  });

  const dial = (t: TestApp, to: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: account.agentId },
    });
  const ended = (t: TestApp, callId: string) =>
    eventually(async () => {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/call/check-status?callId=${callId}`,
        key: account.key,
      });
      const data = res.json<{ data: { status: string; endedReason: string | null } }>().data;
      return data.status === 'ONGOING' ? undefined : data;
    }, 30_000);

  it("opens for every process on one process's evidence", async () => {
    setDown(true);
    for (const to of ['+14155550141', '+14155550142', '+14155550143']) {
      const res = await dial(second, to);
      expect(res.statusCode, res.body).toBe(200);
      expect(await ended(second, res.json<{ callId: string }>().callId)).toMatchObject({
        status: 'FAILED',
        endedReason: 'model-unavailable',
      });
    }
    const key = `llm:${chat.url}`;
    // The first process's own snapshot is at most a second old; its health report reads it.
    await eventually(async () => {
      const res = await first.request({ method: 'GET', url: '/api/v1/health', key: account.key });
      const found = res
        .json<{ dependencies: Array<{ key: string; breaker: string }> }>()
        .dependencies.find((dependency) => dependency.key === key);
      return found?.breaker === 'open' ? true : undefined;
    }, 10_000);
    const refused = await dial(first, '+14155550144');
    expect(refused.statusCode, refused.body).toBe(503);
    expect(refused.json()).toMatchObject({ code: 'DEPENDENCY_UNAVAILABLE', details: { dependency: key } });
  }, 90_000);

  it('resumes a batch paused for a model endpoint the deployment no longer uses, once restarted on another', async () => {
    // A worker on the failing model: its breaker opens (three single dials), and a campaign pauses.
    setDown(true);
    const worker = await startTestApp({
      workers: true,
      env: {
        ...simulatedAiEnv(chat),
        ...SHARED,
        OUTDIAL_BREAKER_PROBE_MS: '200',
        OUTDIAL_BREAKER_PROBE_MAX_MS: '400',
      },
      overrides: { database: first.runtime.database },
    });
    let batchId = '';
    try {
      for (const to of ['+14155550151', '+14155550152', '+14155550153']) {
        const res = await dial(worker, to);
        if (res.statusCode === 503) break; // already open from the test before
        await ended(worker, res.json<{ callId: string }>().callId);
      }
      const created = await worker.request({
        method: 'POST',
        url: '/api/v1/batch',
        key: account.key,
        payload: {
          agentId: account.agentId,
          contacts: [{ phoneNumber: '+14155550161' }, { phoneNumber: '+14155550162' }],
          options: { maxCallsPerSecond: 5 },
        },
      });
      expect(created.statusCode, created.body).toBe(202);
      batchId = created.json<{ batchId: string }>().batchId;
      await eventually(async () => {
        const res = await worker.request({
          method: 'GET',
          url: `/api/v1/batch/check-status?batchId=${batchId}`,
          key: account.key,
        });
        return res.json<{ pauseReason: string | null }>().pauseReason === 'dependency-unavailable'
          ? true
          : undefined;
      }, 30_000);
    } finally {
      await worker.close();
    }

    // The operator points the deployment at another model server and starts it again.
    const { chat: other } = await startOutageChat();
    const restarted = await startTestApp({
      workers: true,
      env: {
        ...simulatedAiEnv(other),
        ...SHARED,
        OUTDIAL_BREAKER_PROBE_MS: '200',
        OUTDIAL_BREAKER_PROBE_MAX_MS: '400',
      },
      overrides: { database: first.runtime.database },
    });
    try {
      const done = await eventually(async () => {
        const res = await restarted.request({
          method: 'GET',
          url: `/api/v1/batch/check-status?batchId=${batchId}`,
          key: account.key,
        });
        const status = res.json<{ status: string; statistics: { succeeded: number } }>();
        return status.status === 'completed' ? status : undefined;
      }, 60_000);
      expect(done.statistics.succeeded).toBe(2);
    } finally {
      await restarted.close();
      await other.close();
    }
  }, 150_000);
});
