import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json } from '../../src/adapters/postgres/database.js';
import { requestHash } from '../../src/services/idempotency.js';
import { type Account, startTestApp, type TestApp, TestClock } from '../helpers/app.js';
import { refusingDialsTo } from '../helpers/refusing-provider.js';

const REFUSED = '+14155550199';

describe('Idempotency-Key on POST /api/v1/call/dial and POST /api/v1/batch', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  const clock = new TestClock();

  beforeAll(async () => {
    t = await startTestApp({
      overrides: { clock },
      // A trunk that refuses one number: the provider fails after the call was recorded.
      wrapProvider: refusingDialsTo(REFUSED),
    });
    alice = await t.createAccount({ minutes: 500 });
    bob = await t.createAccount({ minutes: 500 });
  });
  afterAll(() => t.close());

  const dialBody = (account: Account, to: string) => JSON.stringify({ to, agentConfigId: account.agentId });
  const dial = (account: Account, payload: string, key?: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      headers: {
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'idempotency-key': key }),
      },
      payload,
    });
  const batchBody = (account: Account, phones: string[]) =>
    JSON.stringify({
      agentId: account.agentId,
      userId: account.userId,
      contacts: phones.map((phoneNumber) => ({ phoneNumber })),
    });
  const createBatch = (account: Account, payload: string, key?: string) =>
    t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      headers: {
        'content-type': 'application/json',
        ...(key === undefined ? {} : { 'idempotency-key': key }),
      },
      payload,
    });
  const countRows = async (table: 'calls' | 'batches', userId: string) => {
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from ${sql.table(table)} where user_id = ${userId}`.execute(
      t.runtime.database.db,
    );
    return rows[0]?.n ?? 0;
  };

  it('dials once for a key sent twice: the second answer is the first again, marked replayed', async () => {
    const before = await countRows('calls', alice.userId);
    const body = dialBody(alice, '+14155550141');
    const first = await dial(alice, body, 'dial-twice-1');
    expect(first.statusCode).toBe(200);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const second = await dial(alice, body, 'dial-twice-1');
    expect(second.statusCode).toBe(200);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.json()).toEqual(first.json());
    expect(second.json().callId).toMatch(/^call_/);
    expect(await countRows('calls', alice.userId)).toBe(before + 1);
  });

  it('answers 422 IDEMPOTENCY_KEY_REUSED for the same key with another body, and dials nothing', async () => {
    expect((await dial(alice, dialBody(alice, '+14155550142'), 'dial-reused')).statusCode).toBe(200);
    const before = await countRows('calls', alice.userId);
    const other = await dial(alice, dialBody(alice, '+14155550143'), 'dial-reused');
    expect(other.statusCode).toBe(422);
    expect(other.json()).toMatchObject({ error: 'Unprocessable Entity', code: 'IDEMPOTENCY_KEY_REUSED' });
    expect(await countRows('calls', alice.userId)).toBe(before);
  });

  it('two concurrent dials under one key place one call: the other is 409 IDEMPOTENCY_KEY_IN_USE or the replay', async () => {
    const before = await countRows('calls', alice.userId);
    const body = dialBody(alice, '+14155550144');
    const answers = await Promise.all([dial(alice, body, 'dial-race'), dial(alice, body, 'dial-race')]);
    const ok = answers.filter((res) => res.statusCode === 200);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const res of answers) {
      if (res.statusCode === 409) expect(res.json().code).toBe('IDEMPOTENCY_KEY_IN_USE');
      else expect(res.statusCode).toBe(200);
    }
    expect(new Set(ok.map((res) => res.json().callId)).size).toBe(1);
    expect(await countRows('calls', alice.userId)).toBe(before + 1);
  });

  it('keeps keys per user: the same key of another user is its own', async () => {
    const mine = await dial(alice, dialBody(alice, '+14155550145'), 'shared-key');
    const theirs = await dial(bob, dialBody(bob, '+14155550145'), 'shared-key');
    expect(mine.statusCode).toBe(200);
    expect(theirs.statusCode).toBe(200);
    expect(theirs.headers['idempotent-replayed']).toBeUndefined();
    expect(theirs.json().callId).not.toBe(mine.json().callId);
  });

  it('refuses a key that is empty, too long or not printable ASCII with 400, storing nothing', async () => {
    const before = await countRows('calls', alice.userId);
    for (const key of ['', 'k'.repeat(256), 'clé-é', 'tab\there']) {
      const res = await dial(alice, dialBody(alice, '+14155550146'), key);
      expect(res.statusCode, JSON.stringify(key)).toBe(400);
      expect(res.json().details.fieldErrors['idempotency-key']).toBeDefined();
    }
    expect(await countRows('calls', alice.userId)).toBe(before);
    const { rows } = await sql<{
      n: number;
    }>`select count(*)::int as n from idempotency_keys where key = ''`.execute(t.runtime.database.db);
    expect(rows[0]?.n).toBe(0);
  });

  it('needs an API key: 401 with a key header alone', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      headers: { 'content-type': 'application/json', 'idempotency-key': 'no-auth' },
      payload: dialBody(alice, '+14155550147'),
    });
    expect(res.statusCode).toBe(401);
  });

  it('frees the key of a refused request: a retry after fixing the cause goes ahead', async () => {
    const body = JSON.stringify({ to: '+14155550148', agentConfigId: 'agt_missing' });
    const refused = await dial(alice, body, 'dial-refused');
    expect(refused.statusCode).toBe(404);
    const again = await dial(alice, body, 'dial-refused');
    expect(again.statusCode).toBe(404);
    expect(again.headers['idempotent-replayed']).toBeUndefined();
    const fixed = await dial(alice, dialBody(alice, '+14155550148'), 'dial-refused');
    expect(fixed.statusCode).toBe(200);
  });

  it('answers the 502 again for a call the provider refused after it was recorded, and never dials it twice', async () => {
    const before = await countRows('calls', alice.userId);
    const body = dialBody(alice, REFUSED);
    const refused = await dial(alice, body, 'dial-provider-down');
    expect(refused.statusCode).toBe(502);
    const again = await dial(alice, body, 'dial-provider-down');
    expect(again.statusCode).toBe(502);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json()).toEqual(refused.json());
    expect(await countRows('calls', alice.userId)).toBe(before + 1);
    // The refused call is kept as the user reads it: FAILED at once, never answered, nothing charged.
    const { callId } = refused.json().details as { callId: string };
    const call = await t.request({
      method: 'GET',
      url: `/api/v1/status/call?callId=${callId}`,
      key: alice.key,
    });
    expect(call.json()).toMatchObject({
      status: 'FAILED',
      error: 'The voice provider could not place the call',
      duration: 0,
    });
    const row = await t.runtime.database.db
      .selectFrom('calls')
      .select(['answered_at', 'minutes_charged'])
      .where('id', '=', callId)
      .executeTakeFirstOrThrow();
    expect(row).toEqual({ answered_at: null, minutes_charged: 0 });
  });

  it('takes over a key whose request died mid-way once its lock has run out, and dials once', async () => {
    const body = dialBody(alice, '+14155550149');
    const now = clock.now();
    // What a process that crashed after claiming the key leaves: a running record, no call.
    await t.runtime.database.db
      .insertInto('idempotency_keys')
      .values({
        user_id: alice.userId,
        key: 'dial-crashed',
        request_hash: requestHash('POST', '/api/v1/call/dial', body),
        state: 'running',
        locked_until: new Date(now.getTime() + 60_000),
        response_status: null,
        response_body: json(null),
        resource_id: null,
        created_at: now,
      })
      .execute();
    const held = await dial(alice, body, 'dial-crashed');
    expect(held.statusCode).toBe(409);
    expect(held.json()).toMatchObject({ error: 'Conflict', code: 'IDEMPOTENCY_KEY_IN_USE' });
    clock.advance(61_000);
    const before = await countRows('calls', alice.userId);
    const taken = await dial(alice, body, 'dial-crashed');
    expect(taken.statusCode).toBe(200);
    const replay = await dial(alice, body, 'dial-crashed');
    expect(replay.json().callId).toBe(taken.json().callId);
    expect(await countRows('calls', alice.userId)).toBe(before + 1);
  });

  it('creates one batch for a key sent twice, replays its 202 and batchId, and refuses another body with 422', async () => {
    const before = await countRows('batches', alice.userId);
    const body = batchBody(alice, ['+14155550151', '+14155550152']);
    const first = await createBatch(alice, body, 'batch-twice');
    expect(first.statusCode).toBe(202);
    const second = await createBatch(alice, body, 'batch-twice');
    expect(second.statusCode).toBe(202);
    expect(second.headers['idempotent-replayed']).toBe('true');
    expect(second.json()).toEqual(first.json());
    const other = await createBatch(alice, batchBody(alice, ['+14155550153']), 'batch-twice');
    expect(other.statusCode).toBe(422);
    expect(other.json().code).toBe('IDEMPOTENCY_KEY_REUSED');
    expect(await countRows('batches', alice.userId)).toBe(before + 1);
  });

  it('creates one batch for two concurrent requests under one key', async () => {
    const before = await countRows('batches', alice.userId);
    const body = batchBody(alice, ['+14155550161', '+14155550162', '+14155550163']);
    const answers = await Promise.all([
      createBatch(alice, body, 'batch-race'),
      createBatch(alice, body, 'batch-race'),
    ]);
    const ok = answers.filter((res) => res.statusCode === 202);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const res of answers)
      if (res.statusCode !== 202) expect(res.json().code).toBe('IDEMPOTENCY_KEY_IN_USE');
    expect(new Set(ok.map((res) => res.json().batchId)).size).toBe(1);
    expect(await countRows('batches', alice.userId)).toBe(before + 1);
  });

  it('forgets a key after 24 hours: the same key then starts a new batch, and the old record is purged', async () => {
    const first = await createBatch(alice, batchBody(alice, ['+14155550171']), 'batch-day');
    expect(first.statusCode).toBe(202);
    clock.advance(24 * 3_600_000 + 1_000);
    const next = await createBatch(alice, batchBody(alice, ['+14155550172']), 'batch-day');
    expect(next.statusCode).toBe(202);
    expect(next.headers['idempotent-replayed']).toBeUndefined();
    expect(next.json().batchId).not.toBe(first.json().batchId);
    // Every record written before the jump is now older than 24 h; the purge removes them.
    expect(await t.runtime.services.idempotency.purgeExpired()).toBeGreaterThan(0);
    const replay = await createBatch(alice, batchBody(alice, ['+14155550172']), 'batch-day');
    expect(replay.json().batchId).toBe(next.json().batchId);
  });
});
