import { afterEach, describe, expect, it } from 'vitest';
import { OpenAiChatModel } from '../../src/adapters/models/chat.js';
import { SimulatedCallee, spokenWords } from '../../src/adapters/voice/sim-persona.js';
import { SimulatedTextTransport, simulatedTransfer } from '../../src/adapters/voice/sim-transport.js';
import { type ChatServer, startChatServer } from '../helpers/model-servers.js';

const callee = (script: 'interested' | 'do_not_call' = 'interested', maxReplies?: number) =>
  new SimulatedCallee({
    script,
    contactName: 'Jordan',
    agentName: 'Ava',
    chat: null,
    ...(maxReplies ? { maxReplies } : {}),
  });

/** The callee's next line on `transport`. */
const heard = (transport: SimulatedTextTransport) =>
  new Promise<string>((resolve) => {
    const stop = transport.onText((text) => {
      stop();
      resolve(text);
    });
  });

const hungUp = (transport: SimulatedTextTransport) =>
  new Promise<unknown>((resolve) => {
    if (transport.signal.aborted) resolve(transport.signal.reason);
    transport.signal.addEventListener('abort', () => resolve(transport.signal.reason), { once: true });
  });

describe('the simulated callee without a model', () => {
  it('answers with the canned lines of its persona, then takes its leave', async () => {
    const person = callee('interested', 10);
    const signal = new AbortController().signal;
    const first = await person.reply('Hi Jordan, this is Ava. Do you have a minute?', signal);
    expect(first).toEqual({ say: 'Sure, this is Jordan. What is it about?', leaving: false });
    await person.reply('We automate outbound calls. A demo?', signal);
    await person.reply('Booked for Tuesday.', signal);
    const farewell = await person.reply('Anything else?', signal);
    expect(farewell).toEqual({ say: 'Sorry, I have to go now. Goodbye.', leaving: true });
    expect(await person.reply('Hello?', signal)).toEqual({ say: null, leaving: true });
  });

  it('0008 asks not to be called again and leaves', async () => {
    const reply = await callee('do_not_call').reply('Hi Jordan, this is Ava.', new AbortController().signal);
    expect(reply.say).toMatch(/do not call me again/);
    expect(reply.leaving).toBe(true);
  });

  it("says nothing more after the agent's goodbye", async () => {
    const reply = await callee().reply('Thank you, goodbye!', new AbortController().signal);
    expect(reply).toEqual({ say: null, leaving: true });
  });

  it('stops after its cap on replies', async () => {
    const person = callee('interested', 1);
    const signal = new AbortController().signal;
    expect((await person.reply('Hello', signal)).leaving).toBe(false);
    expect(await person.reply('And?', signal)).toEqual({
      say: 'Sorry, I have to go now. Goodbye.',
      leaving: true,
    });
  });
});

describe('spoken words', () => {
  it('drops stage directions, speaker labels and quotes', () => {
    expect(spokenWords('*sighs* Jordan: "Not now, thanks." [hangs up]')).toBe('Not now, thanks.');
  });
});

