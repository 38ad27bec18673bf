import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json } from '../../src/adapters/postgres/database.js';
import { newId } from '../../src/domain/ids.js';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Issue 13, item 10: a batch whose contacts cannot be stored is refused before the 202, naming the
 * row; and a batch that still cannot be ingested (one an older version accepted, or any error that
 * repeats) ends failed with INGEST_FAILED and its batch.failed webhook, instead of staying
 * `ingesting` and re-parsing its body every 10 s.
 */
describe('batches that cannot be ingested', () => {
  let t: TestApp;
  let alice: Account;
  beforeAll(async () => {
    t = await startTestApp();
    alice = await t.createAccount({ minutes: 100 });
  });
  afterAll(() => t.close());

  const batchRows = async () =>
    (
      await t.runtime.database.db
        .selectFrom('batches')
        .select('id')
        .where('user_id', '=', alice.userId)
        .execute()
    ).length;

  const deep = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
  const refused: [string, string, string][] = [
    ['a NUL in a name', '{"phoneNumber":"+15550100011","name":"a\\u0000b"}', 'contacts.1.name'],
    ['a NUL in an id', '{"phoneNumber":"+15550100011","id":"cnt_\\u0000"}', 'contacts.1.id'],
    [
      'a NUL in metadata',
      '{"phoneNumber":"+15550100011","metadata":{"k":"\\u0000"}}',
      'contacts.1.metadata.k',
    ],
    [
      'metadata nested 20,000 deep',
      `{"phoneNumber":"+15550100011","metadata":${deep(20_000)}}`,
      'contacts.1.metadata',
    ],
  ];
  for (const [what, contact, field] of refused) {
    it(`refuses ${what} with a 400 naming the row, before any batch exists`, async () => {
      const before = await batchRows();
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/batch',
        key: alice.key,
        headers: { 'content-type': 'application/json' },
        payload: `{"agentId":"${alice.agentId}","userId":"${alice.userId}","contacts":[{"phoneNumber":"+15550100010"},${contact}]}`,
      });
      expect(res.statusCode).toBe(400);
      const body = res.json<{ code: string; details: { fieldErrors: Record<string, string[]> } }>();
      expect(body.code).toBe('INVALID_REQUEST');
      const [named] = Object.keys(body.details.fieldErrors);
      expect(named?.startsWith(field)).toBe(true);
      expect(await batchRows()).toBe(before);
    });
  }

  /** A batch as a version without these checks accepted it: recorded, with a body ingestion cannot store. */
  async function strandedBatch(contactsJson: string, passes = 1): Promise<string> {
    const db = t.runtime.database.db;
    const id = newId('bat');
    const now = new Date();
    await db
      .insertInto('batches')
      .values({
        id,
        user_id: alice.userId,
        agent_id: alice.agentId,
        name: 'stranded',
        status: 'ingesting',
        priority: 5,
        max_calls_per_second: 10,
        max_attempts: 3,
        no_answer_delay_ms: 3_600_000,
        busy_delay_ms: 300_000,
        timezone: 'UTC',
        scheduled_start_at: null,
        tags: [],
        webhooks: json({ onBatchFailed: 'http://127.0.0.1:9/failed' }),
        submitted: 2,
        total: 2,
        duplicates: 0,
        ingest_lease_until: new Date(now.getTime() - 1000),
        ingest_passes: passes,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await db
      .insertInto('batch_payloads')
      .values({ batch_id: id, body: `{"agentId":"${alice.agentId}","contacts":${contactsJson}}` })
      .execute();
    return id;
  }

  for (const [what, contact] of [
    ['a NUL in a name', '{"phoneNumber":"+15550100021","name":"a\\u0000b"}'],
    ['metadata nested 20,000 deep', `{"phoneNumber":"+15550100021","metadata":${deep(20_000)}}`],
  ] as const) {
    it(`ends a stranded batch with ${what} failed, with its webhook, instead of retrying forever`, async () => {
      const batchId = await strandedBatch(`[{"phoneNumber":"+15550100020"},${contact}]`);
      expect(await t.runtime.ingester.recover({ limit: 10, ignoreLease: true })).toBeGreaterThanOrEqual(1);
      await t.runtime.ingester.idle();

      const status = await t.request({
        method: 'GET',
        url: `/api/v1/batch/${batchId}/status`,
        key: alice.key,
      });
      expect(status.statusCode).toBe(200);
      const body = status.json<{ status: string; error: { code: string; message: string } }>();
      expect(body.status).toBe('failed');
      expect(body.error.code).toBe('INGEST_FAILED');
      expect(body.error.message).toMatch(/^The batch's contacts could not be stored: /);

      const db = t.runtime.database.db;
      const hooks = await db
        .selectFrom('webhook_deliveries')
        .select(['event', 'url'])
        .where('batch_id', '=', batchId)
        .execute();
      expect(hooks).toEqual([{ event: 'batch.failed', url: 'http://127.0.0.1:9/failed' }]);
      const payload = await db
        .selectFrom('batch_payloads')
        .select('batch_id')
        .where('batch_id', '=', batchId)
        .execute();
      expect(payload).toEqual([]);
      // Nothing left to take over: the next recovery pass finds no ingesting batch.
      expect(await t.runtime.ingester.recover({ limit: 10, ignoreLease: true })).toBe(0);
    });
  }

  it('fails a batch whose ingestion stopped five times, wherever it is taken up, instead of parsing it again', async () => {
    // Five passes started and never finished: each one's process was killed (say, out of memory).
    const batchId = await strandedBatch('[{"phoneNumber":"+15550100030"},{"phoneNumber":"+15550100031"}]', 5);
    expect(await t.runtime.ingester.recover({ limit: 10, ignoreLease: true })).toBeGreaterThanOrEqual(1);
    await t.runtime.ingester.idle();
    const body = (
      await t.request({ method: 'GET', url: `/api/v1/batch/${batchId}/status`, key: alice.key })
    ).json<{ status: string; error: { code: string; message: string } }>();
    expect(body.status).toBe('failed');
    expect(body.error.code).toBe('INGEST_FAILED');
    expect(body.error.message).toMatch(/started 5 times and stopped each time/);
    const queued = await t.runtime.database.db
      .selectFrom('batch_contacts')
      .select('seq')
      .where('batch_id', '=', batchId)
      .execute();
    expect(queued).toEqual([]);
  });

  it('takes up a batch whose earlier passes stopped fewer than five times, and counts the pass', async () => {
    const batchId = await strandedBatch('[{"phoneNumber":"+15550100040"},{"phoneNumber":"+15550100041"}]', 4);
    expect(await t.runtime.ingester.recover({ limit: 10, ignoreLease: true })).toBeGreaterThanOrEqual(1);
    await t.runtime.ingester.idle();
    const row = await t.runtime.database.db
      .selectFrom('batches')
      .select(['status', 'ingested', 'ingest_passes'])
      .where('id', '=', batchId)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ status: 'pending', ingested: 2, ingest_passes: 5 });
  });
});
