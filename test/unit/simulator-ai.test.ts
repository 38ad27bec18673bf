import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type BuiltVoiceModels, buildVoiceModels } from '../../src/adapters/models/index.js';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import type { CallEndedEvent, DialRecord, DialRequest } from '../../src/ports.js';
import { createLlmEngine } from '../../src/voice/engines/llm.js';
import { HttpToolCaller } from '../../src/voice/http-tools.js';
import { webhookDispatcher } from '../../src/webhooks/address-guard.js';
import {
  type ChatReply,
  type ChatRequestRecord,
  type ChatServer,
  startChatServer,
} from '../helpers/model-servers.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * Simulated calls holding AI conversations: the simulator, the answered-call session and the LLM
 * engine on the simulator's text transport, the agent and the persona callee both through the real
 * chat client against a local OpenAI-compatible server that streams scripted replies.
 */

const FIRST = 'Hi Jordan, this is Ava from Acme. Do you have a minute?';
const VOICEMAIL = 'Hi Jordan, this is Ava from Acme. Please call us back at your convenience.';

const details = (extra: Record<string, unknown> = {}) => ({
  agent_name: 'Ava',
  instructions: 'You sell Acme call automation. Offer a demo.',
  firstMessage: FIRST,
  voicemailMessage: VOICEMAIL,
  ...extra,
});

let callSeq = 0;
const request = (to: string, extra: Record<string, unknown> = {}): DialRequest => ({
  callId: `call_ai_${++callSeq}`,
  to,
  attempt: 1,
  agent: {
    id: 'agt_1',
    name: 'Sales',
    agentName: 'Ava',
    language: 'en-US',
    sipTrunkId: null,
    details: details(extra),
  },
  contact: { id: 'cnt_1', name: 'Jordan' },
});

/** Whether a request to the chat server is the persona's (its own system prompt) or the agent's. */
const isPersona = (record: ChatRequestRecord) =>
  String(record.messages[0]?.content ?? '').includes('answering your phone');

interface Script {
  agent: Array<string | ChatReply>;
  callee: Array<string | ChatReply>;
}

let server: ChatServer;
let script: Script;
let models: BuiltVoiceModels;
let provider: SimulatedVoiceProvider | null = null;

beforeEach(async () => {
  script = { agent: [], callee: [] };
  server = await startChatServer({
    respond: (record) => (isPersona(record) ? script.callee.shift() : script.agent.shift()) ?? 'Goodbye.',
  });
  models = buildVoiceModels({ llm: { url: server.url, model: 'test-model' }, stt: null, tts: null });
});

afterEach(async () => {
  await provider?.close();
  provider = null;
  await models.close();
  await server.close();
});

function simulator(options: { ringMs?: number; maxCallMs?: number; httpTools?: HttpToolCaller } = {}) {
  const events: CallEndedEvent[] = [];
  provider = new SimulatedVoiceProvider({
    ringMs: options.ringMs ?? 20,
    talkMs: 100,
    conversation: {
      engine: createLlmEngine({
        modelTimeoutMs: 2000,
        ...(options.httpTools ? { httpTools: options.httpTools } : {}),
      }),
      models,
      maxCallMs: options.maxCallMs ?? 60_000,
      callee: { thinkMs: 50, leaveGraceMs: 300, helloAfterMs: 5000 },
    },
  });
  provider.onCallEnded(async (event) => {
    events.push(event);
  });
  const ended = async (callId: string, timeoutMs = 20_000) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      const event = events.find((e) => e.callId === callId);
      if (event) return event;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`call ${callId} did not end within ${timeoutMs} ms`);
  };
  return { provider, events, ended };
}

const agentRequests = () => server.requests.filter((r) => !isPersona(r));
const personaRequests = () => server.requests.filter(isPersona);