describe('SimulatedTextTransport', () => {
  it("answers the agent's words after a think time, all of them at once", async () => {
    const transport = new SimulatedTextTransport({ callee: callee(), thinkMs: 30 });
    expect(transport.media).toBe('text');
    expect(await transport.amd()).toBe('human');
    const line = heard(transport);
    transport.sayText('Hi Jordan, this is Ava.');
    transport.sayText('Do you have a minute?');
    expect(await line).toBe('Sure, this is Jordan. What is it about?');
    transport.hangup();
    expect(await hungUp(transport)).toBe('local-hangup');
  });

  it('hangs up after taking its leave unless the agent hangs up first', async () => {
    const transport = new SimulatedTextTransport({
      callee: callee('do_not_call'),
      thinkMs: 10,
      leaveGraceMs: 50,
    });
    const line = heard(transport);
    transport.sayText('Hi, this is Ava.');
    expect(await line).toMatch(/do not call me again/);
    expect(await hungUp(transport)).toBe('callee-hung-up');
  });

  it('says hello when the agent says nothing first', async () => {
    const transport = new SimulatedTextTransport({ callee: callee(), helloAfterMs: 20 });
    expect(await heard(transport)).toBe('Hello?');
    transport.hangup();
  });

  it('is a machine for the voicemail numbers: it takes the message and answers nothing', async () => {
    const transport = new SimulatedTextTransport({ callee: null, thinkMs: 10, maxCallMs: 200 });
    expect(await transport.amd()).toBe('machine');
    const lines: string[] = [];
    transport.onText((text) => lines.push(text));
    transport.sayText('Hello, this is Ava, please call me back.');
    expect(await hungUp(transport)).toBe('time-limit');
    expect(lines).toEqual([]);
  });

  it('accepts DTMF, and transfers except to a busy, unanswered or failing number', async () => {
    const transport = new SimulatedTextTransport({ callee: callee() });
    expect(await transport.sendDtmf('12#')).toBe(true);
    expect(transport.dtmf).toEqual(['12#']);
    expect(await transport.transfer('+14155550001')).toEqual({ ok: false, reason: 'Line busy' });
    expect(await transport.transfer('+14155550199')).toEqual({ ok: true });
    expect(transport.transfers).toEqual(['+14155550199']);
    expect(simulatedTransfer('+14155550003').ok).toBe(false);
    transport.hangup();
    expect(await transport.sendDtmf('1')).toBe(false);
  });
});

describe('the simulated callee through the chat model', () => {
  let server: ChatServer | null = null;
  afterEach(async () => {
    await server?.close();
    server = null;
  });

  const persona = (chat: OpenAiChatModel, script: 'interested' | 'do_not_call' = 'interested') =>
    new SimulatedCallee({ script, contactName: 'Jordan', agentName: 'Ava', chat });

  it("answers the agent's words with the model's, its own system prompt and the whole exchange sent", async () => {
    server = await startChatServer({
      replies: ['*picks up* Jordan: "Sure, what is it about?"', 'How much does it cost?'],
    });
    const chat = new OpenAiChatModel({ url: server.url, model: 'persona-test' });
    const person = persona(chat);
    const signal = new AbortController().signal;
    expect(await person.reply('Hi Jordan, this is Ava.', signal)).toEqual({
      say: 'Sure, what is it about?',
      leaving: false,
    });
    expect(await person.reply('We automate outbound calls.', signal)).toEqual({
      say: 'How much does it cost?',
      leaving: false,
    });
    const second = server.requests[1];
    expect(second?.model).toBe('persona-test');
    expect(second?.stream).toBe(true);
    expect(second?.messages[0]).toMatchObject({
      role: 'system',
      content: expect.stringContaining('You are Jordan'),
    });
    expect(second?.messages.slice(1)).toEqual([
      { role: 'user', content: 'Hi Jordan, this is Ava.' },
      { role: 'assistant', content: 'Sure, what is it about?' },
      { role: 'user', content: 'We automate outbound calls.' },
    ]);
  });

  it("0008's prompt asks not to be called again; the model's goodbye ends its part", async () => {
    server = await startChatServer({ replies: ['Take me off your list and never call again. Goodbye.'] });
    const person = persona(new OpenAiChatModel({ url: server.url, model: 'm' }), 'do_not_call');
    const reply = await person.reply('Hi, this is Ava.', new AbortController().signal);
    expect(reply).toEqual({ say: 'Take me off your list and never call again. Goodbye.', leaving: true });
    expect(server.requests[0]?.messages[0]?.content).toMatch(/never to call you again/);
  });

  it('goes on with its canned lines when the model fails, is down or hangs', async () => {
    server = await startChatServer({ replies: [{ fail: 500 }, { hang: true }] });
    const chat = new OpenAiChatModel({ url: server.url, model: 'm', firstTokenTimeoutMs: 200 });
    const person = persona(chat);
    const signal = new AbortController().signal;
    expect((await person.reply('Hi Jordan.', signal)).say).toBe('Sure, this is Jordan. What is it about?');
    expect((await person.reply('A demo?', signal)).say).toBe(
      'Yes, that sounds interesting. Tuesday afternoon works for me.',
    );
    await server.close();
    expect((await person.reply('Booked.', signal)).say).toBe('Thanks, talk then.');
  });
});
