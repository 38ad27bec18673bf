import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { scriptFor } from '../../src/adapters/voice/simulator-script.js';
import { type Account, ADMIN_TOKEN, eventually, startTestApp, type TestApp } from '../helpers/app.js';

/** Post-call analysis through the API: automatic after each call, create-summary and get-metric. */
describe('call analysis endpoints', () => {
  let t: TestApp;
  let alice: Account;
  let bob: Account;
  beforeAll(async () => {
    t = await startTestApp({ workers: true });
    alice = await t.createAccount({ minutes: 1000 });
    bob = await t.createAccount({ minutes: 1000 });
  });
  afterAll(() => t.close());

  const dial = async (account: Account, to: string, agentId = account.agentId) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: agentId, callerDetails: { name: 'Jordan' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ callId: string; contactId: string }>();
  };
  const metrics = (account: Account, query: Record<string, string>, path = '/api/v1/call/get-metric') =>
    t.request({ method: 'GET', url: `${path}?${new URLSearchParams(query).toString()}`, key: account.key });
  const analysed = (account: Account, callId: string, contactId: string, agentId = account.agentId) =>
    eventually(async () => {
      const res = await metrics(account, { callId, agentId, contactId, userId: account.userId });
      const body = res.json();
      return body.call?.summary ? body : undefined;
    }, 10_000);

  it('analyses every ended call with a conversation on its own, and get-metric serves it', async () => {
    const number = '+14155550123';
    const { callId, contactId } = await dial(alice, number);
    const body = await analysed(alice, callId, contactId);
    const expected = {
      interested: 'interested',
      not_interested: 'not_interested',
      callback: 'callback_requested',
      do_not_call: 'do_not_call',
    }[scriptFor(number)];
    expect(body).toEqual({
      success: true,
      call: {
        id: callId,
        contactId,
        agentId: alice.agentId,
        status: 'COMPLETED',
        startTime: expect.any(String),
        endTime: expect.any(String),
        duration: expect.any(Number),
        phoneNumber: number,
        contactName: 'Jordan',
        transcription: expect.arrayContaining([expect.objectContaining({ role: 'user' })]),
        summary: expect.stringMatching(/\S/),
        metricJson: {
          intent: expected,
          sentiment: expect.stringMatching(/^(positive|neutral|negative)$/),
          confidence: expect.any(Number),
          keyPoints: expect.any(Array),
          customerSatisfaction: expect.any(Number),
        },
        // An AI call's agent side: a simulated call without an LLM holds the canned script, so it
        // has no endedReason, no turns and no tool calls (AI calls: agent-calls and sim-ai-calls).
        endedReason: null,
        failureSource: null,
        turns: [],
        toolCalls: [],
        latency: null,
      },
      metricSchema: expect.objectContaining({
        type: 'object',
        properties: expect.objectContaining({ intent: expect.objectContaining({ enum: expect.any(Array) }) }),
      }),
    });
    expect(body.call.metricJson.confidence).toBeGreaterThan(0);
    expect(body.call.metricJson.confidence).toBeLessThanOrEqual(1);

    // The deprecated path answers the same, marked as such.
    const legacy = await metrics(
      alice,
      { callId, agentId: alice.agentId, contactId },
      '/api/private/call/get-metric',
    );
    expect(legacy.statusCode).toBe(200);
    expect(legacy.headers.deprecation).toMatch(/^@\d+$/);
    expect(legacy.json().call.summary).toBe(body.call.summary);

    // create-summary on an analysed call returns the stored summary, whatever transcription it is given.
    const summary = await t.request({
      method: 'POST',
      url: '/api/v1/call/create-summary',
      key: alice.key,
      payload: { callId, transcription: [{ role: 'user', content: 'Never call me again!' }] },
    });
    expect(summary.statusCode, summary.body).toBe(200);
    expect(summary.json()).toEqual({ success: true, summary: body.call.summary, customMetricsProcessed: 0 });
  });

  it('summarises a call with no conversation from the given transcription once, and never again', async () => {
    const { callId, contactId } = await dial(alice, '+14155550001'); // busy: nothing was said
    await eventually(async () => {
      const status = (
        await t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${callId}`, key: alice.key })
      ).json();
      return status.data.status === 'BUSY' ? true : undefined;
    });
    const before = (await metrics(alice, { callId, agentId: alice.agentId, contactId })).json();
    expect(before.call).toMatchObject({ summary: null, metricJson: null });

    const first = await t.request({
      method: 'POST',
      url: '/api/v1/call/create-summary',
      key: alice.key,
      payload: {
        callId,
        transcription: [
          { role: 'assistant', content: 'Hi, this is Ava. Is this a good time?' },
          { role: 'user', content: "I'm driving, can you call me back after five?" },
        ],
      },
    });
    expect(first.statusCode, first.body).toBe(200);
    expect(first.json().summary).toContain('called back');
    const second = await t.request({
      method: 'POST',
      url: '/api/v1/call/create-summary',
      key: alice.key,
      payload: { callId, transcription: [{ role: 'user', content: 'Yes, sign me up!' }] },
    });
    expect(second.json()).toEqual(first.json());
    const after = (await metrics(alice, { callId, agentId: alice.agentId, contactId })).json();
    expect(after.call.summary).toBe(first.json().summary);
    expect(after.call.metricJson.intent).toBe('callback_requested');
  });

  it("computes an agent's custom metrics and describes them in metricSchema", async () => {
    const agent = await t.admin('POST', '/admin/v1/agents', {
      userId: alice.userId,
      name: 'Demo booker',
      metricConfig: {
        enabled: true,
        customMetrics: [
          {
            name: 'meetingDay',
            type: 'enum',
            options: ['Monday', 'Tuesday', 'Friday'],
            description: 'Day agreed',
          },
          { name: 'mentionedBudget', type: 'boolean', description: 'Did the contact talk about budget' },
        ],
      },
    });
    expect(agent.statusCode, agent.body).toBe(201);
    const agentId = agent.json().id as string;
    const number = '+14155550121'; // the interested script: "Tuesday afternoon works for me"
    expect(scriptFor(number)).toBe('interested');
    const { callId, contactId } = await dial(alice, number, agentId);
    const body = await analysed(alice, callId, contactId, agentId);
    expect(body.call.metricJson).toMatchObject({
      intent: 'interested',
      meetingDay: 'Tuesday',
      mentionedBudget: null,
    });
    expect(body.metricSchema.properties.meetingDay).toEqual({
      enum: ['Monday', 'Tuesday', 'Friday', null],
      description: 'Day agreed',
    });
    expect(body.metricSchema.required).toContain('mentionedBudget');
    const summary = await t.request({
      method: 'POST',
      url: '/api/v1/call/create-summary',
      key: alice.key,
      payload: { callId, transcription: [{ role: 'user', content: 'ok' }] },
    });
    expect(summary.json().customMetricsProcessed).toBe(2);
  });

  describe('errors', () => {
    it('refuses create-summary for a call still in progress with 409', async () => {
      const { callId } = await dial(alice, '+14155550134');
      const res = await t.request({
        method: 'POST',
        url: '/api/v1/call/create-summary',
        key: alice.key,
        payload: { callId, transcription: [{ role: 'user', content: 'hello' }] },
      });
      expect(res.statusCode, res.body).toBe(409);
      expect(res.json(), res.body).toMatchObject({ error: 'Conflict', code: 'CALL_NOT_ENDED' });
    });

    it('validates the bodies and queries', async () => {
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ transcription: [{ role: 'user', content: 'x' }] }, 'callId'],
        [{ callId: 'call_x' }, 'transcription'],
        [{ callId: 'call_x', transcription: [] }, 'transcription'],
        [{ callId: 'call_x', transcription: [{ role: 'robot', content: 'x' }] }, 'transcription.0.role'],
      ];
      for (const [payload, field] of cases) {
        const res = await t.request({
          method: 'POST',
          url: '/api/v1/call/create-summary',
          key: alice.key,
          payload,
        });
        expect(res.statusCode, JSON.stringify(payload)).toBe(400);
        expect(Object.keys(res.json().details.fieldErrors)).toContain(field);
      }
      const missing = await metrics(alice, { callId: 'call_x', agentId: alice.agentId });
      expect(missing.statusCode).toBe(400);
    });

    it('answers 404 for an unknown call and for a call that does not pair with the agent and contact', async () => {
      const { callId, contactId } = await dial(alice, '+14155550145');
      const unknown = await metrics(alice, { callId: 'call_missing', agentId: alice.agentId, contactId });
      expect(unknown.statusCode).toBe(404);
      const wrongContact = await metrics(alice, { callId, agentId: alice.agentId, contactId: 'cnt_other' });
      expect(wrongContact.statusCode).toBe(404);
      const wrongAgent = await metrics(alice, { callId, agentId: bob.agentId, contactId });
      expect(wrongAgent.statusCode).toBe(404);
      const summary = await t.request({
        method: 'POST',
        url: '/api/v1/call/create-summary',
        key: alice.key,
        payload: { callId: 'call_missing', transcription: [{ role: 'user', content: 'x' }] },
      });
      expect(summary.statusCode).toBe(404);
    });
  });

  describe('security', () => {
    it("keeps each user's calls to that user", async () => {
      const { callId, contactId } = await dial(alice, '+14155550156');
      await analysed(alice, callId, contactId);
      const asBob = await metrics(bob, { callId, agentId: alice.agentId, contactId });
      expect(asBob.statusCode).toBe(404);
      const summaryAsBob = await t.request({
        method: 'POST',
        url: '/api/v1/call/create-summary',
        key: bob.key,
        payload: { callId, transcription: [{ role: 'user', content: 'x' }] },
      });
      expect(summaryAsBob.statusCode).toBe(404);
      const otherUserId = await metrics(alice, {
        callId,
        agentId: alice.agentId,
        contactId,
        userId: bob.userId,
      });
      expect(otherUserId.statusCode).toBe(403);
    });

    it('needs a valid API key', async () => {
      for (const key of [undefined, 'nope', ADMIN_TOKEN]) {
        const get = await t.request({
          method: 'GET',
          url: '/api/v1/call/get-metric?callId=c&agentId=a&contactId=x',
          ...(key ? { key } : {}),
        });
        expect(get.statusCode).toBe(401);
        const post = await t.request({
          method: 'POST',
          url: '/api/v1/call/create-summary',
          payload: { callId: 'c', transcription: [{ role: 'user', content: 'x' }] },
          ...(key ? { key } : {}),
        });
        expect(post.statusCode).toBe(401);
      }
    });
  });
});
