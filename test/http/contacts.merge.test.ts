import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { callEnded, dialContact, exportedContacts } from '../helpers/calls.js';

/**
 * A contact written by a single dial and by a batch, in either order, merges by one rule
 * (domain/contacts.ts): a value given replaces, one not given (absent, null, blank) keeps, a
 * placeholder name never replaces a name, metadata merges key by key, consent and timezone given
 * replace. Read back through the batch export and the contacts row.
 */
describe('contacts merged by dials and batches', () => {
  let t: TestApp;
  let alice: Account;

  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount({ minutes: 100 });
  });
  afterAll(() => t.close());

  /** Dials and waits for the call's end: one call per contact at a time. */
  const dial = async (to: string, callerDetails: Record<string, unknown>) => {
    const { callId, contactId } = await dialContact(t, alice, to, callerDetails);
    await callEnded(t, alice, callId);
    return contactId;
  };

  /** A batch ingested and not dialed (it starts tomorrow); answers its id. */
  const ingest = async (contacts: Array<Record<string, unknown>>) => {
    const tomorrow = new Date(Date.now() + 86_400_000).toISOString();
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: alice.key,
      payload: { agentId: alice.agentId, contacts, options: { scheduledStartTime: tomorrow } },
    });
    expect(res.statusCode, res.body).toBe(202);
    const batchId = res.json().batchId as string;
    const url = `/api/v1/batch/check-status?batchId=${batchId}`;
    await eventually(async () =>
      (await t.request({ method: 'GET', url, key: alice.key })).json().status === 'scheduled'
        ? true
        : undefined,
    );
    return batchId;
  };

  /** The contact as the export shows it, with the columns no read shows (metadata, timezone, consent). */
  const contact = async (batchId: string) => {
    const [row] = await exportedContacts(t, alice, batchId);
    const stored = await t.runtime.database.db
      .selectFrom('contacts')
      .select(['metadata', 'timezone', 'consent'])
      .where('id', '=', row?.contactId ?? '')
      .executeTakeFirstOrThrow();
    return { id: row?.contactId, name: row?.name, email: row?.email, company: row?.company, ...stored };
  };

  it('a batch after a dial: what the batch leaves out or sends as null keeps what the dial gave', async () => {
    const contactId = await dial('+14155550311', {
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      company: 'Analytical Engines',
      metadata: { plan: 'pro', tier: 'gold' },
      consent: { source: 'web form', obtainedAt: '2026-01-05T10:00:00Z' },
    });
    const metadata = { tier: 'platinum', region: 'eu' };
    const byPhone = await ingest([
      { phoneNumber: '+14155550311', company: null, metadata, timezone: 'Europe/London' },
    ]);
    expect(await contact(byPhone)).toEqual({
      id: contactId,
      name: 'Ada Lovelace',
      email: 'ada@example.com',
      company: 'Analytical Engines',
      metadata: { plan: 'pro', tier: 'platinum', region: 'eu' },
      timezone: 'Europe/London',
      consent: { source: 'web form', obtainedAt: '2026-01-05T10:00:00.000Z' },
    });

    // Given again by its id, with the spec's default name: the name stays, the email given replaces.
    const byId = await ingest([
      { id: contactId, phoneNumber: '+14155550311', name: 'Unknown', email: 'ada@engines.example' },
    ]);
    expect(await contact(byId)).toMatchObject({
      id: contactId,
      name: 'Ada Lovelace',
      email: 'ada@engines.example',
    });
  });

  it('a dial after a batch: placeholders and blanks keep what the batch gave, values given replace', async () => {
    const batchId = await ingest([
      {
        phoneNumber: '+14155550312',
        name: 'Grace Hopper',
        email: 'grace@example.com',
        company: 'Navy',
        metadata: { rank: 'captain' },
        timezone: 'America/New_York',
        consent: { source: 'paper form', obtainedAt: '2026-01-06T10:00:00Z' },
      },
    ]);
    const before = await contact(batchId);

    expect(await dial('+14155550312', { name: 'Unknown', company: '', metadata: { ship: 'Harvard' } })).toBe(
      before.id,
    );
    expect(await contact(batchId)).toEqual({ ...before, metadata: { rank: 'captain', ship: 'Harvard' } });

    const consent = { source: 'phone', obtainedAt: '2026-01-07T10:00:00.000Z' };
    await dial('+14155550312', {
      name: 'Admiral Hopper',
      company: 'US Navy',
      metadata: { rank: 'admiral' },
      consent,
    });
    expect(await contact(batchId)).toEqual({
      ...before,
      name: 'Admiral Hopper',
      company: 'US Navy',
      metadata: { rank: 'admiral', ship: 'Harvard' },
      consent,
    });
  });
});
