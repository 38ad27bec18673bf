import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp, TestClock } from '../helpers/app.js';

/** A Tuesday, 14:00 UTC: 14:00 in London, 23:00 in Tokyo, 06:00 in Los Angeles, 15:00 in Paris. */
const NOW = Date.parse('2030-01-15T14:00:00Z');
const consent = { source: 'web form', obtainedAt: '2029-12-01T10:00:00Z' };

describe('POST /api/v1/batch/preflight', () => {
  let t: TestApp;
  let account: Account;
  let poor: Account;
  let other: Account;
  const clock = new TestClock();
  beforeAll(async () => {
    clock.advance(NOW - Date.now());
    t = await startTestApp({ overrides: { clock } });
    account = await t.createAccount({ minutes: 100 });
    poor = await t.createAccount({ minutes: 2 });
    other = await t.createAccount({ minutes: 100 });
    const suppress = (who: Account, phoneNumber: string) =>
      t.request({ method: 'POST', url: '/api/v1/suppressions', key: who.key, payload: { phoneNumber } });
    expect((await suppress(account, '+442071838750')).statusCode).toBe(201);
    // Another user's list is not this user's.
    expect((await suppress(other, '+447700900123')).statusCode).toBe(201);
  });
  afterAll(() => t.close());

  const preflight = (
    body: Record<string, unknown>,
    who: Account = account,
    key: string | undefined = who.key,
  ) =>
    t.request({
      method: 'POST',
      url: '/api/v1/batch/preflight',
      key,
      payload: { agentId: who.agentId, userId: who.userId, ...body },
    });

  /** What a preflight must never leave behind: no batch, no contact, no stored body. */
  async function nothingStored(): Promise<void> {
    const db = t.runtime.database.db;
    const count = async (table: 'batches' | 'contacts' | 'batch_payloads' | 'batch_contacts') =>
      Number((await db.selectFrom(table).select(db.fn.countAll().as('n')).executeTakeFirstOrThrow()).n);
    expect(await count('batches')).toBe(0);
    expect(await count('batch_payloads')).toBe(0);
    expect(await count('batch_contacts')).toBe(0);
    expect(await count('contacts')).toBe(0);
  }

  it('reports each kind of contact the batch would refuse, skip, suppress or hold, and stores nothing', async () => {
    const res = await preflight({
      contacts: [
        { phoneNumber: '+447700900123', consent }, // London: open
        { phoneNumber: '+81312345678', consent }, // Tokyo: closed
        { phoneNumber: '+14155550123', consent }, // Los Angeles: closed
        { phoneNumber: '+12125550123', timezone: 'Europe/Paris', consent }, // its own zone: open
        { phoneNumber: '+447700900123', consent }, // a duplicate
        { phoneNumber: '555-0123' },
        { phoneNumber: '+442071838750', consent }, // on the suppression list
        { phoneNumber: '+447700900999' }, // no consent
        { phoneNumber: '+447700900124', consent: { source: 'web', obtainedAt: '2031-01-01T00:00:00Z' } },
        { phoneNumber: '+447700900125', timezone: 'Mars/Base', consent },
        'not a contact',
      ],
      options: { requireConsent: true, callingWindow: { start: '09:00', end: '17:00' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    const report = res.json();
    expect(report).toEqual({
      total: 11,
      valid: 7,
      invalid: [
        { index: 5, phoneNumber: '555-0123', reason: expect.stringMatching(/^contacts\.5\.phoneNumber /) },
        {
          index: 8,
          phoneNumber: '+447700900124',
          reason: 'contacts.8.consent.obtainedAt is in the future: consent must have been obtained already',
        },
        { index: 9, phoneNumber: '+447700900125', reason: expect.stringMatching(/^contacts\.9\.timezone /) },
        { index: 10, phoneNumber: null, reason: 'contacts.10 must be object' },
      ],
      duplicates: 1,
      suppressed: 1,
      withoutConsent: 1,
      outsideWindowNow: 2,
      estimatedMinutes: 6,
      availableMinutes: 100,
      wouldBeAccepted: false,
      refusal: {
        status: 400,
        error: 'Validation failed',
        code: 'INVALID_REQUEST',
        message: expect.stringMatching(/^contacts\.5\.phoneNumber .*\(and 3 more\)$/),
      },
    });
    await nothingStored();
  });

  it('answers wouldBeAccepted, with the duplicates and the contacts outside their window, and stores nothing', async () => {
    const body = {
      contacts: [
        { phoneNumber: '+447700900123' },
        { phoneNumber: '+447700900123' },
        { phoneNumber: '+81312345678' },
      ],
      options: { callingWindow: { start: '09:00', end: '17:00', days: ['mon', 'tue'] } },
    };
    const res = await preflight(body);
    expect(res.json()).toEqual({
      total: 3,
      valid: 3,
      invalid: [],
      duplicates: 1,
      suppressed: 0,
      withoutConsent: 0,
      outsideWindowNow: 1,
      estimatedMinutes: 2,
      availableMinutes: 100,
      wouldBeAccepted: true,
      refusal: null,
    });
    await nothingStored();
  });

  it('reports the refusal POST would give for the credit and for the agent', async () => {
    const contacts = [
      { phoneNumber: '+447700900123' },
      { phoneNumber: '+447700900124' },
      { phoneNumber: '+447700900125' },
    ];
    const broke = (await preflight({ contacts }, poor)).json();
    expect(broke).toMatchObject({
      valid: 3,
      estimatedMinutes: 3,
      availableMinutes: 2,
      wouldBeAccepted: false,
    });
    expect(broke.refusal).toEqual({
      status: 402,
      error: 'Insufficient call minutes',
      code: 'INSUFFICIENT_CREDITS',
      message: 'This batch needs an estimated 3 minutes; 2 available',
      details: { estimatedMinutesRequired: 3, availableMinutes: 2 },
    });
    const noAgent = (await preflight({ contacts, agentId: 'agt_missing' })).json();
    expect(noAgent.wouldBeAccepted).toBe(false);
    expect(noAgent.refusal).toMatchObject({ status: 404, code: 'AGENT_NOT_FOUND' });
    const empty = (await preflight({ contacts: [] })).json();
    expect(empty).toMatchObject({ total: 0, valid: 0, wouldBeAccepted: false, refusal: { status: 400 } });
    await nothingStored();
  });

  it.each([
    [{ contacts: 'nope' }, 'contacts'],
    [{ contacts: [{ phoneNumber: '+447700900123' }], agentId: undefined }, 'agentId'],
    [{ contacts: [], options: { priority: 11 } }, 'options.priority'],
    [{ contacts: [], options: { timezone: 'Mars/Base' } }, 'options.timezone'],
    [{ contacts: [], options: { callingWindow: { start: '18:00', end: '09:00' } } }, 'options.callingWindow'],
    [{ contacts: [], options: { scheduledStartTime: '2020-01-01T00:00:00Z' } }, null],
    [{ contacts: [], extra: 1 }, 'extra'],
  ])('answers 400 for a body that is not a batch: %o', async (body, field) => {
    const res = await preflight(body);
    expect(res.statusCode, res.body).toBe(400);
    if (field) expect(Object.keys(res.json().details.fieldErrors).join(' ')).toContain(field);
    await nothingStored();
  });

  it('refuses without a key, and with another user’s userId', async () => {
    const contacts = [{ phoneNumber: '+447700900123' }];
    const anonymous = await t.request({
      method: 'POST',
      url: '/api/v1/batch/preflight',
      payload: { agentId: account.agentId, userId: account.userId, contacts },
    });
    expect(anonymous.statusCode).toBe(401);
    const res = await preflight({ contacts, userId: other.userId });
    expect(res.statusCode).toBe(403);
  });

  it("sees neither another user's agent nor their suppression list", async () => {
    const res = await preflight({ contacts: [{ phoneNumber: '+447700900123' }], agentId: other.agentId });
    expect(res.json()).toMatchObject({
      suppressed: 0,
      wouldBeAccepted: false,
      refusal: { status: 404, code: 'AGENT_NOT_FOUND' },
    });
    const theirs = await preflight({ contacts: [{ phoneNumber: '+447700900123' }] }, other);
    expect(theirs.json()).toMatchObject({ suppressed: 1, wouldBeAccepted: true });
  });

  it('checks a 100,000-contact body in one request without holding the event loop', async () => {
    const zones = [
      'Europe/London',
      'Asia/Tokyo',
      'America/New_York',
      'Europe/Paris',
      'Australia/Sydney',
      'UTC',
    ];
    const contacts = Array.from({ length: 100_000 }, (_, i) => ({
      phoneNumber: `+4477009${String(i).padStart(5, '0')}`,
      name: `Contact ${i}`,
      timezone: zones[i % zones.length],
      ...(i % 10 === 0 ? {} : { consent }),
    }));
    contacts[500] = { phoneNumber: '12' } as never;
    // Serialised before the clock starts: the client's work is not the server's.
    const payload = JSON.stringify({
      agentId: account.agentId,
      userId: account.userId,
      contacts,
      options: { requireConsent: true, callingWindow: { start: '09:00', end: '17:00' } },
    });
    let turns = 0;
    const timer = setInterval(() => {
      turns++;
    }, 5);
    const started = performance.now();
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch/preflight',
      key: account.key,
      headers: { 'content-type': 'application/json' },
      payload,
    });
    clearInterval(timer);
    const elapsed = performance.now() - started;
    expect(res.statusCode).toBe(200);
    const report = res.json();
    expect(report).toMatchObject({
      total: 100_000,
      valid: 99_999,
      duplicates: 0,
      suppressed: 0,
      withoutConsent: 9_999,
      estimatedMinutes: 99_999,
      wouldBeAccepted: false,
    });
    expect(report.invalid).toEqual([
      { index: 500, phoneNumber: '12', reason: expect.stringContaining('contacts.500.phoneNumber') },
    ]);
    // At 14:00 UTC the 09:00-17:00 window is closed in Tokyo (23:00) and Sydney (01:00), open in
    // London, New York (09:00), Paris and UTC: a third of the consented contacts, minus the invalid.
    const consented = contacts.filter((_, i) => i !== 500 && i % 10 !== 0);
    const closed = consented.filter((c) => c.timezone === 'Asia/Tokyo' || c.timezone === 'Australia/Sydney');
    expect(report.outsideWindowNow).toBe(closed.length);
    // The checks yield between chunks of 5,000 contacts: other requests and timers get turns
    // (a single blocking pass would let this 5 ms timer fire once or twice).
    expect(turns).toBeGreaterThanOrEqual(10);
    expect(elapsed).toBeLessThan(20_000);
    await nothingStored();
  }, 60_000);

  it('is in the OpenAPI document with its report and errors', async () => {
    const doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    const op = doc.paths['/api/v1/batch/preflight'].post;
    expect(Object.keys(op.responses)).toEqual(
      expect.arrayContaining(['200', '400', '401', '403', '413', '500']),
    );
    expect(Object.keys(op.responses['200'].content['application/json'].schema.properties)).toEqual([
      'total',
      'valid',
      'invalid',
      'duplicates',
      'suppressed',
      'outsideWindowNow',
      'withoutConsent',
      'estimatedMinutes',
      'availableMinutes',
      'wouldBeAccepted',
      'refusal',
    ]);
  });

  // Last: it creates a batch.
  it('agrees with POST /api/v1/batch: the refusal it reports is the one POST answers, and what it accepts is accepted', async () => {
    const contacts = [
      { phoneNumber: '+447700900123' },
      { phoneNumber: '+447700900124' },
      { phoneNumber: '+447700900125' },
    ];
    const post = (who: Account) =>
      t.request({
        method: 'POST',
        url: '/api/v1/batch',
        key: who.key,
        payload: { agentId: who.agentId, userId: who.userId, contacts },
      });
    const refused = (await preflight({ contacts }, poor)).json().refusal;
    const posted = await post(poor);
    expect({ status: posted.statusCode, ...posted.json() }).toEqual(refused);
    expect((await preflight({ contacts })).json().wouldBeAccepted).toBe(true);
    expect((await post(account)).statusCode).toBe(202);
  });
});
