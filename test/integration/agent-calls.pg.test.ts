import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';
import {
  type FarEnd,
  type FarEndCall,
  type FarEndLine,
  interruption,
  startFarEnd,
} from '../helpers/far-end.js';
import type { ChatReply, ChatRequestRecord } from '../helpers/model-servers.js';
import {
  type ChatServer,
  type SttServer,
  startChatServer,
  startSttServer,
  startTtsServer,
  type TtsServer,
} from '../helpers/model-servers.js';
import { type Received, Receiver, verifySignatures } from '../helpers/receiver.js';
import { type LoggedMessage, sipMessages } from '../helpers/sipp.js';
import { trunkCalls } from '../helpers/trunk-calls.js';

/**
 * AI calls end to end: the whole service with the LLM engine (OUTDIAL_LLM_URL set), its models on
 * local OpenAI-compatible servers (chat with scripted replies and tool calls; speech-to-text on
 * pocketsphinx; text-to-speech on espeak-ng), an agent whose AI fields are set through the admin
 * API and whose trunk points at sipp, and a dial through the public API. sipp is the callee: SIP,
 * and its lines (espeak-ng speech) played when the agent has finished its turn
 * (test/helpers/far-end.ts). What is checked is what a user sees: the call's status, transcript,
 * endedReason, turns and tool calls; what reached the model; and what went over the wire.
 *
 * PostgreSQL only (`.pg.test.ts`): these calls take real time (speech on the wire, pocketsphinx)
 * and nothing in them depends on the store; AI calls on PGlite are covered through the API by
 * sim-ai-calls.test.ts, and SIP calls on PGlite by sip-calls.test.ts.
 */
