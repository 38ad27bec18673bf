import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { OpenAiChatModel } from '../../src/adapters/models/chat.js';
import type { ChatMessage, VoiceModels } from '../../src/voice/contracts.js';
import { createLlmEngine } from '../../src/voice/engines/llm.js';
import { runAnsweredCall } from '../../src/voice/session.js';
import { agentFor } from '../helpers/agents.js';
import { TextFarEnd } from '../helpers/far-ends.js';
import { type ChatServer, downUrl, startChatServer } from '../helpers/model-servers.js';
import { Receiver, verifySignatures } from '../helpers/receiver.js';
import { testHttpTools } from '../helpers/tools.js';

/**
 * The LLM engine on text calls (the simulator's kind): the real chat client against a local
 * OpenAI-compatible server that streams scripted replies and tool calls, the answered-call
 * session, and a far end whose callee reads the agent's lines and answers in text.
 */

const { secret, httpTools, close: closeTools } = testHttpTools(2000);

let chat: ChatServer;
let receiver: Receiver;

beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver.close();
  await closeTools();
});
beforeEach(async () => {
  chat = await startChatServer();
  receiver.received.length = 0;
});
afterEach(async () => {
  await chat.close();
});

function modelsAt(url: string): VoiceModels {
  const unused = () => {
    throw new Error('a text call uses no speech models');
  };
  return {
    chat: new OpenAiChatModel({ url, model: 'test-model' }),
    stt: { name: 'none', transcribe: unused },
    tts: { name: 'none', synthesize: unused },
    detector: unused,
  };
}

async function call(farEnd: TextFarEnd, details: Record<string, unknown>, url = chat.url) {
  return runAnsweredCall({
    callId: 'call_text_1',
    transport: farEnd,
    agent: agentFor(details),
    contact: { id: 'cnt_1', name: 'Priya Shah' },
    variables: { name: 'Priya Shah', firstName: 'Priya', company: 'Acme' },
    engine: createLlmEngine({ httpTools, modelTimeoutMs: 3000 }),
    models: modelsAt(url),
    amd: false,
    maxCallMs: 60_000,
  });
}

const toolNames = (index: number) => (chat.requests[index]?.tools ?? []).map((tool) => tool.function.name);
const lastMessage = (index: number): ChatMessage | undefined => chat.requests[index]?.messages.at(-1);

