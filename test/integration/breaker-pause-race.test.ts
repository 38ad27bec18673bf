import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedBreaker } from '../../src/domain/breaker.js';
import type { Dependency } from '../../src/domain/dependencies.js';
import type { Clock } from '../../src/ports.js';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { submitBatch } from '../helpers/calls.js';
import { type ChatServer, simulatedAiEnv, startChatServer } from '../helpers/model-servers.js';

/** A clock that moves only when told: the dispatcher's breaker snapshot stays as old as the test wants. */
class HeldClock implements Clock {
  private at = Date.now();
  now(): Date {
    return new Date(this.at);
  }
  advance(ms: number): void {
    this.at += ms;
  }
}

/**
 * `npm run soak -- --outages` found a campaign left paused for good after the trunk came back: the
 * probe closed the breaker and resumed the batch, and a dispatcher whose breaker snapshot (up to a
 * second old) still said open paused it again, with nobody left to resume it. The dispatcher now
 * reads the breaker again after writing such a pause, and resumes the batch when it has closed.
 */
describe(`a pause for a breaker that closed meanwhile (${STORE})`, () => {
  let chat: ChatServer;
  let t: TestApp;
  let account: Account;
  const clock = new HeldClock();

  beforeAll(async () => {
    chat = await startChatServer();
    t = await startTestApp({ env: simulatedAiEnv(chat), overrides: { clock } });
    account = await t.createAccount({ minutes: 100 });
  });
  afterAll(async () => {
    await t?.close();
    await chat?.close();
  });

  const status = async (batchId: string) =>
    (
      await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}`,
        key: account.key,
      })
    ).json<{ status: string; pauseReason: string | null }>();

  it('resumes the batch it paused on a stale snapshot', async () => {
    const dependency: Dependency = { key: `llm:${chat.url}`, kind: 'llm', name: 'llm test-model' };
    const setBreaker = (state: 'open' | 'closed') =>
      t.runtime.deps.store.tx(async (repos) => {
        const breaker = await repos.breakers.lockOrCreate(dependency);
        const now = clock.now();
        await repos.breakers.save(
          state === 'open'
            ? {
                ...breaker,
                state,
                failures: 3,
                openedAt: now,
                nextProbeAt: new Date(now.getTime() + 3_600_000),
              }
            : { ...closedBreaker(dependency), lastSuccessAt: now },
          now,
        );
      });

    await setBreaker('open');
    const batchId = await submitBatch(t, account, {
      contacts: [{ phoneNumber: '+14155550101' }, { phoneNumber: '+14155550102' }],
      options: { maxCallsPerSecond: 1 },
    });
    await eventually(async () =>
      ['pending', 'processing'].includes((await status(batchId)).status) ? true : undefined,
    );

    // A pass with the breaker open pauses the campaign (and reads the breakers into its snapshot).
    await t.runtime.dispatcher.tick();
    expect(await status(batchId)).toMatchObject({ status: 'paused', pauseReason: 'dependency-unavailable' });

    // Another process's probe closes the breaker and resumes the campaign; this process's snapshot
    // is not a second old on its clock, so it still says open.
    await setBreaker('closed');
    expect(await t.runtime.services.batches.resumeForDependency(dependency.key)).toEqual([batchId]);
    const resumed = await status(batchId);
    expect(resumed.status).not.toBe('paused');

    // Its next pass pauses on the stale snapshot, reads the breaker again and resumes the batch.
    await t.runtime.dispatcher.tick();
    expect(await status(batchId)).toMatchObject({ status: resumed.status, pauseReason: null });
  });
});
