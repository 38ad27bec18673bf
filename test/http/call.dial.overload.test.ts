import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, ADMIN_TOKEN, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { type ChatServer, isPersona, simulatedAiEnv, startChatServer } from '../helpers/model-servers.js';

/**
 * Issue 24 §7: a single AI dial is refused up front by the process that would hold it when that
 * process is full. With OUTDIAL_MAX_AI_CALLS=1 and an LLM configured (every simulated call is an
 * AI conversation held here), one call up (ringing or answered) leaves no place: the next dial is
 * 503 OVERLOADED with a Retry-After, and nothing is written, dialed or charged. Once the call has
 * ended, a dial is accepted again.
 */
describe(`POST /api/v1/call/dial on a process at its AI-call bound (${STORE})`, () => {
  let chat: ChatServer;
  let t: TestApp;
  let account: Account;
  /** The agent's model answers only once the test lets it: a call stays up until then. */
  let letAgentSpeak: () => void = () => {};
  let agentMaySpeak = Promise.resolve();
  const holdAgent = () => {
    agentMaySpeak = new Promise<void>((resolve) => {
      letAgentSpeak = resolve;
    });
  };

  beforeAll(async () => {
    chat = await startChatServer({
      respond: async (record) => {
        if (isPersona(record)) return 'Sure, what is it about?';
        await agentMaySpeak;
        return 'Thank you for your time. Goodbye!';
      },
    });
    t = await startTestApp({ env: { ...simulatedAiEnv(chat), OUTDIAL_MAX_AI_CALLS: '1' } });
    account = await t.createAccount({ minutes: 100 });
  });
  afterAll(async () => {
    letAgentSpeak();
    await t?.close();
    await chat?.close();
  });

  const dial = (to: string, idempotencyKey?: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: account.agentId },
      ...(idempotencyKey ? { headers: { 'idempotency-key': idempotencyKey } } : {}),
    });
  const callsTo = (to: string) =>
    t.runtime.database.db
      .selectFrom('calls')
      .select(['id', 'status'])
      .where('user_id', '=', account.userId)
      .where('phone_number', '=', to)
      .execute();
  const contactOf = (to: string) =>
    t.runtime.database.db
      .selectFrom('contacts')
      .select('id')
      .where('user_id', '=', account.userId)
      .where('phone_number', '=', to)
      .executeTakeFirst();
  const minutes = async () =>
    (await t.admin('GET', `/admin/v1/users/${account.userId}`)).json<{ availableMinutes: number }>()
      .availableMinutes;
  const aiCallsInProgress = async () => {
    const res = await t.request({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    return Number(/^outdial_ai_calls_in_progress (\d+)$/m.exec(res.body)?.[1]);
  };
  const expectRefused = async (to: string, idempotencyKey?: string) => {
    const dialsBefore = t.provider.dials.length;
    const res = await dial(to, idempotencyKey);
    expect(res.statusCode, res.body).toBe(503);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json()).toMatchObject({
      error: 'Service Unavailable',
      code: 'OVERLOADED',
      message: expect.stringContaining('OUTDIAL_MAX_AI_CALLS'),
      details: { retryAfterSeconds: 5 },
    });
    // Refused before anything was written: no call, no contact, nothing dialed or charged.
    expect(await callsTo(to)).toEqual([]);
    expect(await contactOf(to)).toBeUndefined();
    expect(t.provider.dials.length).toBe(dialsBefore);
    expect(await minutes()).toBe(100);
  };

  const statusOf = async (callId: string) => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/status/call?callId=${callId}`,
      key: account.key,
    });
    return res.json<{ status: string }>().status;
  };

  it('accepts a dial under the bound, refuses the next with 503 OVERLOADED while it rings and while it is answered, and accepts one again after it ended', async () => {
    holdAgent();
    const first = await dial('+14155550301');
    expect(first.statusCode, first.body).toBe(200);
    const { callId } = first.json<{ callId: string }>();

    // At once, before the first call is answered: its place is taken while it rings.
    await expectRefused('+14155550302');

    // Answered: an AI call in progress (the agent's model waits for the test).
    await expect.poll(aiCallsInProgress).toBe(1);
    await expectRefused('+14155550302', 'overload-retry-1');

    // The call ends; its place is free, and the refused dial succeeds, under the same key too.
    letAgentSpeak();
    const ended = await eventually(async () => {
      const status = await statusOf(callId);
      return status === 'ONGOING' ? undefined : status;
    }, 30_000);
    expect(ended).toBe('COMPLETED');

    const again = await dial('+14155550302', 'overload-retry-1');
    expect(again.statusCode, again.body).toBe(200);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    const second = again.json<{ callId: string }>();
    await eventually(async () => {
      const [row] = await callsTo('+14155550302');
      return row && row.status !== 'ONGOING' ? row : undefined;
    }, 30_000);
    expect(await callsTo('+14155550302')).toEqual([{ id: second.callId, status: 'COMPLETED' }]);
    await expect.poll(aiCallsInProgress).toBe(0);
  }, 60_000);

  it('places one of two dials sent at once and refuses the other: both cannot take the last place', async () => {
    holdAgent();
    const numbers = ['+14155550311', '+14155550312'];
    const answers = await Promise.all(numbers.map((to) => dial(to)));
    expect(answers.map((res) => res.statusCode).sort()).toEqual([200, 503]);
    const placed = answers.findIndex((res) => res.statusCode === 200);
    const refused = numbers[1 - placed] ?? '';
    expect(answers[1 - placed]?.json()).toMatchObject({ code: 'OVERLOADED' });
    expect(await callsTo(refused)).toEqual([]);
    expect(await contactOf(refused)).toBeUndefined();

    letAgentSpeak();
    const { callId } = answers[placed]?.json<{ callId: string }>() ?? { callId: '' };
    await expect.poll(() => statusOf(callId), { timeout: 30_000 }).toBe('COMPLETED');
    await expect.poll(aiCallsInProgress).toBe(0);
  }, 60_000);
});
