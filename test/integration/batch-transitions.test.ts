import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BatchLifecycle, type BatchTransactionEvents } from '../../src/services/batch-lifecycle.js';
import { type DomainEvents, EventBus, TransactionBus } from '../../src/services/events.js';
import type { Store } from '../../src/store/index.js';
import { subscribeBatchReactions } from '../../src/wiring/subscribers.js';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { submitBatch } from '../helpers/calls.js';

const HOOK = 'https://hooks.example.com/batch-events';

/**
 * A batch transition and its reactions (issue 23): the webhook is queued in the transaction that
 * changes the status, so a reaction that fails undoes the change and leaves no webhook, and the
 * after-commit reactions run once the change is stored, never for one rolled back. The lifecycle
 * here is built on the runtime's database with the wiring's own subscribers, plus the test's.
 */
describe('batch transitions and their reactions', () => {
  let t: TestApp;
  let store: Store;
  let alice: Account;
  beforeAll(async () => {
    t = await startTestApp();
    store = t.runtime.deps.store;
    alice = await t.createAccount({ minutes: 1000 });
  });
  afterAll(() => t.close());

  /** A batch that waits for its start next year: scheduled once ingested, never dialed here. */
  const scheduledBatch = async (): Promise<string> => {
    const batchId = await submitBatch(t, alice, {
      contacts: [{ phoneNumber: '+14155557001' }, { phoneNumber: '+14155557002' }],
      options: {
        scheduledStartTime: new Date(Date.now() + 365 * 86_400_000).toISOString(),
        webhooks: { onBatchEvent: HOOK },
      },
    });
    await eventually(async () =>
      (await store.batches.getForUser(alice.userId, batchId))?.status === 'scheduled' ? true : undefined,
    );
    return batchId;
  };

  /** A lifecycle with the wiring's batch reactions; `after` hears each after-commit event. */
  const wired = (after: Array<{ batchId: string; status: string | undefined }>) => {
    const events = new EventBus<DomainEvents>({ error: () => {} } as never);
    const reactions = new TransactionBus<BatchTransactionEvents>();
    subscribeBatchReactions(events, reactions, { batchReads: { forget: () => {} } });
    // Reads the batch through the pool: after the commit it sees the change.
    events.on('batch.transitioned', 'test-after-commit', async ({ batchId }) => {
      after.push({ batchId, status: (await store.batches.getForUser(alice.userId, batchId))?.status });
    });
    return { lifecycle: new BatchLifecycle(events, reactions), reactions };
  };

  const pause = (lifecycle: BatchLifecycle, batchId: string) =>
    store.tx(async (repos) => {
      const batch = await repos.batches.lockForUser(alice.userId, batchId);
      if (!batch) throw new Error('no batch');
      return lifecycle.pauseBatch(repos, batch, new Date());
    });

  const deliveries = async (batchId: string) =>
    (await store.webhookDeliveries.list(alice.userId, { batchId }, null, 50)).map(
      (d) => `${d.event} ${d.url}`,
    );

  it('queues the transition webhook with the status change, then tells the after-commit subscribers', async () => {
    const batchId = await scheduledBatch();
    const after: Array<{ batchId: string; status: string | undefined }> = [];
    const { lifecycle } = wired(after);
    await expect(pause(lifecycle, batchId)).resolves.toBe('paused');
    expect((await store.batches.getForUser(alice.userId, batchId))?.status).toBe('paused');
    expect(await deliveries(batchId)).toEqual([`batch.paused ${HOOK}`]);
    expect(after).toEqual([{ batchId, status: 'paused' }]);
  });

  it('a reaction that fails in the transaction undoes the transition: no status change, no webhook, no after-commit event', async () => {
    const batchId = await scheduledBatch();
    const after: Array<{ batchId: string; status: string | undefined }> = [];
    const { lifecycle, reactions } = wired(after);
    reactions.on('batch.transitioned', 'broken', async () => {
      throw new Error('the reaction failed');
    });
    expect(reactions.subscribersOf('batch.transitioned')).toEqual(['batch-webhook', 'broken']);
    await expect(pause(lifecycle, batchId)).rejects.toThrow('the reaction failed');
    expect((await store.batches.getForUser(alice.userId, batchId))?.status).toBe('scheduled');
    // batch-webhook ran before the failing reaction: its row went with the rollback.
    expect(await deliveries(batchId)).toEqual([]);
    expect(after).toEqual([]);
  });

  it("announces the claim's move to processing once, with no webhook; a later claim announces nothing", async () => {
    const batchId = await scheduledBatch();
    const after: Array<{ batchId: string; status: string | undefined }> = [];
    const { lifecycle } = wired(after);
    const claim = (seq: number) =>
      store.tx(async (repos) => {
        await repos.batches.lockStatus(batchId);
        await lifecycle.claimContacts(
          repos,
          { id: batchId, user_id: alice.userId },
          [{ seq, callId: `call_claim_${batchId}_${seq}`, leaseUntil: new Date(Date.now() + 60_000) }],
          new Date(),
        );
      });
    const [first, second] = (await store.tx((repos) => repos.batchContacts.exportPage(batchId, -1, 10))).map(
      (c) => c.seq,
    );
    await claim(first ?? -1);
    expect(after).toEqual([{ batchId, status: 'processing' }]);
    await claim(second ?? -1);
    expect(after).toEqual([{ batchId, status: 'processing' }]);
    const contacts = await store.tx((repos) => repos.batchContacts.exportPage(batchId, -1, 10));
    expect(contacts.map((c) => c.state)).toEqual(['dialing', 'dialing']);
    expect(await deliveries(batchId)).toEqual([]);
  });

  it('a cancel through the API queues batch.cancelled once, in its transaction', async () => {
    const batchId = await scheduledBatch();
    const res = await t.request({
      method: 'POST',
      url: `/api/v1/batch/cancel?batchId=${batchId}`,
      key: alice.key,
    });
    expect(res.statusCode, res.body).toBe(200);
    expect(await deliveries(batchId)).toEqual([`batch.cancelled ${HOOK}`]);
  });
});
