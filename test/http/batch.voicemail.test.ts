import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import { completedBatch, exportedContacts } from '../helpers/calls.js';

/**
 * A voicemail is left once (issue 24 §6): a batch contact whose call reached voicemail (the
 * simulator's numbers ending 0004 answer with a machine, and the agent leaves its message) is done
 * with the outcome VOICEMAIL, unless the batch's retryStrategy.retryOnVoicemail asks for more
 * attempts. A number that does not answer (0002) is retried beside it, so the retry delays are in
 * play. What a user sees: the calls of each number in check-status, and the export's row.
 */
describe('a batch contact that reached voicemail', () => {
  let t: TestApp;
  let alice: Account;
  const VOICEMAIL = '+14155530004';
  const NO_ANSWER = '+14155530002';

  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 20 } });
    alice = await t.createAccount({ minutes: 100 });
  });
  afterAll(() => t.close());

  /** The batch's calls to each number, oldest first, as check-status lists them. */
  const callsByNumber = async (batchId: string) => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/batch/check-status?batchId=${batchId}&limit=all`,
      key: alice.key,
    });
    const calls = res.json<{
      recentCalls: Array<{ phoneNumber: string; status: string; createdAt: string }>;
    }>().recentCalls;
    const byNumber = new Map<string, string[]>();
    for (const call of [...calls].sort((a, b) => a.createdAt.localeCompare(b.createdAt)))
      byNumber.set(call.phoneNumber, [...(byNumber.get(call.phoneNumber) ?? []), call.status]);
    return { statistics: res.json().statistics, byNumber };
  };

  /** The voicemail contact as a user sees it: its calls in check-status, and its export row. */
  const voicemailContact = async (batchId: string) => {
    const row = (await exportedContacts(t, alice, batchId)).find((r) => r.phoneNumber === VOICEMAIL);
    return {
      calls: (await callsByNumber(batchId)).byNumber.get(VOICEMAIL),
      state: row?.state,
      finalStatus: row?.finalStatus,
      attempts: row?.attempts,
    };
  };

  const run = (retryStrategy: Record<string, unknown>) =>
    completedBatch(
      t,
      alice,
      [
        { phoneNumber: VOICEMAIL, name: 'Machine' },
        { phoneNumber: NO_ANSWER, name: 'Nobody' },
      ],
      { retryStrategy: { maxAttempts: 3, noAnswerDelay: 50, busyDelay: 50, ...retryStrategy } },
    );

  it('is called once by default, done with VOICEMAIL, and the batch completes', async () => {
    const { batchId } = await run({});
    expect(await voicemailContact(batchId)).toEqual({
      calls: ['VOICEMAIL'],
      state: 'done',
      finalStatus: 'VOICEMAIL',
      attempts: '1',
    });
    const { statistics, byNumber } = await callsByNumber(batchId);
    expect(byNumber.get(NO_ANSWER)).toEqual(['NO_ANSWER', 'NO_ANSWER', 'NO_ANSWER']);
    expect(statistics).toMatchObject({ total: 2, processed: 2, succeeded: 0, failed: 2, pending: 0 });
  });

  it('is called again up to maxAttempts when retryOnVoicemail is true', async () => {
    const { batchId } = await run({ retryOnVoicemail: true });
    expect(await voicemailContact(batchId)).toEqual({
      calls: ['VOICEMAIL', 'VOICEMAIL', 'VOICEMAIL'],
      state: 'done',
      finalStatus: 'VOICEMAIL',
      attempts: '3',
    });
  });

  it('is called once when retryOnVoicemail is false, as when it is left out', async () => {
    const { batchId } = await run({ retryOnVoicemail: false });
    expect((await voicemailContact(batchId)).calls).toEqual(['VOICEMAIL']);
  });
});
