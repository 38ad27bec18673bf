import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv as parseRecords } from '../../src/cli/csv.js';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';

const parseCsv = (text: string): string[][] => parseRecords(text).map((record) => record.cells);

/** Consent records on contacts (batch and dial) and the batch option requireConsent, on both stores. */
describe('consent records', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;

  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount({ minutes: 100 });
    bob = await t.createAccount({ minutes: 100 });
  });
  afterAll(() => t.close());

  const createBatch = (account: Account, body: Record<string, unknown>) =>
    t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: { agentId: account.agentId, userId: account.userId, ...body },
    });
  const checkStatus = async (account: Account, batchId: string) =>
    t.request({ method: 'GET', url: `/api/v1/batch/check-status?batchId=${batchId}`, key: account.key });
  const exportRows = async (account: Account, batchId: string) => {
    const res = await t.request({ method: 'GET', url: `/api/v1/batch/${batchId}/export`, key: account.key });
    expect(res.statusCode).toBe(200);
    const [header = [], ...rows] = parseCsv(res.body);
    return rows.map((cells) => Object.fromEntries(header.map((name, i) => [name, cells[i] ?? ''])));
  };
  const batchCount = async (userId: string) => {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from batches where user_id = ${userId}`.execute(t.runtime.database.db);
    return rows[0]?.n ?? 0;
  };

  const ingested = (batchId: string) =>
    eventually(async () => {
      const row = await t.runtime.database.db
        .selectFrom('batches')
        .select(['status', 'error'])
        .where('id', '=', batchId)
        .executeTakeFirstOrThrow();
      expect(row).toMatchObject({ status: 'pending', error: null });
      return row;
    });

  it('stores a contact’s consent and requireConsent, and exports the consent beside each contact', async () => {
    const res = await createBatch(alice, {
      contacts: [
        {
          phoneNumber: '+14155550201',
          name: 'Ada',
          consent: {
            source: 'web form',
            obtainedAt: '2025-06-01T09:30:00+02:00',
            text: 'Yes, call me about offers',
          },
        },
        { phoneNumber: '+14155550202', name: 'Ben' },
      ],
      options: { requireConsent: true },
    });
    expect(res.statusCode).toBe(202);
    const { batchId } = res.json();
    await ingested(batchId);
    const batch = await t.runtime.database.db
      .selectFrom('batches')
      .select('require_consent')
      .where('id', '=', batchId)
      .executeTakeFirstOrThrow();
    expect(batch.require_consent).toBe(true);
    const rows = await exportRows(alice, batchId);
    expect(rows.map((row) => [row.phoneNumber, row.consentSource, row.consentObtainedAt])).toEqual([
      ['+14155550201', 'web form', '2025-06-01T07:30:00.000Z'],
      ['+14155550202', '', ''],
    ]);
    const stored = await t.runtime.database.db
      .selectFrom('contacts')
      .select('consent')
      .where('user_id', '=', alice.userId)
      .where('phone_number', '=', '+14155550201')
      .executeTakeFirstOrThrow();
    expect(stored.consent).toEqual({
      source: 'web form',
      obtainedAt: '2025-06-01T07:30:00.000Z',
      text: 'Yes, call me about offers',
    });
  });

  it('skips contacts without consent under requireConsent: withoutConsent (not pending) and NO_CONSENT in the export', async () => {
    const res = await createBatch(alice, {
      contacts: [
        { phoneNumber: '+14155550211' },
        {
          phoneNumber: '+14155550212',
          consent: { source: 'crm import', obtainedAt: '2025-02-02T12:00:00Z' },
        },
      ],
      options: { requireConsent: true },
    });
    const { batchId } = res.json();
    await ingested(batchId);
    const status = (await checkStatus(alice, batchId)).json();
    expect(status.statistics).toMatchObject({ total: 2, withoutConsent: 1, pending: 1, processed: 0 });
    const rows = await exportRows(alice, batchId);
    expect(rows.map((row) => [row.phoneNumber, row.state, row.finalStatus, row.consentSource])).toEqual([
      ['+14155550211', 'skipped', 'NO_CONSENT', ''],
      ['+14155550212', 'queued', '', 'crm import'],
    ]);
  });

  it('refuses a consent obtained in the future, without an offset, or malformed, naming the field; nothing stored', async () => {
    const before = await batchCount(alice.userId);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ source: 'web', obtainedAt: future }, 'contacts.1.consent.obtainedAt'],
      [{ source: 'web', obtainedAt: '2025-06-01T09:30:00' }, 'contacts.1.consent.obtainedAt'],
      [{ source: 'web', obtainedAt: 'yesterday' }, 'contacts.1.consent.obtainedAt'],
      [{ obtainedAt: '2025-06-01T09:30:00Z' }, 'contacts.1.consent.source'],
      [{ source: '', obtainedAt: '2025-06-01T09:30:00Z' }, 'contacts.1.consent.source'],
      [{ source: 'web', obtainedAt: '2025-06-01T09:30:00Z', signedBy: 'x' }, 'contacts.1.consent.signedBy'],
      [{ source: 'web', obtainedAt: '2025-06-01T09:30:00Z', text: 7 }, 'contacts.1.consent.text'],
    ];
    for (const [consent, field] of cases) {
      const res = await createBatch(alice, {
        contacts: [{ phoneNumber: '+14155550221' }, { phoneNumber: '+14155550222', consent }],
      });
      expect(res.statusCode, JSON.stringify(consent)).toBe(400);
      expect(res.json().code).toBe('INVALID_REQUEST');
      expect(Object.keys(res.json().details.fieldErrors), JSON.stringify(consent)).toContain(field);
    }
    const notBoolean = await createBatch(alice, {
      contacts: [{ phoneNumber: '+14155550221' }],
      options: { requireConsent: 'yes' },
    });
    expect(notBoolean.statusCode).toBe(400);
    expect(notBoolean.json().details.fieldErrors['options.requireConsent']).toBeDefined();
    expect(await batchCount(alice.userId)).toBe(before);
  });

  it('stores a consent given with a single dial and shows it on the call page', async () => {
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: {
        to: '+14155550231',
        agentConfigId: alice.agentId,
        callerDetails: {
          name: 'Cleo',
          consent: { source: 'inbound call', obtainedAt: '2025-05-05T10:00:00Z' },
        },
      },
    });
    expect(dial.statusCode).toBe(200);
    const { callId } = dial.json();
    const session = await signIn(alice.key);
    const page = await t.request({
      method: 'GET',
      url: `/dashboard/calls/${callId}`,
      headers: { cookie: session },
    });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('data-field="consentSource">inbound call<');
    expect(page.body).toContain('2025-05-05 10:00:00 UTC');

    const bad = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: {
        to: '+14155550232',
        agentConfigId: alice.agentId,
        callerDetails: {
          consent: { source: 'web', obtainedAt: new Date(Date.now() + 3_600_000).toISOString() },
        },
      },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().details.fieldErrors['callerDetails.consent.obtainedAt']).toBeDefined();
  });

  it('keeps consent to its user: another user cannot read the batch or its export (404), and needs a key (401)', async () => {
    const res = await createBatch(alice, {
      contacts: [
        { phoneNumber: '+14155550241', consent: { source: 'paper', obtainedAt: '2025-01-01T00:00:00Z' } },
      ],
    });
    const { batchId } = res.json();
    expect((await checkStatus(bob, batchId)).statusCode).toBe(404);
    const theirs = await t.request({ method: 'GET', url: `/api/v1/batch/${batchId}/export`, key: bob.key });
    expect(theirs.statusCode).toBe(404);
    const anonymous = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      payload: { agentId: alice.agentId, userId: alice.userId, contacts: [{ phoneNumber: '+14155550242' }] },
    });
    expect(anonymous.statusCode).toBe(401);
  });

  /** A dashboard session for `key`: the sign-in form with its CSRF token. */
  async function signIn(key: string): Promise<string> {
    const form = await t.request({ method: 'GET', url: '/sign-in' });
    const cookies = new Map<string, string>();
    const take = (setCookie: string | string[] | undefined) => {
      for (const line of Array.isArray(setCookie) ? setCookie : setCookie ? [setCookie] : []) {
        const [name, value] = (line.split(';')[0] ?? '').split('=');
        if (name) cookies.set(name, value ?? '');
      }
    };
    take(form.headers['set-cookie']);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(form.body)?.[1] ?? '';
    const header = () => [...cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const res = await t.request({
      method: 'POST',
      url: '/sign-in',
      headers: { cookie: header(), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ apiKey: key, _csrf: csrf, next: '/dashboard' }).toString(),
    });
    take(res.headers['set-cookie']);
    return header();
  }
});
