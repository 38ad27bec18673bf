import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { json } from '../../src/adapters/postgres/database.js';
import { newId } from '../../src/domain/ids.js';
import type { DialSteps } from '../../src/services/calls/lifecycle.js';
import { type Account, dialStepsOn, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';

type Db = TestApp['runtime']['database']['db'];

/** A contact of the user, as a dial or a batch records it. */
async function insertContact(db: Db, userId: string, phoneNumber: string): Promise<string> {
  const id = newId('cnt');
  await db
    .insertInto('contacts')
    .values({
      id,
      user_id: userId,
      phone_number: phoneNumber,
      name: 'Jordan',
      email: null,
      company: null,
      metadata: json({}),
    })
    .execute();
  return id;
}

/** An ONGOING call row, as CallIntake.dial (or, with a batch, the dispatcher's claim) writes it. */
async function insertOngoingCall(
  db: Db,
  call: {
    account: Account;
    contactId: string;
    phoneNumber: string;
    createdAt: Date;
    provider?: string;
    batch?: { id: string; seq: number };
  },
): Promise<string> {
  const id = newId('call');
  await db
    .insertInto('calls')
    .values({
      id,
      user_id: call.account.userId,
      agent_id: call.account.agentId,
      contact_id: call.contactId,
      batch_id: call.batch?.id ?? null,
      ...(call.batch ? { batch_seq: call.batch.seq } : {}),
      status: 'ONGOING',
      phone_number: call.phoneNumber,
      attempt: 1,
      provider: call.provider ?? 'simulator',
      error: null,
      duration: null,
      transcription: json(null),
      summary: null,
      metric_json: json(null),
      status_callback_url: null,
      created_at: call.createdAt,
      answered_at: null,
      ended_at: null,
    })
    .execute();
  return id;
}

/**
 * What the stale-call sweep does with calls another process placed, read from their shared dial
 * records: nothing while that owner's lease is renewed; once it is gone, a call that never reached
 * the network goes back to the queue (a batch contact, no attempt charged) or is dialed again
 * under its id (a single call), and a cut-off answered call is charged up to the last heartbeat.
 */
describe(`calls of another process, settled from their dial records (${STORE})`, () => {
  let t: TestApp;
  let account: Account;
  const owners: DialSteps[] = [];

  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount({ minutes: 100 });
  });
  afterAll(async () => {
    for (const owner of owners) await owner.close().catch(() => {});
    await t?.close();
  });

  const db = () => t.runtime.database.db;

  /** Another process's records on the same database, with its lease taken. */
  async function anotherProcess(): Promise<DialSteps> {
    const records = dialStepsOn(db());
    await records.start();
    owners.push(records);
    return records;
  }

  /** The process dies: its renewals stop, and its lease ran out `agoMs` ago after a last heartbeat. */
  async function dies(records: DialSteps, lastHeartbeat: Date): Promise<void> {
    await records.close();
    await sql`
      update dial_owners set renewed_at = ${lastHeartbeat}, lease_until = ${new Date(lastHeartbeat.getTime() + 15_000)}
      where id = ${records.owner}`.execute(db());
  }

  let numbers = 0;
  /** An ONGOING single call, as CallIntake.dial records it, to a number that answers in the simulator. */
  async function ongoingCall(provider: string, createdAt: Date): Promise<string> {
    numbers++;
    const phoneNumber = `+1415555${String(2000 + numbers).padStart(4, '0')}`;
    const contactId = await insertContact(db(), account.userId, phoneNumber);
    return insertOngoingCall(db(), { account, contactId, phoneNumber, createdAt, provider });
  }

  const callRow = (callId: string) =>
    db().selectFrom('calls').selectAll().where('id', '=', callId).executeTakeFirst();

  it("leaves a call alone while its owner's lease is renewed, however long it has run", async () => {
    const owner = await anotherProcess();
    const tenMinutesAgo = new Date(Date.now() - 10 * 60_000);
    const callId = await ongoingCall('simulator', tenMinutesAgo);
    expect(await owner.send(callId, 'simulator', tenMinutesAgo)).toBe(true);
    await t.runtime.reconciler.reconcileStale();
    expect((await callRow(callId))?.status).toBe('ONGOING');
    expect(t.provider.dials.map((dial) => dial.callId)).not.toContain(callId);
    // The owner dies: its call is rebuilt from the moment it went out, and ends.
    await dies(owner, new Date(Date.now() - 20_000));
    await t.runtime.reconciler.reconcileStale();
    expect((await callRow(callId))?.status).not.toBe('ONGOING');
  });

  it('settles a call of this process whose end report was lost', async () => {
    const lost = await ongoingCall('simulator', new Date(Date.now() - 10 * 60_000));
    expect(await t.runtime.deps.dials.send(lost, 'simulator', new Date(Date.now() - 10 * 60_000))).toBe(true);
    await t.runtime.reconciler.reconcileStale();
    expect((await callRow(lost))?.status).toBe('COMPLETED');
    expect(t.provider.dials.map((dial) => dial.callId)).not.toContain(lost);
  });

  it('takes up a call of this process left waiting when its dial failed, once its provider does not hold it', async () => {
    const stuck = await ongoingCall('simulator', new Date(Date.now() - 10 * 60_000));
    expect(await t.runtime.deps.dials.hold(stuck, 'simulator')).toBe(true);
    await t.runtime.reconciler.reconcileStale();
    expect((await callRow(stuck))?.status).toBe('ONGOING'); // recorded a moment ago: its slot may be near
    await sql`update dials set created_at = ${new Date(Date.now() - 10 * 60_000)} where call_id = ${stuck}`.execute(
      db(),
    );
    await t.runtime.reconciler.reconcileStale();
    await eventually(async () => ((await callRow(stuck))?.status === 'COMPLETED' ? true : undefined), 5000);
    expect(t.provider.dials.filter((dial) => dial.callId === stuck)).toHaveLength(1);
  });

  it("dials a gone owner's single call that never went out again, under its same id, once", async () => {
    const owner = await anotherProcess();
    const callId = await ongoingCall('simulator', new Date(Date.now() - 60_000));
    expect(await owner.hold(callId, 'simulator')).toBe(true);
    await dies(owner, new Date(Date.now() - 20_000));
    await Promise.all([t.runtime.reconciler.reconcileStale(), t.runtime.reconciler.reconcileStale()]);
    await eventually(async () => ((await callRow(callId))?.status === 'COMPLETED' ? true : undefined), 5000);
    expect(t.provider.dials.filter((dial) => dial.callId === callId)).toHaveLength(1);
    const record = await t.runtime.deps.dials.find(callId);
    expect(record).toMatchObject({ owner: t.runtime.deps.dials.owner, state: 'sent' });
    // The recorded start is when it really went out, not when it was first recorded.
    const started = (await callRow(callId))?.created_at;
    expect(started?.getTime()).toBe(record?.sentAt?.getTime());
  });

  it("records a gone owner's answered call up to its last heartbeat as a failure of ours: its time kept, nothing charged", async () => {
    const owner = await anotherProcess();
    const before = await db()
      .selectFrom('users')
      .select('available_minutes')
      .where('id', '=', account.userId)
      .executeTakeFirstOrThrow();
    const sentAt = new Date(Date.now() - 120_000);
    const answeredAt = new Date(sentAt.getTime() + 5_000);
    const callId = await ongoingCall('sip', sentAt);
    expect(await owner.send(callId, 'sip', sentAt)).toBe(true);
    await owner.answered(callId, answeredAt);
    // Its last heartbeat came 75 s after the answer; then it was killed.
    await dies(owner, new Date(answeredAt.getTime() + 75_000));
    await t.runtime.reconciler.reconcileStale();
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/call/check-status?callId=${callId}`,
      key: account.key,
    });
    expect(res.statusCode).toBe(200);
    const call = res.json().data;
    expect(call).toMatchObject({
      status: 'FAILED',
      duration: 75,
      sipStatusCode: 200,
      endedReason: 'error',
      failureSource: 'service',
    });
    expect(call.error).toContain('cut off after 75 s');
    const row = await callRow(callId);
    expect(row?.answered_at?.getTime()).toBe(answeredAt.getTime());
    // The process that held it was cut off: ours, so the carrier's 75 s are kept and not charged.
    expect(row?.minutes_charged).toBe(0);
    const after = await db()
      .selectFrom('users')
      .select('available_minutes')
      .where('id', '=', account.userId)
      .executeTakeFirstOrThrow();
    expect(after.available_minutes).toBe(before.available_minutes);
  });

  it("settles a gone owner's web call as cut off at its last heartbeat, not charged, and never dials it", async () => {
    const owner = await anotherProcess();
    const { calls } = t.runtime.services;
    const { request } = await calls.openWebCall(account.userId, account.agentId, 'web');
    const callId = request.callId;
    // Opened by the other process 2 minutes ago (the browser answered at once); it was killed 40 s
    // into the call, the browser still on the line.
    const answeredAt = new Date(Date.now() - 120_000);
    await sql`update calls set created_at = ${answeredAt}, answered_at = ${answeredAt} where id = ${callId}`.execute(
      db(),
    );
    await sql`update dials set owner = ${owner.owner}, created_at = ${answeredAt}, sent_at = ${answeredAt},
      answered_at = ${answeredAt} where call_id = ${callId}`.execute(db());
    await dies(owner, new Date(answeredAt.getTime() + 40_000));
    await t.runtime.reconciler.reconcileStale();
    await t.runtime.reconciler.reconcileStale();
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/call/check-status?callId=${callId}`,
      key: account.key,
    });
    expect(res.json().data).toMatchObject({
      status: 'FAILED',
      channel: 'web',
      duration: 40,
      endedReason: 'error',
      failureSource: 'service',
    });
    expect(res.json().data.error).toContain('cut off after 40 s');
    const row = await callRow(callId);
    expect(row?.minutes_charged).toBe(0);
    // Never dialed again: no other call of the browser's contact, and no web call held here.
    const browserCalls = await db()
      .selectFrom('calls')
      .select('id')
      .where('user_id', '=', account.userId)
      .where('channel', '=', 'web')
      .execute();
    expect(browserCalls.map((call) => call.id)).toEqual([callId]);
    expect(t.runtime.services.webCalls.activeCalls).toBe(0);
  });

  it("puts a gone owner's batch call that never went out back in the queue, no attempt charged", async () => {
    const submitted = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: {
        agentId: account.agentId,
        userId: account.userId,
        contacts: [{ phoneNumber: '+14155553001', name: 'Sam' }],
        options: { scheduledStartTime: '2099-01-01T00:00:00Z', retryStrategy: { maxAttempts: 1 } },
      },
    });
    expect(submitted.statusCode).toBe(202);
    const batchId: string = submitted.json().batchId;
    await eventually(async () => {
      const batch = await db()
        .selectFrom('batches')
        .select('status')
        .where('id', '=', batchId)
        .executeTakeFirst();
      return batch?.status === 'scheduled' ? true : undefined;
    }, 5000);
    const contact = await db()
      .selectFrom('batch_contacts')
      .selectAll()
      .where('batch_id', '=', batchId)
      .executeTakeFirstOrThrow();
    // A worker claimed it (the call row, its waiting record, the contact dialing) and died
    // while the call waited for its slot or its trunk.
    const owner = await anotherProcess();
    const callId = await insertOngoingCall(db(), {
      account,
      contactId: contact.contact_id,
      phoneNumber: contact.phone_number,
      createdAt: new Date(),
      batch: { id: batchId, seq: contact.seq },
    });
    await db()
      .updateTable('batch_contacts')
      .set({ state: 'dialing', attempts: 1, call_id: callId })
      .where('batch_id', '=', batchId)
      .execute();
    expect(await owner.hold(callId, 'simulator')).toBe(true);
    await dies(owner, new Date(Date.now() - 20_000));

    await t.runtime.reconciler.reconcileStale();
    expect(await callRow(callId)).toBeUndefined();
    expect(await t.runtime.deps.dials.find(callId)).toMatchObject({ state: 'returned' });
    const queued = await db()
      .selectFrom('batch_contacts')
      .selectAll()
      .where('batch_id', '=', batchId)
      .executeTakeFirstOrThrow();
    expect(queued).toMatchObject({ state: 'queued', attempts: 0, call_id: null });

    // Dialed at last, its one attempt whole: the contact is reached, not failed.
    await db().updateTable('batches').set({ scheduled_start_at: null }).where('id', '=', batchId).execute();
    await db()
      .updateTable('batch_contacts')
      .set({ next_attempt_at: new Date() })
      .where('batch_id', '=', batchId)
      .execute();
    await t.runtime.dispatcher.tick();
    const done = await eventually(async () => {
      const row = await db()
        .selectFrom('batch_contacts')
        .selectAll()
        .where('batch_id', '=', batchId)
        .executeTakeFirstOrThrow();
      return row.state === 'done' ? row : undefined;
    }, 5000);
    expect(done).toMatchObject({ attempts: 1, outcome: 'COMPLETED' });
    const dialed = t.provider.dials.filter((dial) => dial.to === '+14155553001');
    expect(dialed).toHaveLength(1);
    expect(dialed[0]?.callId).not.toBe(callId);
  });
});

