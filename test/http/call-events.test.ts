import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { type Received, Receiver } from '../helpers/receiver.js';

/**
 * The call and batch events of issue 16 with the simulator and a real receiver: call.started and
 * call.answered (per batch with options.webhooks.onCallEvent, per single call with
 * statusCallBackEvents), batch.cancelled, each sent once, verified with the Standard Webhooks
 * library and matching the OpenAPI document's `webhooks`; and the order batch.completed and the
 * last call.completed are queued in.
 */
describe('call and batch events', () => {
  let t: TestApp;
  let receiver: Receiver;
  let alice: Account;
  let bob: Account;
  let doc: {
    webhooks: Record<string, { post: { requestBody: { content: Record<string, { schema: object }> } } }>;
  };
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true', OUTDIAL_SIM_TALK_MS: '300' },
      overrides: { dispatchTickMs: 50 },
    });
    alice = await t.createAccount({ minutes: 10_000 });
    bob = await t.createAccount({ minutes: 10_000 });
    doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const secretOf = async (account: Account) =>
    (await t.admin('GET', `/admin/v1/users/${account.userId}/webhook-secret`)).json<{ secret: string }>()
      .secret;
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats.default(ajv);
  /** Verifies a delivery as a receiver would, and checks its body against the documented payload. */
  const verified = async (entry: Received, account: Account) => {
    const payload = new Webhook(await secretOf(account)).verify(entry.body, {
      'webhook-id': String(entry.headers['webhook-id']),
      'webhook-timestamp': String(entry.headers['webhook-timestamp']),
      'webhook-signature': String(entry.headers['webhook-signature']),
    }) as { event: string };
    const schema = doc.webhooks[payload.event]?.post.requestBody.content['application/json']?.schema;
    expect(schema, payload.event).toBeDefined();
    const validate = ajv.compile(schema as object);
    expect(validate(payload), JSON.stringify(validate.errors)).toBe(true);
    return payload;
  };
  const bodies = (path: string) =>
    receiver.on(path).map((entry) => JSON.parse(entry.body) as Record<string, unknown> & { event: string });
  const eventsOf = (path: string, callId: string) =>
    bodies(path)
      .filter((body) => (body.call as { id?: string } | undefined)?.id === callId)
      .map((body) => body.event)
      .sort();
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
  const dial = async (account: Account, payload: Record<string, unknown>) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { agentConfigId: account.agentId, ...payload },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ callId: string }>().callId;
  };
  const deliveries = async (account: Account, query: string) =>
    (await t.request({ method: 'GET', url: `/api/v1/webhooks/deliveries?${query}`, key: account.key })).json<
      Array<{ id: string; event: string; callId: string | null; status: string; createdAt: string }>
    >();
  const batchDone = (account: Account, batchId: string) =>
    eventually(async () => {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}`,
        key: account.key,
      });
      return res.json().status === 'completed' ? true : undefined;
    }, 15_000);
  const settled = (account: Account, query: string) =>
    eventually(async () => {
      const list = await deliveries(account, query);
      return list.length > 0 && list.every((d) => d.status === 'succeeded') ? list : undefined;
    }, 15_000);

  it('sends onCallEvent call.started for every call of a batch and call.answered for those answered, once each, signed and as documented', async () => {
    const batchId = await createBatch(alice, {
      contacts: [
        { phoneNumber: '+14155550191', name: 'Ada' },
        { phoneNumber: '+14155550001', name: 'Busy' },
      ],
      options: {
        // The busy line is not tried again: the batch ends with its first attempt.
        retryStrategy: { maxAttempts: 1 },
        webhooks: {
          onCallEvent: receiver.url('/batch-events'),
          onCallComplete: receiver.url('/batch-complete'),
        },
      },
    });
    await batchDone(alice, batchId);
    const calls = await eventually(async () => {
      const list = (await deliveries(alice, `batchId=${batchId}`)).filter(
        (d) => d.event === 'call.completed',
      );
      return list.length === 2 ? list : undefined;
    }, 15_000);
    await settled(alice, `batchId=${batchId}`);
    const status = (
      await t.request({ method: 'GET', url: `/api/v1/status/batch?batchId=${batchId}`, key: alice.key })
    ).json<{ calls: Array<{ callId: string; phoneNumber: string }> }>();
    const callOf = (phone: string) =>
      status.calls.find((call) => call.phoneNumber === phone)?.callId as string;
    const answered = callOf('+14155550191');
    const busy = callOf('+14155550001');
    expect(calls.map((d) => d.callId).sort()).toEqual([answered, busy].sort());

    expect(eventsOf('/batch-events', answered)).toEqual(['call.answered', 'call.started']);
    expect(eventsOf('/batch-events', busy)).toEqual(['call.started']);
    // onCallEvent hears only of starts and answers; the ends go to onCallComplete as before.
    expect(bodies('/batch-events').filter((b) => b.event === 'call.completed')).toEqual([]);
    expect(eventsOf('/batch-complete', answered)).toEqual(['call.completed']);

    for (const entry of receiver.on('/batch-events')) await verified(entry, alice);
    const of = (event: string) =>
      bodies('/batch-events').find(
        (b) => b.event === event && (b.call as { id: string }).id === answered,
      ) as unknown as { timestamp: string; call: Record<string, unknown> };
    const started = of('call.started');
    const answer = of('call.answered');
    expect(started.call).toEqual({
      id: answered,
      contactId: expect.stringMatching(/^cnt_/),
      agentId: alice.agentId,
      batchId,
      phoneNumber: '+14155550191',
      contactName: 'Ada',
      startTime: started.timestamp,
      answeredAt: null,
    });
    expect(answer.call.answeredAt).toBe(answer.timestamp);
    expect(Date.parse(answer.timestamp)).toBeGreaterThanOrEqual(Date.parse(started.timestamp));
    // The same times as the call's own record.
    const persistent = (
      await t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${answered}`, key: alice.key })
    ).json<{ data: { createdAt: string } }>();
    expect(persistent.data.createdAt).toBe(started.timestamp);
  });

  it('sends a single call the events its statusCallBackEvents ask for; without them, call.completed only', async () => {
    const all = await dial(alice, {
      to: '+14155550192',
      statusCallBackUrl: receiver.url('/single'),
      statusCallBackEvents: ['call.started', 'call.answered', 'call.completed'],
    });
    const byDefault = await dial(alice, { to: '+14155550193', statusCallBackUrl: receiver.url('/single') });
    const answeredOnly = await dial(alice, {
      to: '+14155550194',
      statusCallBackUrl: receiver.url('/single'),
      statusCallBackEvents: ['call.answered'],
    });
    await eventually(async () => (eventsOf('/single', all).length === 3 ? true : undefined), 15_000);
    await eventually(async () => (eventsOf('/single', byDefault).length === 1 ? true : undefined), 15_000);
    await eventually(async () => (eventsOf('/single', answeredOnly).length === 1 ? true : undefined), 15_000);
    // Every call ended and its deliveries are all out: nothing more can come.
    for (const callId of [all, byDefault, answeredOnly]) await settled(alice, `callId=${callId}`);
    expect(eventsOf('/single', all)).toEqual(['call.answered', 'call.completed', 'call.started']);
    expect(eventsOf('/single', byDefault)).toEqual(['call.completed']);
    expect(eventsOf('/single', answeredOnly)).toEqual(['call.answered']);
    for (const entry of receiver.on('/single')) await verified(entry, alice);
    expect((await deliveries(alice, `callId=${answeredOnly}`)).map((d) => d.event)).toEqual([
      'call.answered',
    ]);
    // Another user's key sees none of them.
    expect(await deliveries(bob, `callId=${all}`)).toEqual([]);
  });

  it('sends a single call that is not answered call.started and, when asked, call.completed, never call.answered', async () => {
    const callId = await dial(alice, {
      to: '+14155550002',
      statusCallBackUrl: receiver.url('/unanswered'),
      statusCallBackEvents: ['call.started', 'call.answered', 'call.completed'],
    });
    await eventually(async () => (eventsOf('/unanswered', callId).length === 2 ? true : undefined), 15_000);
    await settled(alice, `callId=${callId}`);
    expect(eventsOf('/unanswered', callId)).toEqual(['call.completed', 'call.started']);
  });

  it('sends batch.cancelled to onBatchEvent, else onBatchComplete, and nowhere without either', async () => {
    const later = new Date(Date.now() + 3_600_000).toISOString();
    const contacts = [
      { phoneNumber: '+14155550195', name: 'A' },
      { phoneNumber: '+14155550196', name: 'B' },
    ];
    const cancel = async (batchId: string) => {
      const res = await t.request({
        method: 'POST',
        url: `/api/v1/batch/cancel?batchId=${batchId}`,
        key: alice.key,
      });
      expect(res.statusCode, res.body).toBe(200);
      return res.json<{ cancelledJobs: number }>();
    };
    const ready = (batchId: string) =>
      eventually(async () => {
        const res = await t.request({
          method: 'GET',
          url: `/api/v1/batch/check-status?batchId=${batchId}`,
          key: alice.key,
        });
        return res.json().status === 'scheduled' ? true : undefined;
      });
    const toEvent = await createBatch(alice, {
      contacts,
      options: {
        scheduledStartTime: later,
        webhooks: { onBatchEvent: receiver.url('/events'), onBatchComplete: receiver.url('/done') },
      },
    });
    const toComplete = await createBatch(alice, {
      contacts,
      options: { scheduledStartTime: later, webhooks: { onBatchComplete: receiver.url('/done') } },
    });
    const silent = await createBatch(alice, { contacts, options: { scheduledStartTime: later } });
    for (const batchId of [toEvent, toComplete, silent]) await ready(batchId);
    const reply = await cancel(toEvent);
    await cancel(toComplete);
    await cancel(silent);
    const arrived = await eventually(async () => {
      const events = bodies('/events').filter((b) => b.batchId === toEvent);
      const done = bodies('/done').filter((b) => b.batchId === toComplete);
      return events.length === 1 && done.length === 1 ? { events, done } : undefined;
    }, 15_000);
    expect(arrived.events[0]).toEqual({
      event: 'batch.cancelled',
      batchId: toEvent,
      agentId: alice.agentId,
      userId: alice.userId,
      status: 'cancelled',
      cancelledJobs: reply.cancelledJobs,
      timestamp: expect.any(String),
    });
    expect(reply.cancelledJobs).toBe(2);
    expect(arrived.done[0]?.event).toBe('batch.cancelled');
    expect(bodies('/done').filter((b) => b.batchId === toEvent)).toEqual([]);
    expect(await deliveries(alice, `batchId=${silent}`)).toEqual([]);
    for (const entry of [...receiver.on('/events'), ...receiver.on('/done')]) await verified(entry, alice);
  });

  it("queues batch.completed before the last call's call.completed when that call has a transcript (sent after its analysis), after it otherwise", async () => {
    const order = async (phoneNumber: string) => {
      const batchId = await createBatch(alice, {
        contacts: [{ phoneNumber, name: 'Last' }],
        options: {
          retryStrategy: { maxAttempts: 1 },
          webhooks: { onCallComplete: receiver.url('/order'), onBatchComplete: receiver.url('/order') },
        },
      });
      const list = await eventually(async () => {
        const found = await deliveries(alice, `batchId=${batchId}`);
        return found.length === 2 ? found : undefined;
      }, 15_000);
      // The log is newest first: reversed, it is the order the events were queued in.
      return list.reverse().map((d) => d.event);
    };
    // An answered call has a transcript: its call.completed waits for the post-call analysis.
    expect(await order('+14155550197')).toEqual(['batch.completed', 'call.completed']);
    // A busy line has none: its call.completed is queued with the batch's end, first.
    expect(await order('+14155550001')).toEqual(['call.completed', 'batch.completed']);
  });

  describe('bad input', () => {
    it('refuses an unknown statusCallBackEvents entry, naming the field', async () => {
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/call/dial',
        key: alice.key,
        payload: {
          agentConfigId: alice.agentId,
          to: '+14155550198',
          statusCallBackUrl: receiver.url('/x'),
          statusCallBackEvents: ['call.ended'],
        },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toContain('statusCallBackEvents');
    });

    it('refuses an empty or repeated statusCallBackEvents', async () => {
      for (const statusCallBackEvents of [[], ['call.started', 'call.started'], 'call.started']) {
        const res = await t.request({
          method: 'POST',
          url: '/api/v1/call/dial',
          key: alice.key,
          payload: { agentConfigId: alice.agentId, to: '+14155550198', statusCallBackEvents },
        });
        expect(res.statusCode, JSON.stringify(statusCallBackEvents)).toBe(400);
        expect(res.json().message).toContain('statusCallBackEvents');
      }
    });

    it('refuses an onCallEvent that is not an http(s) URL, naming the field', async () => {
      for (const onCallEvent of [
        'ftp://hooks.example.com/x',
        'not a url',
        'http://user:pw@hooks.example.com/',
      ]) {
        const res = await t.request({
          method: 'POST',
          url: '/api/v1/batch',
          key: alice.key,
          payload: {
            agentId: alice.agentId,
            userId: alice.userId,
            contacts: [{ phoneNumber: '+14155550199', name: 'X' }],
            options: { webhooks: { onCallEvent } },
          },
        });
        expect(res.statusCode, onCallEvent).toBe(400);
        expect(res.json().message, onCallEvent).toContain('onCallEvent');
      }
    });
  });
});
