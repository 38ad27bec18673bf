import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv } from '../../src/cli/csv.js';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Suppression in campaigns (issue 15): a suppressed number is never dialed in a batch, counted as
 * statistics.suppressed and marked SUPPRESSED in the export; a callee who opts out (simulator 0008)
 * is on the list after its call, and a later batch never dials it.
 */
describe('suppressed numbers in batches', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
    alice = await t.createAccount({ minutes: 1000 });
    bob = await t.createAccount({ minutes: 1000 });
  });
  afterAll(() => t.close());

  const create = async (account: Account, phoneNumbers: string[]) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: {
        agentId: account.agentId,
        userId: account.userId,
        contacts: phoneNumbers.map((phoneNumber) => ({ phoneNumber })),
        options: { maxCallsPerSecond: 30, retryStrategy: { maxAttempts: 3, busyDelay: 0, noAnswerDelay: 0 } },
      },
    });
    expect(res.statusCode, res.body).toBe(202);
    return res.json<{ batchId: string }>().batchId;
  };
  const finished = (account: Account, batchId: string) =>
    eventually(async () => {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}`,
        key: account.key,
      });
      const body = res.json();
      return body.status === 'completed' ? body : undefined;
    }, 20_000);
  const dialsTo = (to: string) => t.provider.dials.filter((dial) => dial.to === to);
  const exportRows = async (account: Account, batchId: string) => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/batch/${batchId}/export?format=csv`,
      key: account.key,
    });
    expect(res.statusCode).toBe(200);
    const [header, ...rows] = parseCsv(res.body);
    const names = header?.cells ?? [];
    return rows.map((row) => Object.fromEntries(names.map((name, i) => [name, row.cells[i] ?? ''])));
  };

  it('never dials a number suppressed beforehand, counts it and marks it in the export; captures an opt-out', async () => {
    const added = await t.request({
      method: 'POST',
      url: '/api/v1/suppressions',
      key: alice.key,
      payload: { phoneNumber: '+14155550301', reason: 'complaint' },
    });
    expect(added.statusCode).toBe(201);

    const batchId = await create(alice, ['+14155550301', '+14155550008', '+14155550302']);
    const done = await finished(alice, batchId);
    expect(done.statistics).toMatchObject({ total: 3, processed: 2, suppressed: 1, pending: 0 });
    expect(dialsTo('+14155550301')).toEqual([]);
    expect(dialsTo('+14155550008')).toHaveLength(1);

    const rows = await exportRows(alice, batchId);
    expect(rows.find((row) => row.phoneNumber === '+14155550301')).toMatchObject({
      state: 'suppressed',
      finalStatus: 'SUPPRESSED',
      callId: '',
    });
    expect(rows.find((row) => row.phoneNumber === '+14155550302')?.finalStatus).toBe('COMPLETED');

    // The 0008 callee asked not to be called again: on the list with its call as the source.
    const optOutCall = rows.find((row) => row.phoneNumber === '+14155550008')?.callId;
    expect(optOutCall).toMatch(/^call_/);
    const optOut = await eventually(async () => {
      const list = (await t.request({ method: 'GET', url: '/api/v1/suppressions', key: alice.key })).json<
        Array<{ phoneNumber: string; reason: string; sourceCallId: string | null }>
      >();
      return list.find((s) => s.phoneNumber === '+14155550008');
    }, 15_000);
    expect(optOut).toMatchObject({ reason: 'opt-out', sourceCallId: optOutCall });

    // A later batch counts it suppressed and never dials it again.
    const second = await create(alice, ['+14155550008', '+14155550303']);
    const again = await finished(alice, second);
    expect(again.statistics).toMatchObject({ total: 2, processed: 1, suppressed: 1, pending: 0 });
    expect(dialsTo('+14155550008')).toHaveLength(1);
    const secondRows = await exportRows(alice, second);
    expect(secondRows.find((row) => row.phoneNumber === '+14155550008')?.finalStatus).toBe('SUPPRESSED');
  });

  it("dials another user's suppressed number for its own batch", async () => {
    const batchId = await create(bob, ['+14155550301']);
    const done = await finished(bob, batchId);
    expect(done.statistics).toMatchObject({ total: 1, processed: 1, suppressed: 0 });
    expect(dialsTo('+14155550301')).toHaveLength(1);
  });
});
