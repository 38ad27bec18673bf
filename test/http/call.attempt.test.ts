import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import { callEnded, completedBatch, dialCall } from '../helpers/calls.js';
import { DashboardClient } from '../helpers/dashboard-client.js';

/**
 * One meaning of a call's `attempt` (docs/decisions.md, "One meaning of attempt"): the how-manieth
 * dial of one intent, a contact in one batch or a contact's single dials, neither counting the
 * other's. What a user sees of it: the simulator's numbers ending 0006 (busy on the first attempt)
 * and 0007 (no answer on the first attempt) give the same outcomes singly whatever batches called
 * the contact, and in a batch whatever single calls came before; the call page shows the attempt.
 */
describe("a call's attempt, single and in a batch", () => {
  let t: TestApp;
  let alice: Account;
  let browser: DashboardClient;

  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 20 } });
    alice = await t.createAccount({ minutes: 100 });
    browser = new DashboardClient(t);
    await browser.signIn(alice.key);
  });
  afterAll(() => t.close());

  /** Each call's final status (GET /api/v1/status/call) and the attempt its call page shows. */
  const seen = async (callIds: string[]) => {
    const calls = [];
    for (const callId of callIds) {
      const status = await callEnded(t, alice, callId);
      const page = await browser.get(`/dashboard/calls/${callId}`);
      const attempt = Number(/<dt>Attempt<\/dt><dd>(\d+)<\/dd>/.exec(page.body)?.[1]);
      calls.push(`${attempt} ${status}`);
    }
    return calls.sort();
  };
  const singly = async (to: string) => seen([await dialCall(t, alice, to, 'Sam')]);
  const inABatch = async (to: string) => {
    const retry = { maxAttempts: 3, busyDelay: 100, noAnswerDelay: 100 };
    const { callIds } = await completedBatch(t, alice, [{ phoneNumber: to, name: 'Sam' }], {
      retryStrategy: retry,
    });
    return seen(callIds);
  };

  it('called singly after a batch: its single dials count from 1, busy then answered', async () => {
    expect(await inABatch('+14155510006')).toEqual(['1 BUSY', '2 COMPLETED']);
    expect(await singly('+14155510006')).toEqual(['1 BUSY']);
    expect(await singly('+14155510006')).toEqual(['2 COMPLETED']);
  });

  it('in a batch after single calls: the batch counts from 1, no answer then answered', async () => {
    expect(await singly('+14155520007')).toEqual(['1 NO_ANSWER']);
    expect(await singly('+14155520007')).toEqual(['2 COMPLETED']);
    expect(await inABatch('+14155520007')).toEqual(['1 NO_ANSWER', '2 COMPLETED']);
    expect(await singly('+14155520007')).toEqual(['3 COMPLETED']);
  });
});
