import { Webhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Account, ADMIN_TOKEN, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { Receiver, verifySignatures } from '../helpers/receiver.js';

/**
 * Webhooks end to end with a real local receiver: the spec's payloads for every event, both
 * signatures checked independently, the retry schedule, 410, timeouts, redirects, replay, the
 * delivery log and its tenant isolation. Private addresses are allowed here (the receiver is on
 * 127.0.0.1); the address guard has its own file.
 */
describe('webhooks', () => {
  let t: TestApp;
  let receiver: Receiver;
  let alice: Account;
  let bob: Account;
  const delays = [150, 400, 800];
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startTestApp({
      workers: true,
      env: {
        OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true',
        OUTDIAL_WEBHOOK_RETRY_DELAYS_MS: delays.join(','),
        // Long enough that a busy test process (the receiver shares it) never times an attempt out
        // by accident; the timeout test below waits for it on purpose.
        OUTDIAL_WEBHOOK_TIMEOUT_MS: '1500',
      },
      overrides: { dispatchTickMs: 50 },
    });
    alice = await t.createAccount({ minutes: 10_000 });
    bob = await t.createAccount({ minutes: 10_000 });
  });
  afterEach(() => {
    receiver.respond = () => ({ status: 200 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const secretOf = async (account: Account) =>
    (await t.admin('GET', `/admin/v1/users/${account.userId}/webhook-secret`)).json<{ secret: string }>()
      .secret;
  const createBatch = async (account: Account, body: Record<string, unknown>) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: { agentId: account.agentId, userId: account.userId, ...body },
    });
    expect(res.statusCode, res.body).toBe(202);
    return res.json<{ batchId: string }>().batchId;
  };
  const dial = async (account: Account, to: string, statusCallBackUrl: string) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: account.agentId, statusCallBackUrl },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ callId: string; contactId: string }>();
  };
  const deliveries = async (account: Account, query = '') => {
    const res = await t.request({
      method: 'GET',
      url: `/api/v1/webhooks/deliveries${query}`,
      key: account.key,
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<Array<Record<string, unknown>>>();
  };
  /** The first item of a list a test just waited for (a clear failure if it is empty). */
  const firstOf = <T>(list: T[] | undefined): T => {
    const [item] = list ?? [];
    if (item === undefined) throw new Error('expected at least one item');
    return item;
  };
  const nth = <T>(list: T[], index: number): T => {
    const item = list.at(index);
    if (item === undefined) throw new Error(`expected an item at ${index} of ${list.length}`);
    return item;
  };
  const firstArrival = async (pathname: string, timeoutMs = 5000) =>
    firstOf(
      await eventually(
        async () => (receiver.on(pathname).length > 0 ? receiver.on(pathname) : undefined),
        timeoutMs,
      ),
    );
  const settled = (account: Account, query: string, count: number, timeoutMs = 10_000) =>
    eventually(async () => {
      const list = await deliveries(account, query);
      return list.length >= count && list.every((d) => d.status !== 'pending') ? list : undefined;
    }, timeoutMs);

  it('sends onCallComplete for every call and onBatchComplete once, with the spec payloads, signed', async () => {
    const batchId = await createBatch(alice, {
      name: 'Webhook run',
      contacts: [
        { phoneNumber: '+14155550101', name: 'Ann' },
        { phoneNumber: '+14155550102', name: 'Ben' },
        { phoneNumber: '+14155550001', name: 'Busy Bea' },
      ],
      options: {
        maxCallsPerSecond: 30,
        retryStrategy: { maxAttempts: 1 },
        webhooks: {
          onCallComplete: receiver.url('/calls'),
          onBatchComplete: receiver.url('/batches'),
          onBatchFailed: receiver.url('/failures'),
        },
      },
    });
    // The batch event can come before the last call's: call events wait for their analysis.
    await eventually(
      async () =>
        receiver.on('/batches').length === 1 && receiver.on('/calls').length === 3 ? true : undefined,
      15_000,
    );
    const calls = receiver.on('/calls');
    expect(calls).toHaveLength(3);
    expect(receiver.on('/failures')).toHaveLength(0);
    const secret = await secretOf(alice);
    for (const entry of [...calls, ...receiver.on('/batches')]) {
      expect(entry.headers['content-type']).toBe('application/json');
      expect(verifySignatures(entry, secret)).toEqual({ hex: true, standard: true });
      expect(Math.abs(Number(entry.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    }
    // One webhook-id per event.
    const ids = new Set([...calls, ...receiver.on('/batches')].map((entry) => entry.headers['webhook-id']));
    expect(ids.size).toBe(4);

    const payloads = calls.map((entry) => JSON.parse(entry.body));
    const busy = payloads.find((p) => p.call.phoneNumber === '+14155550001');
    const answered = payloads.find((p) => p.call.phoneNumber === '+14155550101');
    expect(busy).toMatchObject({
      event: 'call.completed',
      success: false,
      call: {
        status: 'BUSY',
        batchId,
        agentId: alice.agentId,
        contactName: 'Busy Bea',
        duration: 0,
        failureSource: 'contact',
      },
    });
    expect(answered).toEqual({
      event: 'call.completed',
      success: true,
      call: {
        id: expect.stringMatching(/^call_/),
        contactId: expect.stringMatching(/^cnt_/),
        agentId: alice.agentId,
        batchId,
        status: 'COMPLETED',
        startTime: expect.any(String),
        endTime: expect.any(String),
        duration: expect.any(Number),
        phoneNumber: '+14155550101',
        contactName: 'Ann',
        transcription: expect.arrayContaining([expect.objectContaining({ role: 'assistant' })]),
        recordingUrl: expect.stringContaining(`/api/v1/calls/${answered.call.id}/recording.wav?token=`),
        // The webhook waits for the post-call analysis, so it carries its results.
        summary: expect.stringMatching(/\S/),
        metricJson: expect.objectContaining({
          intent: expect.any(String),
          sentiment: expect.any(String),
          confidence: expect.any(Number),
          keyPoints: expect.any(Array),
          customerSatisfaction: expect.any(Number),
        }),
        // An AI call's agent side: a simulated call without an LLM holds the canned script, so it
        // has no endedReason, no turns and no tool calls (AI calls: agent-calls and sim-ai-calls).
        endedReason: null,
        // It did not fail: nobody's failure.
        failureSource: null,
        turns: [],
        toolCalls: [],
        latency: null,
      },
      metricSchema: expect.objectContaining({ type: 'object', required: expect.arrayContaining(['intent']) }),
    });

    const batchEvent = JSON.parse(receiver.on('/batches')[0]?.body ?? '{}');
    expect(batchEvent).toEqual({
      event: 'batch.completed',
      batchId,
      agentId: alice.agentId,
      userId: alice.userId,
      statistics: {
        total: 3,
        processed: 3,
        succeeded: 2,
        failed: 1,
        percentComplete: 100,
        successRate: 66.67,
      },
      timestamps: {
        createdAt: expect.any(String),
        startedAt: expect.any(String),
        completedAt: expect.any(String),
      },
    });

    const log = await settled(alice, `?batchId=${batchId}`, 4);
    expect(log).toHaveLength(4);
    expect(log.every((d) => d.status === 'succeeded' && d.attempts === 1 && d.lastStatus === 200)).toBe(true);
    expect(log.filter((d) => d.event === 'call.completed')).toHaveLength(3);
    expect(new Set(log.map((d) => d.id))).toEqual(ids);
  });

  it("sends a single call's statusCallBackUrl the call.completed payload", async () => {
    const { callId, contactId } = await dial(alice, '+14155550155', receiver.url('/single'));
    const entry = await firstArrival('/single');
    expect(verifySignatures(entry, await secretOf(alice))).toEqual({ hex: true, standard: true });
    expect(JSON.parse(entry.body)).toMatchObject({
      event: 'call.completed',
      success: true,
      call: { id: callId, contactId, batchId: null, status: 'COMPLETED', phoneNumber: '+14155550155' },
    });
    const [logged] = await deliveries(alice, `?callId=${callId}`);
    expect(logged).toMatchObject({ callId, event: 'call.completed', url: receiver.url('/single') });
  });

  it('retries a failing receiver after each configured delay, with the same webhook-id, until it answers 2xx', async () => {
    receiver.respond = (request) =>
      receiver.on(request.path).length <= 2 ? { status: 503 } : { status: 204 };
    const { callId } = await dial(alice, '+14155550156', receiver.url('/flaky'));
    const delivery = firstOf(await settled(alice, `?callId=${callId}`, 1));
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 3, lastStatus: 204, lastError: null });
    const attempts = receiver.on('/flaky');
    expect(attempts).toHaveLength(3);
    expect(new Set(attempts.map((a) => a.headers['webhook-id'])).size).toBe(1);
    expect(nth(attempts, 1).at - nth(attempts, 0).at).toBeGreaterThanOrEqual(nth(delays, 0) - 20);
    expect(nth(attempts, 2).at - nth(attempts, 1).at).toBeGreaterThanOrEqual(nth(delays, 1) - 20);
  });

  it('gives up after one try and three retries, then drops the delivery', async () => {
    receiver.respond = () => ({ status: 500 });
    const { callId } = await dial(alice, '+14155550157', receiver.url('/down'));
    const delivery = firstOf(await settled(alice, `?callId=${callId}`, 1));
    expect(delivery).toMatchObject({ status: 'failed', attempts: 4, lastStatus: 500 });
    expect(String(delivery.lastError)).toContain('gave up after 4 attempts');
    expect(receiver.on('/down')).toHaveLength(4);
    await new Promise((resolve) => setTimeout(resolve, nth(delays, -1) + 300));
    expect(receiver.on('/down')).toHaveLength(4);
  });

  it('stops at once on 410 Gone', async () => {
    receiver.respond = () => ({ status: 410 });
    const { callId } = await dial(alice, '+14155550158', receiver.url('/gone'));
    const delivery = firstOf(await settled(alice, `?callId=${callId}`, 1));
    expect(delivery).toMatchObject({ status: 'failed', attempts: 1, lastStatus: 410 });
    expect(receiver.on('/gone')).toHaveLength(1);
  });

  it('counts a receiver that does not answer in time as a failed attempt and retries it', async () => {
    receiver.respond = (request) => (receiver.on(request.path).length === 1 ? 'hang' : { status: 200 });
    const { callId } = await dial(alice, '+14155550159', receiver.url('/slow'));
    const delivery = firstOf(await settled(alice, `?callId=${callId}`, 1));
    expect(delivery).toMatchObject({ status: 'succeeded', attempts: 2, lastStatus: 200 });
    const attempts = receiver.on('/slow');
    expect(attempts).toHaveLength(2);
    // The second attempt waits for the 1.5 s timeout (and then the first retry delay).
    expect(nth(attempts, 1).at - nth(attempts, 0).at).toBeGreaterThanOrEqual(1500);
  });

  it('does not follow redirects, not even to a cloud metadata address', async () => {
    receiver.respond = () => ({
      status: 302,
      headers: { location: 'http://169.254.169.254/latest/meta-data/' },
    });
    const { callId } = await dial(alice, '+14155550161', receiver.url('/moved'));
    const delivery = firstOf(await settled(alice, `?callId=${callId}`, 1));
    // Following the redirect would end in a connect error or a timeout; each attempt saw the 302.
    expect(delivery).toMatchObject({ status: 'failed', attempts: 4, lastStatus: 302 });
    expect(delivery.lastError).toBe('the receiver answered 302; gave up after 4 attempts');
    expect(receiver.on('/moved')).toHaveLength(4);
  });

  it('sends onBatchFailed with INSUFFICIENT_CREDITS when the minutes run out mid-run', async () => {
    const poor = await t.createAccount({ minutes: 2 });
    const batchId = await createBatch(poor, {
      contacts: Array.from({ length: 2 }, (_, i) => ({ phoneNumber: `+1415556${String(1000 + i)}` })),
      options: { maxCallsPerSecond: 1, webhooks: { onBatchFailed: receiver.url('/failed') } },
    });
    // Take the minutes away once the batch is accepted: the dispatcher fails it before dialing.
    await t.admin('POST', `/admin/v1/users/${poor.userId}/credits`, { minutes: -2 });
    const entry = await firstArrival('/failed', 10_000);
    expect(verifySignatures(entry, await secretOf(poor))).toEqual({ hex: true, standard: true });
    expect(JSON.parse(entry.body)).toEqual({
      event: 'batch.failed',
      batchId,
      agentId: poor.agentId,
      error: expect.any(String),
      code: 'INSUFFICIENT_CREDITS',
      timestamp: expect.any(String),
    });
  });

  it('for a day after a rotation, webhook-signature carries the new and the old signature; x-outdial-signature stays one hex value', async () => {
    const old = await secretOf(bob);
    const rotated = await t.admin('POST', `/admin/v1/users/${bob.userId}/webhook-secret/rotate`);
    expect(rotated.statusCode).toBe(200);
    const fresh = await secretOf(bob);
    expect(fresh).not.toBe(old);
    await dial(bob, '+14155550162', receiver.url('/rotated'));
    const entry = await firstArrival('/rotated');
    // The contract's header: one hex HMAC, with the current secret.
    expect(String(entry.headers['x-outdial-signature'])).toMatch(/^[0-9a-f]{64}$/);
    expect(String(entry.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(verifySignatures(entry, fresh)).toEqual({ hex: true, standard: true });
    expect(verifySignatures(entry, old)).toEqual({ hex: false, standard: true });
    // A receiver using the Standard Webhooks library verifies the delivery with either secret.
    const headers = {
      'webhook-id': String(entry.headers['webhook-id']),
      'webhook-timestamp': String(entry.headers['webhook-timestamp']),
      'webhook-signature': String(entry.headers['webhook-signature']),
    };
    for (const secret of [fresh, old]) {
      expect(new Webhook(secret).verify(entry.body, headers)).toMatchObject({ event: 'call.completed' });
    }
    expect(() =>
      new Webhook('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=').verify(entry.body, headers),
    ).toThrow();
    expect(verifySignatures(entry, 'whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=')).toEqual({
      hex: false,
      standard: false,
    });
  });

  it("signs an agent's HTTP tool requests on a call with the call's user's webhook secret", async () => {
    const { callId } = await dial(alice, '+14155550163', receiver.url('/tool-secret'));
    const secrets = await t.runtime.services.webhooks.signingSecretsForCall(callId);
    expect(secrets).toEqual([await secretOf(alice)]);
    expect(secrets).not.toContain(await secretOf(bob));
    expect(await t.runtime.services.webhooks.signingSecretsForCall('call_unknown')).toEqual([]);
  });

  describe('delivery log and replay', () => {
    it('filters by status and pages with a cursor', async () => {
      const failed = await deliveries(alice, '?status=failed');
      expect(failed.length).toBeGreaterThanOrEqual(3);
      expect(failed.every((d) => d.status === 'failed')).toBe(true);
      const first = await t.request({
        method: 'GET',
        url: '/api/v1/webhooks/deliveries?limit=2',
        key: alice.key,
      });
      const cursor = first.headers['x-next-cursor'];
      expect(typeof cursor).toBe('string');
      const second = await deliveries(alice, `?limit=2&cursor=${cursor}`);
      const firstIds = first.json<Array<{ id: string }>>().map((d) => d.id);
      expect(second.map((d) => d.id).some((id) => firstIds.includes(id as string))).toBe(false);
    });

    it('replays a failed delivery with the same webhook-id', async () => {
      const gone = firstOf(
        (await deliveries(alice, '?status=failed&limit=1000')).filter((d) => String(d.url).endsWith('/gone')),
      );
      const before = receiver.on('/gone').length;
      const res = await t.request({
        method: 'POST',
        url: `/api/v1/webhooks/deliveries/${gone.id}/retry`,
        key: alice.key,
      });
      expect(res.statusCode, res.body).toBe(202);
      expect(res.json()).toMatchObject({ id: gone.id, status: 'pending', attempts: 0 });
      const again = await t.request({
        method: 'POST',
        url: `/api/v1/webhooks/deliveries/${gone.id}/retry`,
        key: alice.key,
      });
      // Either still queued (409) or already sent again (202): never a second copy in the queue.
      expect([202, 409]).toContain(again.statusCode);
      await eventually(async () => (receiver.on('/gone').length > before ? true : undefined));
      const replayed = nth(receiver.on('/gone'), -1);
      expect(replayed.headers['webhook-id']).toBe(gone.id);
    });

    it("keeps each user's deliveries to that user", async () => {
      const mine = await deliveries(alice, '?limit=1000');
      const theirs = await deliveries(bob, '?limit=1000');
      expect(mine.length).toBeGreaterThan(0);
      expect(theirs.length).toBeGreaterThan(0);
      const aliceIds = new Set(mine.map((d) => d.id));
      expect(theirs.some((d) => aliceIds.has(d.id))).toBe(false);
      const batchOfAlice = mine.find((d) => d.batchId)?.batchId;
      expect(await deliveries(bob, `?batchId=${batchOfAlice}`)).toEqual([]);
      const retryOthers = await t.request({
        method: 'POST',
        url: `/api/v1/webhooks/deliveries/${firstOf(mine).id}/retry`,
        key: bob.key,
      });
      expect(retryOthers.statusCode).toBe(404);
      const cursorOfOthers = await t.request({
        method: 'GET',
        url: `/api/v1/webhooks/deliveries?cursor=${firstOf(mine).id}`,
        key: bob.key,
      });
      expect(cursorOfOthers.statusCode).toBe(400);
    });

    it('refuses requests without a valid key and bad filters', async () => {
      for (const key of [undefined, 'not-a-key', ADMIN_TOKEN]) {
        const list = await t.request({
          method: 'GET',
          url: '/api/v1/webhooks/deliveries',
          ...(key ? { key } : {}),
        });
        expect(list.statusCode).toBe(401);
        const retry = await t.request({
          method: 'POST',
          url: '/api/v1/webhooks/deliveries/dlv_x/retry',
          ...(key ? { key } : {}),
        });
        expect(retry.statusCode).toBe(401);
      }
      const bad = await t.request({
        method: 'GET',
        url: '/api/v1/webhooks/deliveries?status=lost',
        key: alice.key,
      });
      expect(bad.statusCode).toBe(400);
      expect(bad.json()).toMatchObject({
        error: 'Bad Request',
        details: { fieldErrors: { status: expect.any(Array) } },
      });
      const missing = await t.request({
        method: 'POST',
        url: '/api/v1/webhooks/deliveries/dlv_missing/retry',
        key: alice.key,
      });
      expect(missing.statusCode).toBe(404);
    });
  });
});
