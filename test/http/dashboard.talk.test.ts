import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { DashboardClient } from '../helpers/dashboard-client.js';
import { type ModelServers, startModelServers } from '../helpers/model-servers.js';
import { TalkClient } from '../helpers/talk-client.js';

/**
 * "Talk to this agent" over its WebSocket (docs/agents.md §10): a client that speaks espeak-ng
 * speech in 20 ms frames as a microphone would, the LLM engine against local model servers, and
 * the call read back through the API like any other (channel "web", charged, recorded). Then the
 * refusals and malformed input, and a server that stops with a web call up.
 */

const HEARD = 'I would like to hear about your offer';
const GREETING = 'Hello, this is Ava. How can I help you?';
const REPLY = 'We have ten percent off this week. Goodbye!';

interface CallRead {
  status: string;
  channel: string;
  endedReason: string | null;
  duration: number | null;
  recordingUrl: string | null;
  transcription: Array<{ role: string; content: string }>;
}

describe(`web calls over the talk WebSocket (${STORE})`, () => {
  let models: ModelServers;
  let t: TestApp;
  let account: Account;
  let dashboard: DashboardClient;
  let base: string;
  let speech: Int16Array;

  beforeAll(async () => {
    models = await startModelServers({
      chat: {
        respond: (request) =>
          request.messages.some((message) => message.role === 'user')
            ? { text: REPLY, toolCalls: [{ name: 'end_call' }] }
            : GREETING,
      },
      // A model that knows the words; the test checks it was sent the callee's audio.
      stt: { text: HEARD },
    });
    t = await startTestApp({ env: models.env });
    account = await t.createAccount({ minutes: 10 });
    dashboard = new DashboardClient(t);
    await dashboard.signIn(account.key);
    base = await t.runtime.app.listen({ port: 0, host: '127.0.0.1' });
    speech = await synthesize(HEARD, { voice: 'en-us' });
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await models?.close();
  });

  const talk = (agentId: string, headers: Record<string, string> = {}, client = dashboard) =>
    new TalkClient(`${base.replace('http:', 'ws:')}/dashboard/agents/${agentId}/talk`, {
      origin: base,
      cookie: client.header(),
      ...headers,
    });
  const read = async (callId: string) =>
    (
      await t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${callId}`, key: account.key })
    ).json<{
      data: CallRead;
    }>().data;

  it('holds a call with the agent: the callee is heard, the agent answers, and the call is listed as web and charged', async () => {
    const before = (await t.request({ method: 'GET', url: '/api/v1/account', key: account.key })).json<{
      availableMinutes: number;
    }>().availableMinutes;
    const client = talk(account.agentId);
    await client.opened();
    const callId = String((await eventually(async () => client.message('call'))).callId);
    // The greeting is heard (its frames) and shown; then the callee speaks.
    await eventually(
      async () => (client.turns().some((turn) => turn.content === GREETING) ? true : undefined),
      15_000,
    );
    await eventually(async () => (client.frames.length > 0 ? true : undefined), 15_000);
    client.speak(speech);
    const closed = await client.ended();
    expect(closed.code).toBe(1000);
    expect(client.turns()).toEqual([
      { role: 'assistant', content: GREETING },
      { role: 'user', content: HEARD },
      { role: 'assistant', content: REPLY },
    ]);
    expect(client.message('ended')).toMatchObject({
      callId,
      status: 'COMPLETED',
      endedReason: 'agent-ended',
    });
    // The agent's speech came in 20 ms frames; the speech-to-text server was sent the callee's audio.
    expect(new Set(client.frames)).toEqual(new Set([320]));
    expect(models.stt.requests.at(-1)?.samples).toBeGreaterThan(8000 * 1);

    const call = await read(callId);
    expect(call).toMatchObject({ status: 'COMPLETED', channel: 'web', endedReason: 'agent-ended' });
    expect(call.transcription.map((turn) => turn.content)).toEqual([GREETING, HEARD, REPLY]);
    expect(call.recordingUrl).toEqual(expect.any(String));
    const recording = await t.request({
      method: 'GET',
      url: `/api/v1/calls/${callId}/recording.wav`,
      key: account.key,
    });
    expect(recording.statusCode).toBe(200);
    expect(recording.headers['content-type']).toContain('audio/wav');
    const list = await t.request({ method: 'GET', url: '/api/v1/calls', key: account.key });
    expect(list.json<Array<{ callId: string; channel: string; phoneNumber: string }>>()).toContainEqual(
      expect.objectContaining({ callId, channel: 'web', phoneNumber: 'web' }),
    );
    const after = (await t.request({ method: 'GET', url: '/api/v1/account', key: account.key })).json<{
      availableMinutes: number;
    }>().availableMinutes;
    expect(before - after).toBe(Math.ceil((call.duration ?? 0) / 60));
    expect(before - after).toBeGreaterThanOrEqual(1);
    // The dashboard shows it too: the Calls page and the call page name the channel.
    expect((await dashboard.get('/dashboard/calls')).body).toContain(`data-call-id="${callId}"`);
    expect((await dashboard.get(`/dashboard/calls/${callId}`)).body).toMatch(
      /data-field="channel">Web \(browser\)/,
    );
  }, 60_000);

  it('takes live call control like a phone call: an operator hangs it up through the API', async () => {
    const client = talk(account.agentId);
    const callId = String((await eventually(async () => client.message('call'))).callId);
    await eventually(async () =>
      client.messages.some((message) => message.type === 'status' && message.status === 'in-progress')
        ? true
        : undefined,
    );
    // Its page, while it is up, offers the hang-up and no transfer (a browser has no line to refer).
    const page = await dashboard.get(`/dashboard/calls/${callId}`);
    expect(page.body).toContain('id="live-hangup"');
    expect(page.body).not.toContain('id="live-transfer"');
    const res = await t.request({
      method: 'POST',
      url: `/api/v1/call/hangup?callId=${callId}`,
      key: account.key,
    });
    expect(res.json()).toMatchObject({ success: true, outcome: 'ended' });
    await client.ended();
    expect(client.message('ended')).toMatchObject({ callId, endedReason: 'operator-ended' });
    expect(await read(callId)).toMatchObject({ channel: 'web', endedReason: 'operator-ended' });
  }, 30_000);

  it('refuses the upgrade without a session (401) and from another origin (403)', async () => {
    const anonymous = talk(account.agentId, { cookie: '' });
    await anonymous.ended();
    expect(anonymous.refusedWith).toBe(401);
    const foreign = talk(account.agentId, { origin: 'https://evil.example' });
    await foreign.ended();
    expect(foreign.refusedWith).toBe(403);
    const none = talk(account.agentId, { origin: '' });
    await none.ended();
    expect(none.refusedWith).toBe(403);
  });

  it("closes with the reason when the agent is another user's, the minutes are spent or the limit is reached", async () => {
    const other = await t.createAccount();
    const theirs = talk(other.agentId);
    expect(await theirs.ended()).toEqual({ code: 4404, reason: expect.stringContaining('not yours') });

    const broke = await t.createAccount({ minutes: 0 });
    const broke$ = new DashboardClient(t);
    await broke$.signIn(broke.key);
    const refused = talk(broke.agentId, {}, broke$);
    expect(await refused.ended()).toEqual({
      code: 4402,
      reason: expect.stringContaining('unreserved minute'),
    });

    const busy = await t.createAccount();
    const busy$ = new DashboardClient(t);
    await busy$.signIn(busy.key);
    expect(
      (await t.admin('PATCH', `/admin/v1/users/${busy.userId}`, { maxConcurrentCalls: 1 })).statusCode,
    ).toBe(200);
    const first = talk(busy.agentId, {}, busy$);
    await eventually(async () => first.message('call'));
    const second = talk(busy.agentId, {}, busy$);
    expect(await second.ended()).toEqual({
      code: 4429,
      reason: expect.stringContaining('maxConcurrentCalls'),
    });
    first.close();
    await first.ended();
    // Nothing was opened for the refusals: the only calls are the first's.
    const calls = await t.request({ method: 'GET', url: '/api/v1/calls', key: busy.key });
    expect(calls.json<unknown[]>()).toHaveLength(1);
    expect(
      (await t.request({ method: 'GET', url: '/api/v1/calls', key: broke.key })).json<unknown[]>(),
    ).toEqual([]);
  }, 30_000);

  it('a client that hangs up or disconnects ends the call as callee-hung-up', async () => {
    for (const leave of ['hangup message', 'disconnect'] as const) {
      const client = talk(account.agentId);
      const callId = String((await eventually(async () => client.message('call'))).callId);
      if (leave === 'disconnect') client.close();
      else client.send(JSON.stringify({ type: 'hangup' }));
      await client.ended();
      const call = await eventually(async () => {
        const read$ = await read(callId);
        return read$.status === 'ONGOING' ? undefined : read$;
      });
      expect(call).toMatchObject({ status: 'COMPLETED', channel: 'web', endedReason: 'callee-hung-up' });
    }
  }, 30_000);

  it('closes on malformed input (odd bytes, text that is not JSON, unknown messages, oversized) and ends the call', async () => {
    const cases: Array<{ send: Buffer | string; code: number; reason: RegExp }> = [
      { send: Buffer.alloc(321), code: 1007, reason: /even number of bytes/ },
      { send: '{not json', code: 1007, reason: /must be JSON/ },
      { send: JSON.stringify({ type: 'dance' }), code: 1008, reason: /unknown message/ },
      { send: Buffer.alloc(64 * 1024 + 2), code: 1009, reason: /.*/ },
    ];
    for (const { send, code, reason } of cases) {
      const client = talk(account.agentId);
      const callId = String((await eventually(async () => client.message('call'))).callId);
      client.send(send);
      const closed = await client.ended();
      expect(closed, String(send).slice(0, 20)).toMatchObject({ code });
      expect(closed.reason).toMatch(reason);
      const call = await eventually(async () => {
        const read$ = await read(callId);
        return read$.status === 'ONGOING' ? undefined : read$;
      });
      expect(call).toMatchObject({ status: 'COMPLETED', endedReason: 'callee-hung-up' });
    }
    // The server is still there for the next call.
    expect((await t.request({ method: 'GET', url: '/livez' })).statusCode).toBe(200);
  }, 30_000);

  it('ends a web call that is up when the server closes, as the agent would, and stores it', async () => {
    const client = talk(account.agentId);
    const callId = String((await eventually(async () => client.message('call'))).callId);
    await t.runtime.app.close();
    expect((await client.ended()).code).toBe(1001);
    expect(client.message('ended')).toMatchObject({
      callId,
      status: 'COMPLETED',
      endedReason: 'agent-ended',
    });
    const stored = await t.runtime.database.db
      .selectFrom('calls')
      .select(['status', 'ended_reason', 'channel', 'minutes_charged'])
      .where('id', '=', callId)
      .executeTakeFirstOrThrow();
    expect(stored).toEqual({
      status: 'COMPLETED',
      ended_reason: 'agent-ended',
      channel: 'web',
      minutes_charged: 1,
    });
  }, 30_000);
});
