import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, ADMIN_TOKEN, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { completedBatch } from '../helpers/calls.js';
import { type ChatServer, isPersona, simulatedAiEnv, startChatServer } from '../helpers/model-servers.js';

/**
 * Issue 24 §7: a worker at its most AI calls (OUTDIAL_MAX_AI_CALLS) claims no more. With a bound
 * of 1, a campaign of simulated AI calls (an LLM configured: each answered call is a conversation
 * in text) is dialed one call at a time by this process, and every call is still served.
 */
describe(`a worker at its AI-call bound (${STORE})`, () => {
  let chat: ChatServer;
  let t: TestApp;
  let account: Account;

  beforeAll(async () => {
    chat = await startChatServer({
      respond: (record) =>
        isPersona(record) ? 'Sure, what is it about?' : 'Thank you for your time. Goodbye!',
    });
    t = await startTestApp({
      workers: true,
      env: { ...simulatedAiEnv(chat), OUTDIAL_MAX_AI_CALLS: '1' },
    });
    account = await t.createAccount({ minutes: 100 });
  });
  afterAll(async () => {
    await t?.close();
    await chat?.close();
  });

  it('never has two AI calls up at once, and completes the campaign', async () => {
    const numbers = ['+14155550121', '+14155550122', '+14155550123', '+14155550124'];
    // Without the bound, one pass would claim all four at once (10 calls/s, a 1 s horizon).
    const { batchId } = await completedBatch(
      t,
      account,
      numbers.map((phoneNumber) => ({ phoneNumber, name: 'Jordan' })),
      { maxCallsPerSecond: 10 },
      60_000,
    );

    const list = await t.request({
      method: 'GET',
      url: `/api/v1/calls?batchId=${batchId}`,
      key: account.key,
    });
    expect(list.statusCode, list.body).toBe(200);
    const calls = list
      .json<
        Array<{ status: string; endedReason: string | null; createdAt: string; endedAt: string | null }>
      >()
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt));
    // One call per contact, each a conversation served to its end: none refused as overloaded.
    expect(calls).toHaveLength(numbers.length);
    for (const call of calls) expect(call).toMatchObject({ status: 'COMPLETED', endedReason: 'agent-ended' });
    // Each call went out after the one before had ended: at most one AI call up at any moment.
    for (let i = 1; i < calls.length; i++) {
      const previous = calls[i - 1];
      expect(Date.parse(calls[i]?.createdAt ?? '')).toBeGreaterThanOrEqual(
        Date.parse(previous?.endedAt ?? ''),
      );
    }

    // The gauges show the process back under its bound once the calls are over.
    const metrics = await t.request({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(metrics.body).toMatch(/^outdial_ai_calls_in_progress 0$/m);
    expect(metrics.body).toMatch(/^outdial_overloaded 0$/m);
  }, 90_000);
});
