import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { type ChatServer, isPersona, simulatedAiEnv, startChatServer } from '../helpers/model-servers.js';

/**
 * Issue 24 §3: a breaker is the deployment's, not a process's. Two runtimes share one PostgreSQL
 * database (two hosts); the chat model fails the calls of one of them, and the other refuses its
 * next dial with 503 without having seen a failure itself.
 */
describe('a circuit breaker shared by two processes on one PostgreSQL', () => {
  let chat: ChatServer;
  let first: TestApp;
  let second: TestApp;
  let account: Account;
  let modelDown = false;

  beforeAll(async () => {
    chat = await startChatServer({
      respond: (record) => {
        if (isPersona(record)) return 'Sure, what is it about?';
        if (modelDown) return { fail: 503 };
        return 'Thank you for your time. Goodbye!';
      },
    });
    // No workers: no probe closes the breaker while the test reads it.
    first = await startTestApp({ env: simulatedAiEnv(chat) });
    second = await startTestApp({
      env: simulatedAiEnv(chat),
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
    modelDown = true;
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
});