describe('the LLM engine on a text call', () => {
  it('holds a three-turn conversation: the callee words reach the model, its replies reach the callee', async () => {
    chat.push(
      'Great. Would Tuesday at ten work for the demo?',
      'Perfect, I have booked Tuesday at ten.',
      'Thanks Priya, talk to you on Tuesday. Goodbye!',
    );
    const farEnd = new TextFarEnd();
    const answers = ['Yes, I have a minute.', 'Tuesday at ten works.', 'No, that is all.'];
    farEnd.answer = (_line, index) => answers[index];
    const outcome = await call(farEnd, {
      instructions: 'Book a demo with {{firstName}} from {{company}}.',
      firstMessage: 'Hi {{firstName}}, this is Ana from Acme. Do you have a minute?',
    });

    expect(outcome.endedReason).toBe('agent-ended');
    expect(farEnd.hungUpBy).toBe('agent');
    expect(farEnd.agentLines).toEqual([
      'Hi Priya, this is Ana from Acme. Do you have a minute?',
      'Great. Would Tuesday at ten work for the demo?',
      'Perfect, I have booked Tuesday at ten.',
      'Thanks Priya, talk to you on Tuesday. Goodbye!',
    ]);
    expect(chat.requests).toHaveLength(3);
    for (const [index, answer] of answers.entries()) {
      expect(chat.requests[index]?.stream).toBe(true);
      expect(chat.lastUserText(index)).toBe(answer);
    }
    const system = chat.requests[0]?.messages[0];
    expect(system?.role).toBe('system');
    expect(system?.content).toContain('Book a demo with Priya from Acme.');
    expect(toolNames(0)).toEqual(['end_call', 'send_dtmf', 'leave_voicemail']);
    // The history the model sees holds both sides in order.
    expect(chat.requests[2]?.messages.slice(1).map((m) => [m.role, m.content])).toEqual([
      ['assistant', 'Hi Priya, this is Ana from Acme. Do you have a minute?'],
      ['user', 'Yes, I have a minute.'],
      ['assistant', 'Great. Would Tuesday at ten work for the demo?'],
      ['user', 'Tuesday at ten works.'],
      ['assistant', 'Perfect, I have booked Tuesday at ten.'],
      ['user', 'No, that is all.'],
    ]);
    expect(outcome.transcription.map((entry) => entry.role)).toEqual([
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
    expect(outcome.turns).toHaveLength(3);
    for (const turn of outcome.turns) {
      expect(turn.llmFirstTokenMs).toEqual(expect.any(Number));
      expect(turn).toMatchObject({ sttMs: null, ttsFirstByteMs: null, voiceToVoiceMs: null });
    }
  });

  it('lets the model open the call from its instructions when there is no first message', async () => {
    chat.push('Hello, this is Ana from Acme calling about your order.', 'Goodbye!');
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 0 ? 'Oh, hello.' : null);
    const outcome = await call(farEnd, { instructions: 'Call about the order.' });
    expect(chat.requests[0]?.messages.map((m) => m.role)).toEqual(['system']);
    expect(farEnd.agentLines[0]).toBe('Hello, this is Ana from Acme calling about your order.');
    expect(outcome.endedReason).toBe('agent-ended');
  });

  it('end_call: the goodbye is said, then the call is hung up', async () => {
    chat.push({ text: 'Thanks for your time.', toolCalls: [{ name: 'end_call' }] });
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 0 ? 'Not interested, thanks.' : null);
    const outcome = await call(farEnd, { firstMessage: 'Hi, this is Ana from Acme.' });
    expect(outcome.endedReason).toBe('agent-ended');
    expect(farEnd.agentLines.at(-1)).toBe('Thanks for your time.');
    expect(outcome.transcription.at(-1)).toEqual({ role: 'assistant', content: 'Thanks for your time.' });
    expect(outcome.toolCalls).toEqual([
      expect.objectContaining({ name: 'end_call', arguments: {}, error: null }),
    ]);
  });

  it('transfer_call accepted: the call is transferred to the agent number', async () => {
    chat.push({ text: 'Let me put you through to a colleague.', toolCalls: [{ name: 'transfer_call' }] });
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 0 ? 'Can I talk to a person?' : null);
    const outcome = await call(farEnd, { firstMessage: 'Hi, this is Ana.', transferNumber: '+14155550100' });
    expect(toolNames(0)).toContain('transfer_call');
    expect(farEnd.transfers).toEqual(['+14155550100']);
    expect(outcome.endedReason).toBe('transferred');
    expect(outcome.toolCalls).toEqual([
      expect.objectContaining({
        name: 'transfer_call',
        result: { ok: true, to: '+14155550100' },
        error: null,
      }),
    ]);
  });

  it('transfer_call refused: the model hears why, says so, and the call goes on', async () => {
    chat.push(
      { text: 'Let me put you through.', toolCalls: [{ name: 'transfer_call' }] },
      'Sorry, nobody can take the call right now. Can I help you myself?',
      { text: 'Alright, goodbye.', toolCalls: [{ name: 'end_call' }] },
    );
    const farEnd = new TextFarEnd();
    farEnd.transferAnswer = () => ({ ok: false, reason: 'busy here (486)' });
    const answers: Array<string | null> = [null, 'A person please.', null, 'No thanks.'];
    farEnd.answer = (_line, index) => (index === 0 ? answers[1] : index === 2 ? answers[3] : null);
    const outcome = await call(farEnd, { firstMessage: 'Hi, this is Ana.', transferNumber: '+14155550100' });
    expect(farEnd.transfers).toEqual(['+14155550100']);
    const toolAnswer = lastMessage(1);
    expect(toolAnswer?.role).toBe('tool');
    expect(toolAnswer?.content).toContain('busy here (486)');
    expect(farEnd.agentLines).toContain('Sorry, nobody can take the call right now. Can I help you myself?');
    expect(outcome.endedReason).toBe('agent-ended');
    expect(outcome.toolCalls.map((c) => [c.name, c.error])).toEqual([
      ['transfer_call', 'the transfer failed: busy here (486)'],
      ['end_call', null],
    ]);
  });

  it('offers no transfer_call without a transfer number', async () => {
    chat.push({ text: 'Goodbye.', toolCalls: [{ name: 'end_call' }] });
    const farEnd = new TextFarEnd();
    farEnd.answer = () => 'Hi.';
    await call(farEnd, { firstMessage: 'Hello.' });
    expect(toolNames(0)).not.toContain('transfer_call');
  });

  it('send_dtmf: keypad tones go to the far end and the model hears they went', async () => {
    chat.push(
      { toolCalls: [{ name: 'send_dtmf', arguments: { digits: '2#' } }] },
      'I chose sales in the menu.',
      { text: 'Goodbye.', toolCalls: [{ name: 'end_call' }] },
    );
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) =>
      index === 0 ? 'For sales press 2, then pound.' : index === 1 ? 'Hold on.' : null;
    const outcome = await call(farEnd, { firstMessage: 'Hello.' });
    expect(farEnd.dtmf).toEqual(['2#']);
    expect(JSON.parse(lastMessage(1)?.content ?? '{}')).toEqual({ ok: true, digits: '2#' });
    expect(outcome.toolCalls[0]).toMatchObject({
      name: 'send_dtmf',
      arguments: { digits: '2#' },
      error: null,
    });
  });

  it('send_dtmf to a far end without telephone-events: the model is told', async () => {
    chat.push(
      { toolCalls: [{ name: 'send_dtmf', arguments: { digits: '1' } }] },
      {
        text: 'I could not press the key. Goodbye.',
        toolCalls: [{ name: 'end_call' }],
      },
    );
    const farEnd = new TextFarEnd();
    farEnd.takesDtmf = false;
    farEnd.answer = (_line, index) => (index === 0 ? 'Press 1.' : null);
    const outcome = await call(farEnd, { firstMessage: 'Hello.' });
    expect(outcome.toolCalls[0]?.error).toBe('the far end does not take keypad tones');
    expect(lastMessage(1)?.content).toContain('does not take keypad tones');
  });

  it('leave_voicemail: the voicemail message is left and the call ends as voicemail', async () => {
    chat.push({ toolCalls: [{ name: 'leave_voicemail' }] });
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) =>
      index === 0 ? 'You have reached the voicemail of Priya. Leave a message after the tone.' : null;
    const outcome = await call(farEnd, {
      firstMessage: 'Hello?',
      voicemailMessage: 'Hi {{firstName}}, Ana from Acme here. Please call us back.',
    });
    expect(farEnd.agentLines.at(-1)).toBe('Hi Priya, Ana from Acme here. Please call us back.');
    expect(outcome.endedReason).toBe('voicemail');
    expect(outcome.toolCalls[0]).toMatchObject({ name: 'leave_voicemail', error: null });
  });

  it('silence: reprompts after repromptMs, then hangs up after hangupMs', async () => {
    chat.push('Are you still there?');
    const farEnd = new TextFarEnd();
    const outcome = await call(farEnd, {
      firstMessage: 'Hi, this is Ana. Can you hear me?',
      silence: { repromptMs: 400, hangupMs: 1500 },
    });
    expect(outcome.endedReason).toBe('silence-timeout');
    expect(farEnd.hungUpBy).toBe('agent');
    expect(farEnd.agentLines).toEqual(['Hi, this is Ana. Can you hear me?', 'Are you still there?']);
    expect(chat.requests).toHaveLength(1);
    expect(chat.lastUserText(0)).toMatch(/said nothing/);
    // The reprompt note is for the model only: the transcript holds what was said.
    expect(outcome.transcription).toEqual([
      { role: 'assistant', content: 'Hi, this is Ana. Can you hear me?' },
      { role: 'assistant', content: 'Are you still there?' },
    ]);
  });

  it('an answer after the reprompt carries the call on', async () => {
    chat.push('Are you still there?', { text: 'Good. Bye for now.', toolCalls: [{ name: 'end_call' }] });
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 1 ? 'Yes, sorry, I am here.' : null);
    const outcome = await call(farEnd, {
      firstMessage: 'Hi, this is Ana.',
      silence: { repromptMs: 300, hangupMs: 5000 },
    });
    expect(outcome.endedReason).toBe('agent-ended');
    expect(chat.lastUserText(1)).toBe('Yes, sorry, I am here.');
  });

  it('the LLM down: a short apology, then a hang-up with reason model-unavailable', async () => {
    const farEnd = new TextFarEnd();
    farEnd.answer = () => 'Hello?';
    const outcome = await call(farEnd, { firstMessage: 'Hi, this is Ana.' }, await downUrl());
    expect(outcome.endedReason).toBe('model-unavailable');
    expect(farEnd.hungUpBy).toBe('agent');
    expect(farEnd.agentLines).toHaveLength(2);
    expect(farEnd.agentLines[1]).toMatch(/sorry/i);
    expect(outcome.transcription.at(-1)?.content).toMatch(/sorry/i);
  });

  it('a 500 from the model: apology and model-unavailable', async () => {
    chat.push({ fail: 500 });
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 0 ? 'Hello?' : null);
    const outcome = await call(farEnd, { firstMessage: 'Hi, this is Ana.' });
    expect(outcome.endedReason).toBe('model-unavailable');
    expect(farEnd.agentLines.at(-1)).toMatch(/sorry/i);
    // The call's error says what failed, not only that something did.
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toMatch(/^The conversation failed: .*500/);
  });

  it('a stream broken mid-reply: what was complete is said, then the apology and model-unavailable', async () => {
    chat.push('All good, thanks.', {
      text: 'Let me see. Your order is on its way and',
      drop: true,
      chunkDelayMs: 5,
    });
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 0 ? 'Hi.' : index === 1 ? 'Where is my order?' : null);
    const outcome = await call(farEnd, { firstMessage: 'Hi, this is Ana.' });
    expect(outcome.endedReason).toBe('model-unavailable');
    expect(farEnd.agentLines.at(-1)).toMatch(/sorry/i);
    expect(outcome.transcription.filter((entry) => entry.content.includes('on its way and'))).toEqual([]);
  });

  it('a malformed stream: apology and model-unavailable', async () => {
    chat.push({ text: 'Sure thing, let me see what I can do for you today.', malformed: true });
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 0 ? 'Hello?' : null);
    const outcome = await call(farEnd, { firstMessage: 'Hi, this is Ana.' });
    expect(outcome.endedReason).toBe('model-unavailable');
    expect(farEnd.agentLines.at(-1)).toMatch(/sorry/i);
    expect(farEnd.hungUpBy).toBe('agent');
  });

  it('a model that never answers: the call does not hang, it ends with an apology', async () => {
    chat.set({ hang: true });
    const farEnd = new TextFarEnd();
    farEnd.answer = () => 'Hello?';
    const outcome = await call(farEnd, { firstMessage: 'Hi, this is Ana.' });
    expect(outcome.endedReason).toBe('model-unavailable');
    expect(farEnd.agentLines.at(-1)).toMatch(/sorry/i);
    await vi.waitFor(() => expect(chat.aborted).toBe(1), { timeout: 10_000 });
  });

  it('an HTTP tool: a signed POST to its url, and its JSON answer goes to the model', async () => {
    receiver.respond = () => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'shipped', eta: 'Friday' }),
    });
    chat.push(
      { text: 'Let me check that.', toolCalls: [{ name: 'check_order', arguments: { orderId: 'A-17' } }] },
      { text: 'Your order shipped and arrives Friday. Goodbye!' },
    );
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 0 ? 'Where is order A-17?' : null);
    const outcome = await call(farEnd, {
      firstMessage: 'Hi, this is Ana from Acme.',
      tools: [
        {
          name: 'check_order',
          description: 'Looks an order up by its id',
          parameters: { type: 'object', properties: { orderId: { type: 'string' } }, required: ['orderId'] },
          url: receiver.url('/tools/order'),
        },
      ],
    });
    expect(toolNames(0)).toContain('check_order');
    const [request] = receiver.on('/tools/order');
    expect(request && JSON.parse(request.body)).toEqual({
      name: 'check_order',
      arguments: { orderId: 'A-17' },
      callId: 'call_text_1',
    });
    expect(request && verifySignatures(request, secret)).toEqual({ hex: true, standard: true });
    const toolMessage = lastMessage(1);
    expect(toolMessage).toMatchObject({ role: 'tool', tool_call_id: 'call_1_0' });
    expect(JSON.parse(toolMessage?.content ?? 'null')).toEqual({ status: 'shipped', eta: 'Friday' });
    expect(outcome.toolCalls).toEqual([
      expect.objectContaining({
        name: 'check_order',
        arguments: { orderId: 'A-17' },
        result: { status: 'shipped', eta: 'Friday' },
        error: null,
      }),
    ]);
    expect(farEnd.agentLines).toContain('Your order shipped and arrives Friday. Goodbye!');
    expect(outcome.endedReason).toBe('agent-ended');
  });

  it('an HTTP tool that fails: the model is told, and goes on', async () => {
    receiver.respond = () => ({ status: 500, body: 'database down' });
    chat.push(
      { toolCalls: [{ name: 'check_order', arguments: { orderId: 'A-17' } }] },
      { text: 'I cannot look that up right now, sorry. Goodbye.' },
    );
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 0 ? 'Where is my order?' : null);
    const outcome = await call(farEnd, {
      firstMessage: 'Hi.',
      tools: [
        {
          name: 'check_order',
          description: 'Order',
          parameters: { type: 'object' },
          url: receiver.url('/t'),
        },
      ],
    });
    expect(JSON.parse(lastMessage(1)?.content ?? '{}')).toEqual({
      ok: false,
      error: 'the tool answered 500: database down',
    });
    expect(outcome.toolCalls[0]?.error).toBe('the tool answered 500: database down');
    expect(outcome.endedReason).toBe('agent-ended');
  });

  it('at most 5 rounds of tool calls in a turn, then the model answers without tools', async () => {
    chat.set({
      respond: (request) =>
        request.tools
          ? { toolCalls: [{ name: 'send_dtmf', arguments: { digits: '1' } }] }
          : 'I pressed the keys. Goodbye.',
    });
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => (index === 0 ? 'Press 1 to continue.' : null);
    const outcome = await call(farEnd, { firstMessage: 'Hello.' });
    expect(chat.requests).toHaveLength(6);
    expect(chat.requests.slice(0, 5).every((request) => (request.tools ?? []).length > 0)).toBe(true);
    expect(chat.requests[5]?.tools).toBeUndefined();
    expect(farEnd.dtmf).toEqual(['1', '1', '1', '1', '1']);
    expect(outcome.toolCalls).toHaveLength(5);
    expect(farEnd.agentLines.at(-1)).toBe('I pressed the keys. Goodbye.');
    expect(outcome.endedReason).toBe('agent-ended');
  });

  it('stops when the callee hangs up mid-reply', async () => {
    chat.push({ text: 'Let me tell you all about our offer in great detail.', firstTokenMs: 400 });
    const farEnd = new TextFarEnd();
    farEnd.answer = (_line, index) => {
      if (index === 0) setTimeout(() => farEnd.calleeHangsUp(), 150);
      return index === 0 ? 'Tell me more.' : null;
    };
    const outcome = await call(farEnd, { firstMessage: 'Hi.' });
    expect(outcome.endedReason).toBe('callee-hung-up');
    expect(farEnd.agentLines).toEqual(['Hi.']);
  });
});
