import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DatabaseHandle } from '../../src/adapters/postgres/database.js';
import { migrate } from '../../src/adapters/postgres/migrate.js';
import { pgStore } from '../../src/adapters/postgres/store.js';
import { newId } from '../../src/domain/ids.js';
import { type CallTransactionEvents, DialSteps } from '../../src/services/calls/lifecycle.js';
import { type CallEvents, type DomainEvents, EventBus, TransactionBus } from '../../src/services/events.js';
import type { CallProgress } from '../../src/store/index.js';
import { createTestStorage, STORE, type TestStorage } from '../helpers/app.js';

/**
 * The dial records' steps (`DialSteps`, services/calls/lifecycle.ts) on the real database: what
 * they announce on the after-commit bus, and what their reactions (`calls.progressing`) hear in their transactions.
 */
describe(`dial steps and their announcements (${STORE})`, () => {
  let storage: TestStorage;
  let handle: DatabaseHandle;
  const heard: Array<{ event: keyof CallEvents; callId: string; at: Date }> = [];
  const progress: CallProgress[] = [];
  let steps: DialSteps;
  let other: DialSteps;

  beforeAll(async () => {
    storage = await createTestStorage();
    handle = await storage.open();
    await migrate(handle);
    const store = pgStore(handle.db, STORE);
    const events = new EventBus<DomainEvents>(pino({ level: 'silent' }));
    events.on('call.sent', 'test', ({ callId, at }) => void heard.push({ event: 'call.sent', callId, at }));
    events.on(
      'call.answered',
      'test',
      ({ callId, at }) => void heard.push({ event: 'call.answered', callId, at }),
    );
    const reactions = new TransactionBus<CallTransactionEvents>();
    reactions.on(
      'calls.progressing',
      'test',
      async ({ progress: changes }) => void progress.push(...changes),
    );
    steps = new DialSteps({ store, events, reactions });
    other = new DialSteps({ store, events });
    await steps.start();
    await other.start();
  }, 60_000);

  afterAll(async () => {
    await other?.close().catch(() => {});
    await steps?.close().catch(() => {});
    await storage?.dispose();
  });

  const of = (callId: string) => heard.filter((entry) => entry.callId === callId);

  it('announces call.answered once for a call answered twice, with the first answer', async () => {
    const callId = newId('call');
    const sentAt = new Date(Date.now() - 10_000);
    expect(await steps.send(callId, 'sip', sentAt)).toBe(true);
    const first = new Date(sentAt.getTime() + 3_000);
    await steps.answered(callId, first);
    await steps.answered(callId, new Date(first.getTime() + 2_000));
    // Without listeners for its progress (the one-statement path), a repeat is still no news.
    await steps.answered(callId, new Date(first.getTime() + 4_000), false);
    await expect.poll(() => of(callId).length).toBe(2);
    expect(of(callId)).toEqual([
      { event: 'call.sent', callId, at: sentAt },
      { event: 'call.answered', callId, at: first },
    ]);
    expect(progress.filter((change) => change.callId === callId)).toEqual([
      { kind: 'started', callId, at: sentAt },
      { kind: 'answered', callId, at: first },
    ]);
    expect((await steps.find(callId))?.answeredAt?.getTime()).toBe(first.getTime());
  });

  it('announces call.answered without listeners for the call progress too, once', async () => {
    const callId = newId('call');
    const sentAt = new Date(Date.now() - 5_000);
    expect(await steps.send(callId, 'simulator', sentAt, false)).toBe(true);
    const answeredAt = new Date(sentAt.getTime() + 1_000);
    await steps.answered(callId, answeredAt, false);
    await steps.answered(callId, answeredAt, false);
    await expect.poll(() => of(callId).length).toBe(2);
    expect(of(callId).map((entry) => entry.event)).toEqual(['call.sent', 'call.answered']);
    expect(progress.filter((change) => change.callId === callId)).toEqual([]);
  });

  it('announces each call of a group sent in one turn, and none that was not ours to send', async () => {
    const ids = [newId('call'), newId('call'), newId('call')];
    const taken = newId('call');
    expect(await other.hold(taken, 'sip')).toBe(true);
    const at = new Date();
    const results = await Promise.all([...ids, taken].map((callId) => steps.send(callId, 'sip', at, false)));
    expect(results).toEqual([true, true, true, false]);
    await expect.poll(() => ids.filter((callId) => of(callId).length === 1).length).toBe(3);
    expect(of(taken)).toEqual([]);
    // Another process's call is not ours to answer either: nothing is kept, nothing announced.
    await steps.answered(taken, new Date());
    expect((await other.find(taken))?.answeredAt).toBeNull();
    expect(of(taken)).toEqual([]);
  });
});