describe(`the sweep's page with many long calls of its own (${STORE})`, () => {
  let t: TestApp;
  let records: DialSteps | undefined;
  beforeAll(async () => {
    // Ten-minute conversations: this process's calls stay up, as long SIP calls do.
    t = await startTestApp({ env: { OUTDIAL_SIM_TALK_MS: '600000' } });
  });
  afterAll(async () => {
    await records?.close().catch(() => {});
    await t?.close();
  });

  it("reaches a gone owner's call even when its own long calls would fill the page", async () => {
    const account = await t.createAccount({ minutes: 100 });
    const db = t.runtime.database.db;
    const own: string[] = [];
    for (const to of ['+14155554001', '+14155554002', '+14155554003']) {
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: account.key,
        payload: { to, agentConfigId: account.agentId },
      });
      expect(res.statusCode).toBe(200);
      own.push(res.json<{ callId: string }>().callId);
    }
    // Up for two minutes already: each sweep checks them for a lost end, and they are still up here.
    const twoMinutesAgo = new Date(Date.now() - 120_000);
    await sql`update calls set created_at = ${twoMinutesAgo} where id = any(${own}::text[])`.execute(db);
    await sql`update dials set sent_at = ${twoMinutesAgo}, created_at = ${twoMinutesAgo} where call_id = any(${own}::text[])`.execute(
      db,
    );
    // Another process recorded a single call and died before it went out.
    records = dialStepsOn(db);
    await records.start();
    const contactId = await insertContact(db, account.userId, '+14155554009');
    const orphan = await insertOngoingCall(db, {
      account,
      contactId,
      phoneNumber: '+14155554009',
      createdAt: new Date(),
    });
    expect(await records.hold(orphan, 'simulator')).toBe(true);
    await records.close();
    await sql`update dial_owners set lease_until = ${new Date(Date.now() - 5_000)} where id = ${records.owner}`.execute(
      db,
    );

    // A page of three: the dead worker's call comes before this process's own long calls.
    await t.runtime.reconciler.reconcileStale({ limit: 3 });
    expect(t.provider.dials.filter((dial) => dial.callId === orphan)).toHaveLength(1);
    for (const callId of own) {
      const row = await db.selectFrom('calls').select('status').where('id', '=', callId).executeTakeFirst();
      expect(row?.status).toBe('ONGOING');
    }
  });
});
