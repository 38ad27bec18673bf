import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

/** Opt-out capture (issue 15): a callee who asks not to be called again lands on the suppression list. */
describe('opt-out capture', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    t = await startTestApp({ workers: true });
    alice = await t.createAccount({ minutes: 100 });
    bob = await t.createAccount({ minutes: 100 });
  });
  afterAll(() => t.close());

  const dial = (account: Account, to: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: account.agentId },
    });
  const suppressions = async (account: Account) =>
    (await t.request({ method: 'GET', url: '/api/v1/suppressions', key: account.key })).json<
      Array<{ phoneNumber: string; reason: string | null; sourceCallId: string | null }>
    >();
  const analysed = (callId: string) =>
    eventually(async () => {
      const call = await t.runtime.database.db
        .selectFrom('calls')
        .select(['analysis_status', 'metric_json'])
        .where('id', '=', callId)
        .executeTakeFirstOrThrow();
      return call.analysis_status === 'done' ? call : undefined;
    }, 15_000);

  it('adds the number of a callee who asked not to be called again (simulator 0008) with reason opt-out and the call as source', async () => {
    const first = await dial(alice, '+14155550008');
    expect(first.statusCode, first.body).toBe(200);
    const callId = first.json<{ callId: string }>().callId;
    const call = await analysed(callId);
    expect(call.metric_json?.intent).toBe('do_not_call');

    expect(await suppressions(alice)).toEqual([
      { phoneNumber: '+14155550008', reason: 'opt-out', sourceCallId: callId, createdAt: expect.any(String) },
    ]);
    // The opt-out is Alice's alone.
    expect(await suppressions(bob)).toEqual([]);

    const again = await dial(alice, '+14155550008');
    expect(again.statusCode).toBe(403);
    expect(again.json().code).toBe('NUMBER_SUPPRESSED');
  });

  it('captures an opt-out found by create-summary too', async () => {
    const busy = await dial(bob, '+14155570001'); // busy: no conversation, no automatic analysis
    expect(busy.statusCode).toBe(200);
    const callId = busy.json<{ callId: string }>().callId;
    await eventually(async () => {
      const call = await t.runtime.database.db
        .selectFrom('calls')
        .select('status')
        .where('id', '=', callId)
        .executeTakeFirstOrThrow();
      return call.status !== 'ONGOING' ? true : undefined;
    });
    const summarise = (id: string) =>
      t.request({
        method: 'POST',
        url: '/api/v1/call/create-summary',
        key: bob.key,
        payload: {
          callId: id,
          transcription: [
            { role: 'assistant', content: 'Hi, this is Ava from Acme. Do you have a minute?' },
            { role: 'user', content: 'Stop calling me. Put me on your do not call list.' },
          ],
        },
      });
    const summary = await summarise(callId);
    expect(summary.statusCode, summary.body).toBe(200);
    const list = await suppressions(bob);
    expect(list.find((s) => s.phoneNumber === '+14155570001')).toEqual({
      phoneNumber: '+14155570001',
      reason: 'opt-out',
      sourceCallId: callId,
      createdAt: expect.any(String),
    });
  });

  it('keeps a record added by hand: an opt-out heard later does not rewrite it', async () => {
    const busy = await dial(bob, '+14155580001');
    const callId = busy.json<{ callId: string }>().callId;
    await eventually(async () => {
      const call = await t.runtime.database.db
        .selectFrom('calls')
        .select('status')
        .where('id', '=', callId)
        .executeTakeFirstOrThrow();
      return call.status !== 'ONGOING' ? true : undefined;
    });
    const added = await t.request({
      method: 'POST',
      url: '/api/v1/suppressions',
      key: bob.key,
      payload: { phoneNumber: '+14155580001', reason: 'complaint' },
    });
    expect(added.statusCode).toBe(201);
    const summary = await t.request({
      method: 'POST',
      url: '/api/v1/call/create-summary',
      key: bob.key,
      payload: {
        callId,
        transcription: [{ role: 'user', content: 'Stop calling me. Never call me again.' }],
      },
    });
    expect(summary.statusCode, summary.body).toBe(200);
    const list = await suppressions(bob);
    expect(list.find((s) => s.phoneNumber === '+14155580001')).toEqual(added.json());
  });
});
