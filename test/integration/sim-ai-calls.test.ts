import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TranscriptEntry } from '../../src/domain/call.js';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';
import { exportedContacts, submitBatch } from '../helpers/calls.js';
import {
  type ChatReply,
  type ChatRequestRecord,
  type ChatServer,
  isPersona,
  simulatedAiEnv,
  startChatServer,
  startOutageChat,
} from '../helpers/model-servers.js';
import { type Child, startCli } from '../helpers/process.js';
import { type Served, serveApp } from '../helpers/serve.js';
import { spokenTurnOffsets, wavSamples } from '../helpers/spoken.js';

/**
 * Simulated calls with an LLM configured (OUTDIAL_LLM_URL): placed through the public API, held
 * as AI conversations in text between the LLM engine and a persona callee, both answering through
 * a local OpenAI-compatible chat server, and ended, recorded and read back like any call.
 */

const lastUser = (record: ChatRequestRecord | undefined) =>
  record?.messages.filter((message) => message.role === 'user').at(-1)?.content ?? '';

interface CallView {
  status: string;
  endedReason: string | null;
  toolCalls: Array<{ name: string }>;
  turns: Array<Record<string, number | null>>;
  duration: number;
  transcription: TranscriptEntry[];
  recordingUrl: string | null;
}

describe(`simulated AI calls through the API (${STORE})`, () => {
  let chat: ChatServer;
  let t: TestApp;
  let account: Account;

  /** The agent answers by what the callee last said; the persona by what the agent last said. */
  const agentLine = (heard: string): string | ChatReply => {
    if (/never call me again/i.test(heard)) {
      return {
        text: 'Understood, we will not call you again.',
        toolCalls: [{ name: 'end_call', arguments: {} }],
      };
    }
    if (/what is it about/i.test(heard))
      return 'We automate outbound calls. Can I call you back tomorrow morning?';
    if (/tomorrow/i.test(heard)) return 'Of course, I will call you back tomorrow morning. Goodbye!';
    return 'Thank you for your time. Goodbye!';
  };
  const personaLine = (system: string, heard: string): string => {
    if (system.includes('never to call you again'))
      return 'Take me off your list and never call me again. Goodbye.';
    return /call you back tomorrow morning\?/i.test(heard)
      ? 'Yes, tomorrow morning works.'
      : 'Sure, what is it about?';
  };

  beforeAll(async () => {
    chat = await startChatServer({
      respond: (record) => {
        const system = String(record.messages[0]?.content ?? '');
        if (isPersona(record)) return personaLine(system, lastUser(record));
        if (system.includes('BROKEN')) return { fail: 500 };
        return agentLine(lastUser(record));
      },
    });
    t = await startTestApp({
      env: simulatedAiEnv(chat),
    });
    account = await t.createAccount();
  });
  afterAll(async () => {
    await t?.close();
    await chat?.close();
  });

  const agent = async (basicDetails: Record<string, unknown>) => {
    const res = await t.admin('POST', '/admin/v1/agents', {
      userId: account.userId,
      name: 'AI agent',
      basicDetails: { agent_name: 'Ava', agentLanguage: 'en', ...basicDetails },
    });
    expect(res.statusCode, res.body).toBe(201);
    return res.json<{ id: string }>().id;
  };
  const dial = async (to: string, agentConfigId: string) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId, callerDetails: { name: 'Jordan' } },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ callId: string }>().callId;
  };
  const ended = (callId: string) =>
    eventually(async () => {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/call/check-status?callId=${callId}`,
        key: account.key,
      });
      const data = res.json<{ data: CallView }>().data;
      return data.status === 'ONGOING' ? undefined : data;
    }, 30_000);

  it('holds a multi-turn AI conversation whose callee words reach the model, recorded as speech', async () => {
    const agentId = await agent({
      instructions: 'You sell Acme call automation.',
      firstMessage: 'Hi Jordan, this is Ava from Acme. Do you have a minute?',
    });
    const callId = await dial('+14155550123', agentId);
    const call = await ended(callId);
    expect(call.status).toBe('COMPLETED');
    // The agent's goodbye ends it (the engine hangs up after a farewell): agent-ended.
    expect(call.endedReason).toBe('agent-ended');
    expect(call.turns.length).toBeGreaterThanOrEqual(2);
    expect(call.transcription).toEqual([
      { role: 'assistant', content: 'Hi Jordan, this is Ava from Acme. Do you have a minute?' },
      { role: 'user', content: 'Sure, what is it about?' },
      { role: 'assistant', content: 'We automate outbound calls. Can I call you back tomorrow morning?' },
      { role: 'user', content: 'Yes, tomorrow morning works.' },
      { role: 'assistant', content: 'Of course, I will call you back tomorrow morning. Goodbye!' },
    ]);
    const agentRequests = chat.requests.filter((record) => !isPersona(record));
    expect(agentRequests.map(lastUser)).toContain('Yes, tomorrow morning works.');
    expect(agentRequests[0]?.messages[0]?.content).toContain('You sell Acme call automation.');
    // About 40 words spoken: a plausible duration, not the second the text exchange took.
    expect(call.duration).toBeGreaterThanOrEqual(12);
    // The dial record went out once and knows the answer (what a sweep settles a cut-off call by).
    const record = await eventually(async () => {
      const found = await t.runtime.deps.dials.find(callId);
      return found?.state === 'ended' ? found : undefined;
    });
    expect(record.answeredAt).toBeInstanceOf(Date);
    expect(t.provider.dials.filter((dial) => dial.callId === callId)).toHaveLength(1);

    // The recording is the conversation spoken by espeak-ng (installed here), turn after turn.
    const url = new URL(call.recordingUrl ?? '');
    const recording = await t.request({ method: 'GET', url: url.pathname + url.search });
    expect(recording.statusCode).toBe(200);
    expect(recording.headers['content-type']).toBe('audio/wav');
    const offsets = await spokenTurnOffsets(wavSamples(recording.rawPayload), call.transcription);
    expect(offsets.every((at) => at >= 0)).toBe(true);
  }, 90_000);

  it('0008 asks not to be called again; the agent ends the call with end_call', async () => {
    const agentId = await agent({ firstMessage: 'Hi Jordan, this is Ava from Acme.' });
    const call = await ended(await dial('+14155550008', agentId));
    expect(call).toMatchObject({ status: 'COMPLETED', endedReason: 'agent-ended' });
    expect(call.toolCalls.map((tool) => tool.name)).toEqual(['end_call']);
    expect(call.transcription).toEqual([
      { role: 'assistant', content: 'Hi Jordan, this is Ava from Acme.' },
      { role: 'user', content: 'Take me off your list and never call me again. Goodbye.' },
      { role: 'assistant', content: 'Understood, we will not call you again.' },
    ]);
  });

  it('leaves the voicemail message on 0004 (VOICEMAIL)', async () => {
    const message = 'Hi Jordan, this is Ava from Acme. Please call us back.';
    const agentId = await agent({ firstMessage: 'Hello!', voicemailMessage: message });
    const call = await ended(await dial('+14155550004', agentId));
    expect(call.status).toBe('VOICEMAIL');
    expect(call.endedReason).toBe('voicemail');
    expect(call.transcription).toEqual([{ role: 'assistant', content: message }]);
  });

  it('ends with an apology when the model answers 500, never stuck', async () => {
    const agentId = await agent({
      instructions: 'BROKEN on purpose',
      firstMessage: 'Hi Jordan, this is Ava.',
    });
    const call = await ended(await dial('+14155550123', agentId));
    expect(call.endedReason).toBe('model-unavailable');
    expect(call.transcription[0]).toEqual({ role: 'assistant', content: 'Hi Jordan, this is Ava.' });
    expect(call.transcription.at(-1)).toMatchObject({
      role: 'assistant',
      content: expect.stringMatching(/sorry/i),
    });
  });
});

/** Dials +14155550123 for Jordan with the served app's demo agent through the public API. */
async function dialDemo(served: Served) {
  const { base, demo } = served;
  const headers = { authorization: `Bearer ${demo.key}`, 'content-type': 'application/json' };
  const res = await fetch(`${base}/api/v1/call/dial`, {
    method: 'POST',
    headers,
    body: JSON.stringify({
      to: '+14155550123',
      agentConfigId: demo.agentId,
      callerDetails: { name: 'Jordan' },
    }),
  });
  expect(res.status).toBe(200);
  const { callId } = (await res.json()) as { callId: string };
  return { base, headers, callId };
}

describe(`npm start with OUTDIAL_LLM_URL gives AI conversations (${STORE})`, () => {
  let chat: ChatServer;
  let served: Served;

  beforeAll(async () => {
    chat = await startChatServer({
      respond: (record) =>
        isPersona(record)
          ? 'I am busy right now, please call me back tomorrow. Goodbye.'
          : /call me back/.test(lastUser(record))
            ? 'Of course, I will call you back tomorrow. Goodbye!'
            : 'Hello Jordan, this is Ava from the demo. Is now a good time?',
    });
    served = await serveApp(
      { OUTDIAL_SIM_RING_MS: '50', OUTDIAL_LLM_URL: chat.url, OUTDIAL_LLM_MODEL: 'test-model' },
      'outdial-sim-ai-',
    );
  }, 120_000);
  afterAll(async () => {
    await served?.close();
    await chat?.close();
  });

  it('dials through the public API and the demo agent holds an AI conversation', async () => {
    const { base, headers, callId } = await dialDemo(served);
    const call = await eventually(async () => {
      const r = await fetch(`${base}/api/v1/call/check-status?callId=${callId}`, { headers });
      const data = ((await r.json()) as { data: CallView }).data;
      return data.status === 'ONGOING' ? undefined : data;
    }, 30_000);
    expect(call.status).toBe('COMPLETED');
    // The demo agent has no firstMessage: the model opens (a callee kept waiting 3 s on a busy
    // host says "Hello?" first, which the agent answers too), and the conversation ends the same.
    expect(call.transcription).toContainEqual({
      role: 'assistant',
      content: 'Hello Jordan, this is Ava from the demo. Is now a good time?',
    });
    expect(call.transcription.slice(-2)).toEqual([
      { role: 'user', content: 'I am busy right now, please call me back tomorrow. Goodbye.' },
      { role: 'assistant', content: 'Of course, I will call you back tomorrow. Goodbye!' },
    ]);
    const agentRequests = chat.requests.filter((record) => !isPersona(record));
    expect(agentRequests.map(lastUser)).toContain(
      'I am busy right now, please call me back tomorrow. Goodbye.',
    );
  });
});

describe(`an AI conversation whose process was killed (${STORE})`, () => {
  let chat: ChatServer;
  let served: Served;
  let restarted: Child | null = null;

  beforeAll(async () => {
    // The agent opens; the callee's model never answers, so the conversation is in progress.
    chat = await startChatServer({
      respond: (record) =>
        isPersona(record) ? { hang: true } : 'Hello Jordan, this is Ava. Is now a good time?',
    });
    served = await serveApp(
      { OUTDIAL_SIM_RING_MS: '50', OUTDIAL_LLM_URL: chat.url, OUTDIAL_LLM_MODEL: 'test-model' },
      'outdial-sim-ai-crash-',
    );
  }, 120_000);
  afterAll(async () => {
    await restarted?.stop();
    await served?.close();
    await chat?.close();
  });

  it('is settled as cut off after the answer (FAILED, endedReason error), never left ONGOING', async () => {
    const { base, headers, callId } = await dialDemo(served);
    await eventually(async () => (chat.requests.some(isPersona) ? true : undefined), 30_000);
    await served.server.stop('SIGKILL');
    restarted = startCli(['serve'], served.env);
    await restarted.waitFor(/listening on/, 90_000);
    // The embedded database settles a previous run's calls at start; PostgreSQL once the lease ran out.
    const call = await eventually(
      async () => {
        const r = await fetch(`${base}/api/v1/call/check-status?callId=${callId}`, { headers });
        const data = ((await r.json()) as { data: CallView & { error: string | null } }).data;
        return data.status === 'ONGOING' ? undefined : data;
      },
      60_000,
      250,
    );
    expect(call).toMatchObject({
      status: 'FAILED',
      endedReason: 'error',
      error: expect.stringMatching(/cut off after/),
    });
    expect(call.duration).toBeGreaterThanOrEqual(1);
  }, 180_000);
});

/**
 * Issue 24: a campaign call that fails on our side (the model down) costs the contact nothing:
 * not charged, its attempt given back, and called again once the model answers, as the same
 * attempt. The first wait before that call is OUTDIAL_SERVICE_RETRY_MS (300 ms here).
 */
describe(`a campaign call that fails on our side (${STORE})`, () => {
  let chat: ChatServer;
  let t: TestApp;
  let account: Account;
  let setDown: (down: boolean) => void = () => {};

  beforeAll(async () => {
    ({ chat, setDown } = await startOutageChat(500));
    setDown(true);
    t = await startTestApp({
      workers: true,
      env: { ...simulatedAiEnv(chat), OUTDIAL_SERVICE_RETRY_MS: '300' },
    });
    account = await t.createAccount({ minutes: 100 });
  });
  afterAll(async () => {
    await t?.close();
    await chat?.close();
  });

  const callsOf = async (batchId: string) => {
    const res = await t.request({ method: 'GET', url: `/api/v1/calls?batchId=${batchId}`, key: account.key });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<
      Array<{ callId: string; status: string; endedReason: string | null; failureSource: string | null }>
    >();
  };
  const status = async (callId: string) =>
    (
      await t.request({ method: 'GET', url: `/api/v1/call/check-status?callId=${callId}`, key: account.key })
    ).json<{ data: CallView & { failureSource: string | null; minutesCharged: number } }>().data;
  const balance = async () =>
    (await t.request({ method: 'GET', url: '/api/v1/account', key: account.key })).json<{
      availableMinutes: number;
    }>().availableMinutes;

  it('is not charged, keeps the attempt, and is called again as the same attempt once the model is back', async () => {
    const before = await balance();
    // One attempt: were the failure the contact's, this call would be its last.
    const batchId = await submitBatch(t, account, {
      contacts: [{ phoneNumber: '+14155550123', name: 'Jordan' }],
      options: { maxCallsPerSecond: 5, retryStrategy: { maxAttempts: 1 } },
    });
    const failed = await eventually(async () => {
      return (await callsOf(batchId)).find((call) => call.status !== 'ONGOING');
    }, 30_000);
    expect(failed).toMatchObject({
      status: 'FAILED',
      endedReason: 'model-unavailable',
      failureSource: 'service',
    });
    const first = await status(failed.callId);
    expect(first.minutesCharged).toBe(0);
    expect(first.duration).toBeGreaterThan(0);
    expect(first.transcription.at(-1)).toMatchObject({
      role: 'assistant',
      content: expect.stringMatching(/sorry/i),
    });
    // The contact is not done: its attempt is given back.
    const exported = await exportedContacts(t, account, batchId);
    expect(exported[0]).toMatchObject({ state: 'queued', attempts: '0' });

    setDown(false);
    const done = await eventually(async () => {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/batch/check-status?batchId=${batchId}`,
        key: account.key,
      });
      return res.json<{ status: string }>().status === 'completed' ? res.json() : undefined;
    }, 30_000);
    expect(done).toMatchObject({ status: 'completed' });
    const calls = await callsOf(batchId);
    expect(calls).toHaveLength(2);
    const second = calls.find((call) => call.callId !== failed.callId);
    expect(second).toMatchObject({ status: 'COMPLETED', failureSource: null });
    const [contact] = await exportedContacts(t, account, batchId);
    expect(contact).toMatchObject({ state: 'done', finalStatus: 'COMPLETED', attempts: '1' });
    // Two calls, one attempt used; only the second call is charged.
    expect((await status(second?.callId ?? '')).minutesCharged).toBeGreaterThan(0);
    expect(await balance()).toBe(before - (await status(second?.callId ?? '')).minutesCharged);
  }, 90_000);
});