describe('AI calls through a SIP trunk, with sipp as the callee', () => {
  let t: TestApp;
  let account: Account;
  let trunk: ReturnType<typeof trunkCalls>;
  let chat: ChatServer;
  let stt: SttServer;
  let tts: TtsServer;
  let far: FarEnd | null = null;

  /** The service's settings: SIP on loopback, the models on the local servers. */
  const appEnv = (llmUrl: string) => ({
    OUTDIAL_SIP_BIND: '127.0.0.1',
    OUTDIAL_SIP_PORT: '0',
    OUTDIAL_RTP_PORTS: '42000-43999',
    OUTDIAL_LLM_URL: llmUrl,
    OUTDIAL_LLM_MODEL: 'test-model',
    OUTDIAL_STT_URL: stt.url,
    OUTDIAL_TTS_URL: tts.url,
    // The speech-to-text server here is pocketsphinx, which on a busy 2-core machine running the
    // whole suite can take well over the default 10 s for a line: give it the time a slow CPU
    // model would be given in production.
    OUTDIAL_MODEL_TIMEOUT_MS: '60000',
    // The HTTP tool's receiver is on loopback.
    OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true',
  });

  beforeAll(async () => {
    chat = await startChatServer();
    stt = await startSttServer();
    tts = await startTtsServer();
    t = await startTestApp({ workers: true, env: appEnv(chat.url) });
    account = await t.createAccount({ minutes: 500 });
    trunk = trunkCalls(t, account);
  }, 60_000);

  afterEach(async () => {
    await far?.close();
    far = null;
    chat.set({ fail: undefined, respond: () => 'OK.' });
  });

  afterAll(async () => {
    await t?.close();
    await Promise.all([chat?.close(), stt?.close(), tts?.close()]);
  });

  const INSTRUCTIONS_START = 'You are Ava, calling';
  const FIRST_MESSAGE = 'Hi {{name}}, this is Ava from Acme. Do you have a minute?';
  const GREETING = 'Hi Jordan, this is Ava from Acme. Do you have a minute?';
  const GOODBYE = { name: 'end_call', arguments: {} };

  /**
   * A call to sipp playing `scenario` with `lines`, for an agent with these AI fields; resolves
   * with the call as the API shows it once it has ended, the far end's view, and sipp's log.
   */
  async function aiCall(
    scenario: string,
    lines: Record<string, FarEndLine>,
    details: Record<string, unknown> = {},
    via = trunk,
  ) {
    const before = chat.requests.length;
    far = await startFarEnd(scenario, { lines });
    const agentId = await via.agent(
      far.port,
      {},
      {
        instructions: `${INSTRUCTIONS_START} {{name}} for Acme. Keep answers short.`,
        firstMessage: FIRST_MESSAGE,
        ...details,
      },
    );
    const callId = await via.dial(agentId, '+14155550123', 'Jordan');
    const call = await via.ended(callId, 100_000);
    const farCall = await far.call();
    const messages = sipMessages(far.log);
    // sipp exits 0 when the call followed its scenario; otherwise the story of the call helps.
    expect(
      await far.sipp.done,
      JSON.stringify({ call, farCall, sip: messages.map((m) => `${m.at} ${m.startLine}`) }),
    ).toBe(0);
    return {
      callId,
      call,
      farCall,
      messages,
      lines: far.lines,
      // The conversation's requests (the call analysis asks the same server afterwards).
      requests: chat.requests
        .slice(before)
        .filter((request) => String(request.messages[0]?.content).includes(INSTRUCTIONS_START)),
      said: (role: 'assistant' | 'user') =>
        (call.transcription as Array<{ role: string; content: string }>)
          .filter((entry) => entry.role === role)
          .map((entry) => entry.content),
    };
  }

  /** How many times the callee has spoken in the conversation the model is given. */
  const userTurns = (request: ChatRequestRecord) =>
    request.messages.filter((message) => message.role === 'user').length;
  const lastIsTool = (request: ChatRequestRecord) => request.messages.at(-1)?.role === 'tool';
  const lastUser = (request: ChatRequestRecord) =>
    request.messages.filter((message) => message.role === 'user').at(-1)?.content;

  /** Our BYE as sipp received it; it must come after the agent's last audio on the wire. */
  function byeAfterLastWords(messages: LoggedMessage[], farCall: FarEndCall): LoggedMessage {
    const bye = messages.find((message) => !message.sent && message.startLine.startsWith('BYE '));
    expect(bye).toBeDefined();
    const lastWords = farCall.agentSpeech.at(-1);
    expect(lastWords).toBeDefined();
    // Clocks: both wall-clock ms on this machine; sipp logs at ms precision, packets are 20 ms.
    expect(bye?.at ?? 0).toBeGreaterThanOrEqual((lastWords?.end ?? 0) - 60);
    return bye as LoggedMessage;
  }

  it("holds a three-turn conversation: the agent's lines come from the LLM, the callee's words reach it, end_call hangs up after the goodbye", async () => {
    const replies: Array<string | ChatReply> = [
      'Great. We help teams call their customers. Would you like a demo?',
      'Wonderful. Does Tuesday at ten work for you?',
      { text: 'Perfect, you are booked. Goodbye.', toolCalls: [GOODBYE] },
    ];
    chat.set({ respond: (request) => replies[Math.min(userTurns(request), 3) - 1] });
    const { call, farCall, messages, requests, said } = await aiCall('agent-talk', {
      hello: 'Hello?',
      line1: 'Yes, I am interested.',
      line2: 'Yes, please show me.',
      line3: 'Yes, Tuesday is good.',
    });

    expect(call).toMatchObject({ status: 'COMPLETED', sipStatusCode: 200, endedReason: 'agent-ended' });
    expect(said('assistant')).toEqual([
      GREETING,
      'Great. We help teams call their customers. Would you like a demo?',
      'Wonderful. Does Tuesday at ten work for you?',
      'Perfect, you are booked. Goodbye.',
    ]);
    // The callee's words, as speech-to-text heard them, are what the model was given.
    const heard = said('user');
    expect(heard).toHaveLength(3);
    for (const words of heard) expect(words.trim()).not.toBe('');
    expect(requests).toHaveLength(3);
    expect(requests.map(lastUser)).toEqual(heard);
    expect(requests[0]?.messages[0]).toMatchObject({ role: 'system' });
    expect(requests[0]?.messages[0]?.content).toContain('You are Ava, calling Jordan for Acme.');
    expect(requests[0]?.messages).toContainEqual({ role: 'assistant', content: GREETING });
    expect(requests[0]?.model).toBe('test-model');
    expect(requests[0]?.tools?.map((tool) => tool.function.name)).toContain('end_call');
    // pocketsphinx on 8 kHz espeak-ng speech is rough, but "yes" comes through.
    expect(heard.join(' ')).toMatch(/\byes\b|\byeah\b/);

    expect(call.toolCalls).toEqual([expect.objectContaining({ name: 'end_call', error: null })]);
    expect(call.turns.length).toBeGreaterThanOrEqual(3);
    for (const turn of call.turns) {
      expect(turn.voiceToVoiceMs).toBeGreaterThan(0);
      expect(turn.sttMs).toBeGreaterThan(0);
      expect(turn.llmFirstTokenMs).toBeGreaterThan(0);
      expect(turn.ttsFirstByteMs).toBeGreaterThan(0);
    }
    byeAfterLastWords(messages, farCall);
  }, 150_000);

  it('stops talking when the callee speaks over it, and keeps only the words played', async () => {
    const long =
      'Sure. We help teams call their customers with an assistant that listens and answers. ' +
      'It books meetings, answers questions, and hands the call to a person when asked. ' +
      'Most teams start with a small campaign and grow from there.';
    const replies: Array<string | ChatReply> = [
      long,
      'Of course. What is your question?',
      { text: 'Thank you, goodbye.', toolCalls: [GOODBYE] },
    ];
    chat.set({ respond: (request) => replies[Math.min(userTurns(request), 3) - 1] });
    const { call, farCall, requests, said, lines } = await aiCall(
      'agent-barge-in',
      {
        hello: 'Hello?',
        line1: 'Yes, tell me about it.',
        line2: 'Wait, wait, I have a question.',
        line3: 'No, that is all, goodbye.',
      },
      // No backchannel list: any speech of minSpeechMs over the agent stops it, without waiting
      // for a transcription of it (pocketsphinx on a loaded machine can take longer than the
      // engine waits for one). Backchannels are the engine's unit tests'.
      { interruption: { minSpeechMs: 300, ignoreWords: [] } },
    );

    expect(call).toMatchObject({ status: 'COMPLETED', endedReason: 'agent-ended' });
    const agent = said('assistant');
    const cut = agent[1] ?? '';
    // What the agent said of the long answer before it stopped: a beginning of it, not all of it.
    expect(cut.length).toBeGreaterThan(0);
    expect(cut.length).toBeLessThan(long.length);
    expect(long.startsWith(cut.replace(/[.…\s]+$/, '').slice(0, 10))).toBe(true);
    expect(agent.slice(2)).toEqual(['Of course. What is your question?', 'Thank you, goodbye.']);
    // The model's history holds the same cut answer.
    const second = requests.find((request) => userTurns(request) === 2);
    const history = second?.messages.filter((message) => message.role === 'assistant') ?? [];
    expect(history.at(-1)?.content).toBe(cut);
    // On the wire: the agent stopped while the callee spoke, well before the whole answer (some
    // 12 s of speech) could have played.
    const stop = interruption(farCall, 1, lines.line2 ?? { onsetMs: 0 });
    expect(stop).not.toBeNull();
    expect((stop?.stoppedAt ?? 0) - (stop?.spokeAt ?? 0)).toBeLessThan(5000);
  }, 150_000);

  it('transfers the call with a SIP REFER to the transfer number when the model calls transfer_call', async () => {
    chat.set({
      respond: (request) =>
        lastIsTool(request)
          ? 'Transferring you now.'
          : { text: 'Of course, one moment.', toolCalls: [{ name: 'transfer_call', arguments: {} }] },
    });
    const { call, messages } = await aiCall(
      'agent-transfer',
      { hello: 'Hello?', line1: 'Can I talk to a person please?' },
      { transferNumber: '+14155550999' },
    );
    expect(call).toMatchObject({ endedReason: 'transferred' });
    const refer = messages.find((message) => !message.sent && message.startLine.startsWith('REFER '));
    expect(refer).toBeDefined();
    expect(refer?.header('Refer-To')).toContain('+14155550999');
    const notify = messages.find((message) => message.sent && message.startLine.startsWith('NOTIFY '));
    expect(notify?.text).toContain('SIP/2.0 200 OK');
    // We hang up our leg once the far end reports the transfer done.
    const bye = messages.find((message) => !message.sent && message.startLine.startsWith('BYE '));
    expect(bye?.at ?? 0).toBeGreaterThanOrEqual(notify?.at ?? Number.POSITIVE_INFINITY);
    expect(call.toolCalls).toContainEqual(expect.objectContaining({ name: 'transfer_call', error: null }));
  }, 150_000);

  it('sends DTMF digits as RFC 4733 telephone-events when the model calls send_dtmf', async () => {
    chat.set({
      respond: (request) =>
        lastIsTool(request)
          ? { text: 'Thank you, goodbye.', toolCalls: [GOODBYE] }
          : { toolCalls: [{ name: 'send_dtmf', arguments: { digits: '1' } }] },
    });
    const { call, farCall, messages } = await aiCall('agent-answer', {
      hello: 'Hello?',
      line1: 'Please press one to continue.',
    });
    // Our INVITE offered telephone-events; the far end heard the digit on the wire.
    const invite = messages.find((message) => message.startLine.startsWith('INVITE '));
    expect(invite?.text).toMatch(/a=rtpmap:101 telephone-event\/8000/);
    expect(farCall.digits).toBe('1');
    expect(call.toolCalls).toContainEqual(
      expect.objectContaining({ name: 'send_dtmf', arguments: { digits: '1' }, error: null }),
    );
    expect(call).toMatchObject({ endedReason: 'agent-ended' });
  }, 150_000);

  it('leaves the voicemail message after the greeting and its beep, then hangs up', async () => {
    const { call, farCall, messages, lines, requests, said } = await aiCall(
      'agent-listen',
      {
        hello: {
          text: 'Hi, you have reached Jordan. I cannot take your call right now. Please leave your name and number after the tone and I will call you back.',
          beepMs: 1000,
        },
      },
      { voicemailMessage: 'Hi {{name}}, this is Ava from Acme. Please call us back.' },
    );
    expect(call).toMatchObject({ status: 'VOICEMAIL', endedReason: 'voicemail' });
    expect(said('assistant')).toEqual(['Hi Jordan, this is Ava from Acme. Please call us back.']);
    // The message started after the beep had ended (the greeting plays from the answer on).
    const first = farCall.agentSpeech[0];
    expect(first).toBeDefined();
    expect((first?.start ?? 0) - farCall.answeredAt).toBeGreaterThanOrEqual(
      (lines.hello?.durationMs ?? 0) - 100,
    );
    // A machine is not talked with: the model was not asked anything.
    expect(requests).toHaveLength(0);
    byeAfterLastWords(messages, farCall);
  }, 150_000);

  it('reprompts a callee who says nothing more, then hangs up', async () => {
    chat.set({ respond: () => 'Are you still there?' });
    const { call, farCall, messages, said } = await aiCall(
      'agent-listen',
      { hello: 'Hello?' },
      { silence: { repromptMs: 3000, hangupMs: 8000 } },
    );
    expect(call).toMatchObject({ status: 'COMPLETED', endedReason: 'silence-timeout' });
    const agent = said('assistant');
    expect(agent[0]).toBe(GREETING);
    expect(agent.length).toBeGreaterThanOrEqual(2);
    expect(said('user')).toEqual([]);
    byeAfterLastWords(messages, farCall);
  }, 150_000);

  it('apologises and hangs up when the LLM fails, and the API still answers', async () => {
    chat.set({ fail: 500 });
    const { call, farCall, messages, requests, said } = await aiCall('agent-answer', {
      hello: 'Hello?',
      line1: 'Yes, I am interested.',
    });
    expect(call).toMatchObject({
      status: 'FAILED',
      endedReason: 'model-unavailable',
      failureSource: 'service',
      minutesCharged: 0,
    });
    expect(call.duration).toBeGreaterThan(0);
    expect(requests.length).toBeGreaterThanOrEqual(1);
    const entries = call.transcription as Array<{ role: string; content: string }>;
    expect(entries[0]).toEqual({ role: 'assistant', content: GREETING });
    // After the callee's words, the agent's last line is its apology.
    expect(entries.at(-1)?.role).toBe('assistant');
    expect(entries.at(-1)?.content).not.toBe(GREETING);
    expect(said('user')).toHaveLength(1);
    byeAfterLastWords(messages, farCall);
  }, 150_000);

  it('apologises and hangs up when the LLM server is down', async () => {
    // A server that was there and is gone: its port refuses connections.
    const gone = await startChatServer();
    await gone.close();
    const down = await startTestApp({ workers: true, env: appEnv(gone.url) });
    try {
      const downTrunk = trunkCalls(down, await down.createAccount({ minutes: 100 }));
      const { call, farCall, messages, said } = await aiCall(
        'agent-answer',
        { hello: 'Hello?', line1: 'Yes, I am interested.' },
        {},
        downTrunk,
      );
      expect(call).toMatchObject({
        status: 'FAILED',
        endedReason: 'model-unavailable',
        failureSource: 'service',
        minutesCharged: 0,
      });
      expect(call.duration).toBeGreaterThan(0);
      expect(said('assistant')[0]).toBe(GREETING);
      expect(said('assistant').length).toBeGreaterThanOrEqual(2);
      expect(said('user')).toHaveLength(1);
      byeAfterLastWords(messages, farCall);
    } finally {
      await down.close();
    }
  }, 150_000);

  it("calls the agent's HTTP tool, signed, and gives its answer to the model", async () => {
    const tool = await Receiver.start();
    tool.respond = () => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ booked: true, time: '10:00' }),
    });
    try {
      chat.set({
        respond: (request) =>
          lastIsTool(request)
            ? { text: 'You are booked for Tuesday at ten. Goodbye.', toolCalls: [GOODBYE] }
            : { toolCalls: [{ name: 'book_meeting', arguments: { day: 'Tuesday' } }] },
      });
      const { call, callId, requests, said } = await aiCall(
        'agent-answer',
        { hello: 'Hello?', line1: 'Yes, book me for Tuesday.' },
        {
          tools: [
            {
              name: 'book_meeting',
              description: 'Books a meeting with the contact',
              parameters: { type: 'object', properties: { day: { type: 'string' } }, required: ['day'] },
              url: tool.url('/tools/book'),
            },
          ],
        },
      );
      expect(call).toMatchObject({ endedReason: 'agent-ended' });
      const posts = tool.on('/tools/book');
      expect(posts).toHaveLength(1);
      expect(JSON.parse(posts[0]?.body ?? '{}')).toEqual({
        name: 'book_meeting',
        arguments: { day: 'Tuesday' },
        callId,
      });
      // Signed like webhooks, with the user's webhook secret: a receiver can check it.
      const secret = (await t.admin('GET', `/admin/v1/users/${account.userId}/webhook-secret`)).json()
        .secret as string;
      expect(verifySignatures(posts[0] as Received, secret)).toEqual({ hex: true, standard: true });
      // The model was offered the tool and given its answer.
      expect(requests[0]?.tools?.map((offered) => offered.function.name)).toContain('book_meeting');
      const answer = requests.flatMap((request) => request.messages).find((m) => m.role === 'tool');
      expect(JSON.parse(String(answer?.content))).toEqual({ booked: true, time: '10:00' });
      expect(call.toolCalls).toContainEqual(
        expect.objectContaining({
          name: 'book_meeting',
          arguments: { day: 'Tuesday' },
          result: { booked: true, time: '10:00' },
          error: null,
        }),
      );
      expect(said('assistant').at(-1)).toBe('You are booked for Tuesday at ten. Goodbye.');
    } finally {
      await tool.close();
    }
  }, 150_000);
});