describe('simulated AI calls', () => {
  it("holds a multi-turn conversation whose callee's words reach the agent's model; end_call ends it", async () => {
    script.callee.push('Sure, what is it about?', 'Yes, Tuesday afternoon works for me.');
    script.agent.push('We automate outbound calls. Would a demo on Tuesday help?', {
      text: 'Great, I have booked Tuesday afternoon. Thank you, Jordan!',
      toolCalls: [{ name: 'end_call', arguments: {} }],
    });
    const { provider, ended } = simulator();
    // ...0123: the digits sum to 27, the interested persona.
    const dial = request('+14155550123');
    await provider.dial(dial);
    await provider.dial(dial); // idempotent
    const event = await ended(dial.callId);
    expect(event).toMatchObject({ status: 'COMPLETED', endedReason: 'agent-ended', error: null });
    expect(event.transcription).toEqual([
      { role: 'assistant', content: FIRST },
      { role: 'user', content: 'Sure, what is it about?' },
      { role: 'assistant', content: 'We automate outbound calls. Would a demo on Tuesday help?' },
      { role: 'user', content: 'Yes, Tuesday afternoon works for me.' },
      { role: 'assistant', content: 'Great, I have booked Tuesday afternoon. Thank you, Jordan!' },
    ]);
    expect(event.toolCalls?.map((call) => call.name)).toEqual(['end_call']);
    // Text turns: the model's first token is measured; no speech stages ran.
    expect(event.turns?.length).toBeGreaterThanOrEqual(2);
    for (const turn of event.turns ?? []) {
      expect(turn).toMatchObject({ llmFirstTokenMs: expect.any(Number), sttMs: null, ttsFirstByteMs: null });
    }
    // The callee's words reached the agent's model, and the agent's the persona's.
    const lastAgent = agentRequests().at(-1)?.messages ?? [];
    expect(lastAgent).toContainEqual({ role: 'user', content: 'Yes, Tuesday afternoon works for me.' });
    const persona = personaRequests();
    expect(persona).toHaveLength(2);
    expect(persona[0]?.messages.at(-1)).toEqual({ role: 'user', content: FIRST });
    expect(persona[0]?.messages[0]?.content).toMatch(/You are Jordan/);
    // Duration: what the words take spoken (about 45 words), not the second the text took.
    expect(event.duration).toBeGreaterThanOrEqual(15);
    expect(event.answeredAt).not.toBeNull();
    expect(provider.dials).toHaveLength(1);
    expect(provider.activeCalls).toBe(0);
  });

  it('0008 asks not to be called again, and the call ends on the goodbyes', async () => {
    script.callee.push('Please take my number off your list and never call me again. Goodbye.');
    script.agent.push('Understood, Jordan. We will not call you again. Goodbye.');
    const { provider, ended } = simulator();
    const dial = request('+14155550008');
    await provider.dial(dial);
    const event = await ended(dial.callId);
    expect(event.status).toBe('COMPLETED');
    expect(['agent-ended', 'callee-hung-up']).toContain(event.endedReason);
    expect(event.transcription.map((entry) => entry.role)).toEqual(['assistant', 'user', 'assistant']);
    expect(event.transcription[1]?.content).toMatch(/never call me again/);
    expect(personaRequests()[0]?.messages[0]?.content).toMatch(/never to call you again/);
    expect(agentRequests().at(-1)?.messages).toContainEqual({
      role: 'user',
      content: 'Please take my number off your list and never call me again. Goodbye.',
    });
  });

  it('0004 is a machine: the voicemail message is left, VOICEMAIL', async () => {
    const { provider, ended } = simulator();
    const dial = request('+14155550004');
    await provider.dial(dial);
    const event = await ended(dial.callId);
    expect(event).toMatchObject({ status: 'VOICEMAIL', endedReason: 'voicemail' });
    expect(event.transcription).toEqual([{ role: 'assistant', content: VOICEMAIL }]);
    expect(server.requests).toHaveLength(0);
  });

  it('the LLM down: an apology and a hang-up with model-unavailable, never a stuck call', async () => {
    await server.close();
    const { provider, ended } = simulator();
    const dial = request('+14155550123', { firstMessage: null });
    await provider.dial(dial);
    const event = await ended(dial.callId);
    expect(event.endedReason).toBe('model-unavailable');
    expect(event.transcription.at(-1)?.role).toBe('assistant');
    expect(event.transcription.at(-1)?.content).toMatch(/sorry/i);
  });

  it('transfers to the agent’s transferNumber; a busy target refuses and the agent goes on', async () => {
    script.callee.push('Can I talk to a person?', 'OK, thanks.');
    script.agent.push(
      { toolCalls: [{ name: 'transfer_call', arguments: {} }] },
      'Sorry, nobody can take your call right now. Can I help instead?',
    );
    const { provider, ended } = simulator();
    const busy = request('+14155550123', { transferNumber: '+14155550001' });
    await provider.dial(busy);
    const refused = await ended(busy.callId);
    expect(refused.toolCalls?.[0]).toMatchObject({
      name: 'transfer_call',
      error: expect.stringMatching(/busy/i),
    });
    expect(refused.transcription.map((entry) => entry.content)).toContain(
      'Sorry, nobody can take your call right now. Can I help instead?',
    );

    script.callee.push('Can I talk to a person?');
    script.agent.push({ toolCalls: [{ name: 'transfer_call', arguments: {} }] });
    const ok = request('+14155550123', { transferNumber: '+14155550199' });
    await provider.dial(ok);
    const transferred = await ended(ok.callId);
    expect(transferred.endedReason).toBe('transferred');
  });

  it('a callee who says nothing: the agent reprompts, then hangs up (silence-timeout)', async () => {
    script.callee.push('*stays silent*', '*says nothing*');
    script.agent.push('Hello, are you still there?');
    const { provider, ended } = simulator();
    const dial = request('+14155550123', { silence: { repromptMs: 1000, hangupMs: 2500 } });
    await provider.dial(dial);
    const event = await ended(dial.callId);
    expect(event.endedReason).toBe('silence-timeout');
    expect(event.transcription).toEqual([
      { role: 'assistant', content: FIRST },
      { role: 'assistant', content: 'Hello, are you still there?' },
    ]);
  });

  it("ends at the agent's maxDurationSeconds (max-duration)", async () => {
    script.callee.push({ text: 'Well, let me think about it.', firstTokenMs: 5000 });
    const { provider, ended } = simulator();
    const dial = request('+14155550123', { maxDurationSeconds: 1 });
    await provider.dial(dial);
    const event = await ended(dial.callId);
    expect(event.endedReason).toBe('max-duration');
    expect(event.transcription).toEqual([{ role: 'assistant', content: FIRST }]);
  });

  it('sends DTMF when the model asks (recorded among the tool calls)', async () => {
    script.callee.push('You reached Acme. Press 1 for sales.', 'Sales, how can I help?');
    script.agent.push(
      { toolCalls: [{ name: 'send_dtmf', arguments: { digits: '1' } }] },
      { text: 'Hello, I am calling for Jordan. Goodbye.' },
    );
    const { provider, ended } = simulator();
    const dial = request('+14155550123');
    await provider.dial(dial);
    const event = await ended(dial.callId);
    expect(event.toolCalls?.[0]).toMatchObject({
      name: 'send_dtmf',
      arguments: { digits: '1' },
      error: null,
    });
    expect(event.endedReason).toBe('agent-ended');
  });

  it("calls the agent's HTTP tool and answers with what it returned", async () => {
    const receiver = await Receiver.start();
    const dispatcher = webhookDispatcher({ allowPrivate: true });
    try {
      receiver.respond = () => ({
        status: 200,
        headers: { 'content-type': 'application/json' },
        body: '{"status":"shipped"}',
      });
      const httpTools = new HttpToolCaller({
        dispatcher,
        allowPrivate: true,
        signingSecrets: async () => ['whsec_test-secret-0123456789'],
      });
      script.callee.push('Where is my order 42?', 'Great, thanks.');
      script.agent.push(
        { toolCalls: [{ name: 'order_status', arguments: { order: '42' } }] },
        'Your order 42 has shipped. Anything else?',
        'Goodbye, Jordan.',
      );
      const { provider, ended } = simulator({ httpTools });
      const tool = {
        name: 'order_status',
        description: 'The status of an order',
        parameters: { type: 'object', properties: { order: { type: 'string' } } },
        url: receiver.url('/tools/order'),
      };
      const dial = request('+14155550123', { tools: [tool] });
      await provider.dial(dial);
      const event = await ended(dial.callId);
      expect(JSON.parse(receiver.received[0]?.body ?? '{}')).toEqual({
        name: 'order_status',
        arguments: { order: '42' },
        callId: dial.callId,
      });
      expect(event.toolCalls?.[0]).toMatchObject({
        name: 'order_status',
        result: { status: 'shipped' },
        error: null,
      });
      expect(event.transcription.map((entry) => entry.content)).toContain(
        'Your order 42 has shipped. Anything else?',
      );
      const answered = agentRequests().find((r) => r.messages.some((m) => m.role === 'tool'));
      expect(answered?.messages.find((m) => m.role === 'tool')?.content).toContain('shipped');
    } finally {
      await receiver.close();
      await dispatcher.close();
    }
  });

  it('settles a conversation whose process died after the answer as cut off, and takes over one still ringing', async () => {
    const { provider, ended } = simulator({ ringMs: 1000 });
    const record = (sentAt: Date, answeredAt: Date | null): DialRecord => ({
      callId: 'x',
      owner: 'gone',
      provider: 'simulator',
      state: 'sent',
      createdAt: sentAt,
      sentAt,
      answeredAt,
      ended: null,
      ownerSeenAt: null,
    });
    const sentAt = new Date(Date.now() - 30_000);
    const answeredAt = new Date(sentAt.getTime() + 1000);
    const cut = await provider.lookup(request('+14155550123'), record(sentAt, answeredAt));
    expect(cut.ended).toMatchObject({
      status: 'FAILED',
      endedReason: 'error',
      answeredAt,
      duration: 1,
      error: expect.stringMatching(/cut off/),
    });
    // An end kept with the record (the conversation finished, the call row had not heard) is the end.
    const finished: CallEndedEvent = {
      callId: 'x',
      status: 'COMPLETED',
      duration: 20,
      answeredAt,
      endedAt: new Date(answeredAt.getTime() + 5000),
      error: null,
      transcription: [{ role: 'assistant', content: 'Goodbye.' }],
      endedReason: 'agent-ended',
    };
    const kept = await provider.lookup(request('+14155550123'), {
      ...record(sentAt, answeredAt),
      ended: finished,
    });
    expect(kept.ended).toBe(finished);
    // Unanswered outcomes are still rebuilt from the number.
    const busy = await provider.lookup(request('+14155550001'), record(sentAt, null));
    expect(busy.ended).toMatchObject({ status: 'BUSY' });

    script.callee.push('Hello, who is this?');
    script.agent.push({ text: 'Ava from Acme. Goodbye!', toolCalls: [{ name: 'end_call', arguments: {} }] });
    const ringing = request('+14155550123');
    const state = await provider.lookup(ringing, record(new Date(), null));
    expect(state).toEqual({ known: true, ended: null });
    expect((await ended(ringing.callId)).endedReason).toBe('agent-ended');
  });

  it('a process that stops before the answer reports the call cut off, unanswered', async () => {
    const { provider, ended } = simulator({ ringMs: 10_000 });
    const dial = request('+14155550123');
    await provider.dial(dial);
    await provider.close();
    const event = await ended(dial.callId, 1000);
    expect(event).toMatchObject({
      status: 'FAILED',
      duration: 0,
      answeredAt: null,
      error: expect.stringMatching(/before an answer/),
    });
    expect(server.requests).toHaveLength(0);
  });

  it('a process that stops hangs up its conversations and reports them cut off', async () => {
    script.agent.push({ text: 'Let me think.', firstTokenMs: 60_000 });
    const { provider, ended } = simulator();
    const dial = request('+14155550123', { firstMessage: null });
    await provider.dial(dial);
    while (agentRequests().length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await provider.close();
    const event = await ended(dial.callId, 1000);
    expect(event).toMatchObject({
      status: 'FAILED',
      endedReason: 'error',
      error: expect.stringMatching(/stopped/),
    });
  });
});
