import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryLiveChannel } from '../../src/adapters/memory/live-channel.js';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { type ChatRequestRecord, type ChatServer, startChatServer } from '../helpers/model-servers.js';
import { openEventStream, type SseEvent } from '../helpers/sse.js';

/**
 * Live call control through the API on simulated AI calls (an LLM configured: the simulator holds
 * each answered call as a text conversation between the LLM engine and a persona callee, both on
 * a local chat server). The persona's answers wait until the test lets them go, so the call is
 * up, and where it is, whenever the test acts.
 */
const isPersona = (record: ChatRequestRecord) =>
  String(record.messages[0]?.content ?? '').includes('answering your phone');
const lastUser = (record: ChatRequestRecord) =>
  String(record.messages.filter((message) => message.role === 'user').at(-1)?.content ?? '');

describe(`live call control: hangup, transfer, say and the event stream (${STORE})`, () => {
  let chat: ChatServer;
  let t: TestApp;
  let account: Account;
  let base: string;
  let agentId: string;
  /** Persona answers waiting for the test, in order. */
  const held: Array<(line: string) => void> = [];

  beforeAll(async () => {
    chat = await startChatServer({
      respond: (record) => {
        if (isPersona(record)) return new Promise<string>((resolve) => held.push(resolve));
        if (/stop calling/i.test(lastUser(record)))
          return { text: 'Sorry to bother you.', toolCalls: [{ name: 'end_call', arguments: {} }] };
        return 'Tell me more.';
      },
    });
    t = await startTestApp({
      env: {
        OUTDIAL_LLM_URL: chat.url,
        OUTDIAL_LLM_MODEL: 'test-model',
        OUTDIAL_SIM_RING_MS: '30',
        // The limit bounds a failure only: a busy machine must not turn a slow answer into 'error'.
        OUTDIAL_MODEL_TIMEOUT_MS: '60000',
      },
      overrides: { liveHeartbeatMs: 300 },
    });
    account = await t.createAccount();
    const agent = await t.admin('POST', '/admin/v1/agents', {
      userId: account.userId,
      name: 'Live agent',
      basicDetails: {
        agent_name: 'Ava',
        agentLanguage: 'en',
        firstMessage: 'Hi Jordan, this is Ava from Acme.',
        // No reprompt and no hang-up on silence: the call stays up while the persona waits.
        silence: { repromptMs: 0, hangupMs: 0 },
      },
    });
    expect(agent.statusCode, agent.body).toBe(201);
    agentId = agent.json().id;
    base = await t.runtime.app.listen({ port: 0, host: '127.0.0.1' });
  });
  afterAll(async () => {
    // Persona answers still held are let go so the chat server can close.
    for (const release of held.splice(0)) release('Bye.');
    await t?.close();
    await chat?.close();
  });

  /** The persona's next answer, once the conversation has asked for it. */
  const answer = async (line: string) => {
    const release = await eventually(async () => held.shift(), 20_000);
    release(line);
  };
  const dial = async (to = '+14155550123') => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: agentId, callerDetails: { name: 'Jordan' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ callId: string }>().callId;
  };
  const follow = (callId: string) =>
    openEventStream(`${base}/api/v1/call/events?callId=${callId}`, {
      authorization: `Bearer ${account.key}`,
    });
  const live = (stream: Awaited<ReturnType<typeof follow>>) =>
    stream.next((e) => e.event === 'status' && e.data.status === 'in-progress');
  const command = (action: string, callId: string, payload?: Record<string, unknown>) =>
    t.request({
      method: 'POST',
      url: `/api/v1/call/${action}?callId=${callId}`,
      key: account.key,
      ...(payload ? { payload } : {}),
    });
  const stored = async (callId: string) =>
    (
      await t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${callId}`, key: account.key })
    ).json().data;
  const summary = (events: SseEvent[]) =>
    events.map((e) =>
      e.event === 'turn'
        ? `turn ${e.data.role}: ${e.data.content}`
        : e.event === 'status'
          ? `status ${e.data.status}${e.data.endedReason ? ` ${e.data.endedReason}` : ''}`
          : e.event === 'tool-call'
            ? `tool ${(e.data.call as { name: string }).name}`
            : `${e.event} ${e.data.status} ${e.data.endedReason}`,
    );

  it('streams the call in order, speaks an operator line next, and hangs up operator-ended', async () => {
    const callId = await dial();
    const stream = await follow(callId);
    expect(stream.status).toBe(200);
    expect(stream.contentType).toMatch(/^text\/event-stream/);
    await live(stream);
    await stream.next((e) => e.event === 'turn' && e.data.content === 'Hi Jordan, this is Ava from Acme.');

    const say = await command('say', callId, { text: 'Our spring offer ends on Friday.' });
    expect(say.statusCode, say.body).toBe(200);
    expect(say.json()).toEqual({ success: true, callId, outcome: 'queued' });
    await stream.next((e) => e.event === 'turn' && e.data.content === 'Our spring offer ends on Friday.');

    // The callee answers; the model is asked with the operator's line in its history as the agent's.
    await answer('Interesting, go on.');
    await stream.next((e) => e.event === 'turn' && e.data.content === 'Tell me more.');
    const asked = chat.requests.filter((r) => !isPersona(r) && lastUser(r) === 'Interesting, go on.');
    expect(asked[0]?.messages).toContainEqual({
      role: 'assistant',
      content: 'Our spring offer ends on Friday.',
    });

    const hangup = await command('hangup', callId);
    expect(hangup.statusCode, hangup.body).toBe(200);
    expect(hangup.json()).toEqual({ success: true, callId, outcome: 'ended' });
    const ended = await stream.next((e) => e.event === 'ended');
    await stream.closed;
    expect(ended.data).toMatchObject({ callId, status: 'COMPLETED', endedReason: 'operator-ended' });
    const lines = summary(stream.events);
    expect(lines.filter((line) => !line.startsWith('status'))).toEqual([
      'turn assistant: Hi Jordan, this is Ava from Acme.',
      'turn assistant: Our spring offer ends on Friday.',
      'turn user: Interesting, go on.',
      'turn assistant: Tell me more.',
      'ended COMPLETED operator-ended',
    ]);
    // Statuses in the order the call went through them (the first is where it stood at opening:
    // ringing, or answered already on a busy machine); the operator's line came once commands were taken.
    const statuses = lines.filter((line) => line.startsWith('status'));
    const order = ['status ongoing', 'status answered', 'status in-progress', 'status ending operator-ended'];
    expect(statuses.map((line) => order.indexOf(line))).toEqual(
      [...statuses.map((line) => order.indexOf(line))].sort((a, b) => a - b),
    );
    expect(statuses.slice(-2)).toEqual(['status in-progress', 'status ending operator-ended']);
    expect(lines.indexOf('status in-progress')).toBeLessThan(
      lines.indexOf('turn assistant: Our spring offer ends on Friday.'),
    );
    expect(lines.at(-2)).toBe('status ending operator-ended');
    // Host events carry increasing ids; the stored call says the same as the stream's end.
    const ids = stream.events.filter((e) => e.id !== null).map((e) => Number(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => a - b));
    const call = await stored(callId);
    expect(call).toMatchObject({ status: 'COMPLETED', endedReason: 'operator-ended' });
    expect(call.transcription).toEqual(ended.data.transcription);
    expect(call.transcription).toContainEqual({
      role: 'assistant',
      content: 'Our spring offer ends on Friday.',
    });
  });

  it('streams tool calls and the end the agent chose', async () => {
    const callId = await dial();
    const stream = await follow(callId);
    await live(stream);
    await answer('Please stop calling me.');
    const tool = await stream.next((e) => e.event === 'tool-call');
    expect(tool.data.call).toMatchObject({ name: 'end_call', error: null });
    const ended = await stream.next((e) => e.event === 'ended');
    expect(ended.data).toMatchObject({ status: 'COMPLETED', endedReason: 'agent-ended' });
    await stream.closed;
    expect(summary(stream.events).slice(-3)).toEqual([
      'tool end_call',
      'status ending agent-ended',
      'ended COMPLETED agent-ended',
    ]);
  });

  it('answers a refused transfer with the far end’s reason and keeps the call; an accepted one ends it transferred', async () => {
    const callId = await dial();
    const stream = await follow(callId);
    await live(stream);
    // A busy number (the simulator's 0001) refuses, as a carrier's NOTIFY would say.
    const refused = await command('transfer', callId, { to: '+14155550001' });
    expect(refused.statusCode, refused.body).toBe(200);
    expect(refused.json()).toMatchObject({ success: false, callId, outcome: 'refused' });
    expect(refused.json().reason).toMatch(/busy/i);
    expect((await stored(callId)).status).toBe('ONGOING');

    const accepted = await command('transfer', callId, { to: '+14155550199' });
    expect(accepted.statusCode, accepted.body).toBe(200);
    expect(accepted.json()).toEqual({ success: true, callId, outcome: 'transferred' });
    const ended = await stream.next((e) => e.event === 'ended');
    expect(ended.data).toMatchObject({ status: 'COMPLETED', endedReason: 'transferred' });
  });

  it('gives a call that already ended its final state and closes', async () => {
    const callId = await dial();
    const first = await follow(callId);
    await live(first);
    expect((await command('hangup', callId)).statusCode).toBe(200);
    await first.closed;
    await eventually(async () => ((await stored(callId)).status === 'ONGOING' ? undefined : true));
    const stream = await follow(callId);
    await stream.closed;
    expect(stream.events.map((e) => e.event)).toEqual(['ended']);
    expect(stream.events[0]?.data).toMatchObject({
      callId,
      status: 'COMPLETED',
      endedReason: 'operator-ended',
    });
  });

  it('sends heartbeats, and leaves nothing subscribed when the client goes away', async () => {
    const callId = await dial();
    const stream = await follow(callId);
    await live(stream);
    await eventually(async () => (stream.comments.includes('heartbeat') ? true : undefined));
    expect(t.runtime.services.live.openStreams).toBe(1);
    expect(await followers(callId)).toBe(1);
    stream.abort();
    await eventually(async () => (t.runtime.services.live.openStreams === 0 ? true : undefined));
    await eventually(async () => ((await followers(callId)) === 0 ? true : undefined));
    // The call itself goes on until it is hung up.
    expect((await command('hangup', callId)).statusCode).toBe(200);
  });

  it("lets the dashboard's call page follow the call and hang up, origin- and CSRF-checked", async () => {
    const callId = await dial('+14155550126');
    const browser = new DashboardClient(t);
    expect((await browser.signIn(account.key)).statusCode).toBe(303);
    const cookie = browser.header();
    const page = await browser.get(`/dashboard/calls/${callId}`);
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain(`id="live-call" data-call-id="${callId}"`);
    expect(page.body).toContain('id="live-transfer"');
    expect(page.body).toContain('<script src="/dashboard/assets/live-call.js" defer></script>');
    const csrf = /data-csrf="([^"]+)"/.exec(page.body)?.[1] ?? '';
    const script = await t.request({ method: 'GET', url: '/dashboard/assets/live-call.js' });
    expect(script.statusCode).toBe(200);
    expect(script.body).toContain('/events');

    // The page's event stream, with the session cookie.
    const stream = await openEventStream(`${base}/dashboard/api/calls/${callId}/events`, { cookie });
    await live(stream);
    // Without an Origin header (as a same-origin form may come), the CSRF token alone decides.
    const post = (origin: string | null, token: string) =>
      t.request({
        method: 'POST',
        url: `/dashboard/calls/${callId}/hangup`,
        headers: {
          cookie,
          ...(origin ? { origin } : {}),
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        payload: new URLSearchParams({ _csrf: token }).toString(),
      });
    expect((await post('https://evil.example', csrf)).statusCode).toBe(403);
    expect((await post(null, 'forged')).statusCode).toBe(403);
    const hangup = await post(null, csrf);
    expect(hangup.statusCode, hangup.body).toBe(200);
    expect(hangup.json()).toEqual({ success: true, callId, outcome: 'ended' });
    const ended = await stream.next((e) => e.event === 'ended');
    expect(ended.data).toMatchObject({ endedReason: 'operator-ended' });
    // Ended: the page has no live part any more.
    const after = await browser.get(`/dashboard/calls/${callId}`);
    expect(after.body).not.toContain('id="live-call"');
  });

  /** Who follows the call's events: Redis's own count of subscribers, or the memory channel's. */
  async function followers(callId: string): Promise<number> {
    const channel = t.runtime.liveChannel;
    if (channel instanceof MemoryLiveChannel) return channel.followers(callId);
    const redis = new Redis(t.redisUrl ?? '');
    try {
      const [, count] = (await redis.pubsub('NUMSUB', `${t.cachePrefix}live:${callId}:events`)) as [
        string,
        number,
      ];
      return Number(count);
    } finally {
      redis.disconnect();
    }
  }
});
