import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseCsv as parseRecords } from '../../src/cli/csv.js';
import { csvCell } from '../../src/services/export.js';
import { type Account, ADMIN_TOKEN, eventually, startTestApp, type TestApp } from '../helpers/app.js';

/** The export read back as a spreadsheet would, with the CLI's RFC 4180 reader. */
const parseCsv = (text: string): string[][] => parseRecords(text).map((record) => record.cells);

describe('batch export', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp({ workers: true, overrides: { dispatchTickMs: 50 } });
    alice = await t.createAccount({ minutes: 1000 });
    bob = await t.createAccount({ minutes: 1000 });
  });
  afterAll(() => t.close());

  it('streams every contact with its final status, attempts, call, summary and metrics as CSV', async () => {
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: alice.key,
      payload: {
        agentId: alice.agentId,
        userId: alice.userId,
        contacts: [
          { phoneNumber: '+14155559101', name: 'Ann, "the boss"' },
          { phoneNumber: '+14155559102', name: '=HYPERLINK("http://evil")', email: 'b@example.com' },
          { phoneNumber: '+14155550001', name: 'Busy' },
        ],
        options: { maxCallsPerSecond: 30, retryStrategy: { maxAttempts: 1 } },
      },
    });
    const { batchId } = created.json<{ batchId: string }>();
    await eventually(async () => {
      const res = await t.request({ method: 'GET', url: `/api/v1/batch/${batchId}/export`, key: alice.key });
      const rows = parseCsv(res.body);
      // Done once every answered call also has its summary.
      return rows.length === 4 &&
        rows.slice(1).filter((r) => r[6] === 'done' && (r[13] || r[7] === 'BUSY')).length === 3
        ? true
        : undefined;
    }, 15_000);
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/batch/${batchId}/export?format=csv`,
      key: alice.key,
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
    expect(res.headers['content-disposition']).toBe(`attachment; filename="${batchId}.csv"`);
    const [header, ...rows] = parseCsv(res.body);
    expect(header).toEqual([
      'seq',
      'phoneNumber',
      'contactId',
      'name',
      'email',
      'company',
      'state',
      'finalStatus',
      'attempts',
      'callId',
      'duration',
      'sipStatusCode',
      'endedAt',
      'summary',
      'intent',
      'sentiment',
      'confidence',
      'customerSatisfaction',
      'metricJson',
      'endedReason',
      'failureSource',
      'voiceToVoiceP50Ms',
      'voiceToVoiceP95Ms',
      'timezone',
      'waitingForWindow',
      'windowOpensAt',
      'consentSource',
      'consentObtainedAt',
    ]);
    expect(rows.map((r) => r[1])).toEqual(['+14155559101', '+14155559102', '+14155550001']);
    expect(rows[0]?.[3]).toBe('Ann, "the boss"');
    // A name that a spreadsheet would run as a formula is written as text.
    expect(rows[1]?.[3]).toBe('\'=HYPERLINK("http://evil")');
    expect(rows[1]?.[4]).toBe('b@example.com');
    const answered = rows[0] ?? [];
    expect(answered.slice(6, 10)).toEqual(['done', 'COMPLETED', '1', expect.stringMatching(/^call_/)]);
    expect(answered[11]).toBe(''); // simulated: no SIP code
    expect(answered[13]).toMatch(/\S/);
    expect(['interested', 'not_interested', 'callback_requested']).toContain(answered[14]);
    expect(JSON.parse(answered[18] ?? '{}')).toMatchObject({ intent: answered[14] });
    const busy = rows[2] ?? [];
    expect(busy.slice(6, 9)).toEqual(['done', 'BUSY', '1']);
    expect(busy[13]).toBe('');
    // Nobody answered: no endedReason; the callee's side (failureSource contact); no turns, no
    // calling window, no consent.
    expect(busy.slice(19, 21)).toEqual(['', 'contact']);
    expect(busy.slice(21)).toEqual(['', '', '', '', '', '', '']);
    expect(answered[20]).toBe('');
  });

  it("refuses another user's batch, an unknown one, an unknown format and a missing key", async () => {
    const created = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: alice.key,
      payload: { agentId: alice.agentId, userId: alice.userId, contacts: [{ phoneNumber: '+14155559201' }] },
    });
    const { batchId } = created.json<{ batchId: string }>();
    expect(
      (await t.request({ method: 'GET', url: `/api/v1/batch/${batchId}/export`, key: bob.key })).statusCode,
    ).toBe(404);
    expect(
      (await t.request({ method: 'GET', url: '/api/v1/batch/bat_missing/export', key: alice.key }))
        .statusCode,
    ).toBe(404);
    const xlsx = await t.request({
      method: 'GET',
      url: `/api/v1/batch/${batchId}/export?format=xlsx`,
      key: alice.key,
    });
    expect(xlsx.statusCode).toBe(400);
    const json = await t.request({
      method: 'GET',
      url: `/api/v1/batch/${batchId}/export?format=json`,
      key: alice.key,
    });
    expect(json.statusCode).toBe(400);
    expect(json.json().details.fieldErrors).toEqual({ format: ['must be one of: csv'] });
    expect(json.json().message).toContain('format must be one of: csv');
    expect(json.body).not.toContain('must be equal to constant');
    for (const key of [undefined, ADMIN_TOKEN]) {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/batch/${batchId}/export`,
        ...(key ? { key } : {}),
      });
      expect(res.statusCode).toBe(401);
    }
  });

  it('quotes cells the CSV way', () => {
    expect(csvCell('plain')).toBe('plain');
    expect(csvCell('a,b')).toBe('"a,b"');
    expect(csvCell('say "hi"')).toBe('"say ""hi"""');
    expect(csvCell('two\nlines')).toBe('"two\nlines"');
    expect(csvCell('-1+1')).toBe("'-1+1");
    expect(csvCell(-1)).toBe('-1');
    expect(csvCell(null)).toBe('');
    expect(csvCell({ a: 1 })).toBe('"{""a"":1}"');
  });
});
