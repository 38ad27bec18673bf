import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type BuiltVoiceModels, buildVoiceModels } from '../../src/adapters/models/index.js';
import { RealtimeConnection } from '../../src/adapters/models/realtime.js';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import type { BargeInEvent } from '../../src/voice/engines/llm.js';
import { createRealtimeEngine } from '../../src/voice/engines/realtime.js';
import { runAnsweredCall } from '../../src/voice/session.js';
import { agentFor } from '../helpers/agents.js';
import { AudioFarEnd } from '../helpers/far-ends.js';
import { downUrl } from '../helpers/model-servers.js';
import { type RealtimeServer, startRealtimeServer } from '../helpers/realtime-server.js';
import { Receiver, verifySignatures } from '../helpers/receiver.js';
import { testHttpTools } from '../helpers/tools.js';

/**
 * The realtime engine on audio calls, in real time: the real engine and its WebSocket client
 * against a local server that speaks the OpenAI Realtime API's events (its own voice activity on
 * the audio it is sent, espeak-ng speech as audio deltas, transcripts, function calls), the
 * answered-call session, and a far end that speaks espeak-ng speech in 20 ms frames and records
 * what the agent played.
 */

const { secret, httpTools, close: closeTools } = testHttpTools(5000);

let server: RealtimeServer;
let farEnd: AudioFarEnd;
let receiver: Receiver;
let built: BuiltVoiceModels | null = null;

beforeAll(async () => {
  receiver = await Receiver.start();
});
afterAll(async () => {
  await receiver.close();
  await closeTools();
});
beforeEach(async () => {
  farEnd = new AudioFarEnd();
  server = await startRealtimeServer({ transcribe: () => farEnd.heardSoFar() });
  receiver.received.length = 0;
});
afterEach(async () => {
  farEnd.calleeHangsUp();
  await built?.close();
  built = null;
  await server.close();
});

async function call(
  details: Record<string, unknown>,
  options: { url?: string; bargeIns?: BargeInEvent[]; modelTimeoutMs?: number } = {},
) {
  // The call's own text-to-speech is espeak-ng here (no OUTDIAL_TTS_URL): it speaks the apology.
  built = buildVoiceModels({ llm: null, stt: null, tts: null });
  return runAnsweredCall({
    callId: 'call_rt_1',
    transport: farEnd,
    agent: agentFor(details),
    contact: { id: 'cnt_1', name: 'Priya Shah' },
    variables: { name: 'Priya Shah', firstName: 'Priya' },
    engine: createRealtimeEngine({
      url: options.url ?? server.url,
      model: 'test-realtime',
      apiKey: 'rt-key-1',
      connect: RealtimeConnection.open,
      httpTools,
      modelTimeoutMs: options.modelTimeoutMs ?? 5000,
      onBargeIn: (event) => options.bargeIns?.push(event),
    }),
    models: built,
    amd: false,
    maxCallMs: 90_000,
  });
}

describe('the realtime engine on an audio call', () => {
  it('holds a spoken conversation: session, first message, transcript in order, end_call, metrics', async () => {
    server.push(
      'Hi Priya, this is Ana from Acme. Do you have a minute?',
      'Great. Would Tuesday at ten work?',
      { text: 'Thank you Priya. Goodbye!', toolCalls: [{ name: 'end_call' }] },
    );
    const lines = ['Yes I have a minute.', 'Tuesday at ten works.'];
    const talking = farEnd.answerLines(lines);
    const outcome = await call({
      instructions: 'You book dental appointments for Acme.',
      firstMessage: 'Hi {{firstName}}, this is Ana from Acme. Do you have a minute?',
      voiceId: 'alloy',
    });
    await talking;

    // The connection: the model in the query, the key as a Bearer token.
    expect(server.connections).toHaveLength(1);
    const [connection] = server.connections;
    expect(connection?.url).toBe('/v1/realtime?model=test-realtime');
    expect(connection?.headers.authorization).toBe('Bearer rt-key-1');
    // The session: the agent's prompt, its voice, 24 kHz PCM16 both ways, server VAD, the tools.
    const [update] = server.received('session.update');
    const session = update?.session as Record<string, unknown>;
    expect(session.instructions).toContain('You book dental appointments for Acme.');
    expect(session).toMatchObject({
      voice: 'alloy',
      input_audio_format: 'pcm16',
      output_audio_format: 'pcm16',
      turn_detection: { type: 'server_vad', create_response: true },
    });
    expect((session.tools as Array<{ name: string }>).map((tool) => tool.name)).toEqual([
      'end_call',
      'send_dtmf',
      'leave_voicemail',
    ]);
    // The first message was asked for with the variables filled in; the callee's turns were
    // answered by the server's own voice activity, with no further response.create.
    const creates = server.received('response.create');
    expect(creates).toHaveLength(1);
    expect(JSON.stringify(creates[0])).toContain('Hi Priya, this is Ana from Acme. Do you have a minute?');
    // The audio sent was the call's, at 24 kHz: about as long as the call itself.
    const appended = server
      .received('input_audio_buffer.append')
      .reduce((sum, event) => sum + Buffer.from(String(event.audio), 'base64').length / 2, 0);
    expect(appended).toBeGreaterThan(24_000 * 3);

    expect(outcome.endedReason).toBe('agent-ended');
    expect(farEnd.hungUpBy).toBe('agent');
    expect(outcome.transcription).toEqual([
      { role: 'assistant', content: 'Hi Priya, this is Ana from Acme. Do you have a minute?' },
      { role: 'user', content: lines[0] },
      { role: 'assistant', content: 'Great. Would Tuesday at ten work?' },
      { role: 'user', content: lines[1] },
      { role: 'assistant', content: 'Thank you Priya. Goodbye!' },
    ]);
    expect(outcome.toolCalls).toEqual([expect.objectContaining({ name: 'end_call', error: null })]);
    // The goodbye played out before the hang-up: all of its audio went out on the line.
    expect(farEnd.agentSpeech.length).toBeGreaterThanOrEqual(3);
    const goodbye = await synthesize('Thank you Priya. Goodbye!', { voice: 'en-us' });
    expect(farEnd.agentSpeech.at(-1)?.samples ?? 0).toBeGreaterThanOrEqual(goodbye.length - 480);
    // One measured turn per callee turn: voice-to-voice from their speech's end to our first packet.
    expect(outcome.turns).toHaveLength(2);
    for (const turn of outcome.turns) {
      expect(turn.endpointingMs).toEqual(expect.any(Number));
      expect(turn.llmFirstTokenMs).toEqual(expect.any(Number));
      expect(turn.voiceToVoiceMs).toEqual(expect.any(Number));
      // The first packet follows the turn's end (one 20 ms tick of slack: the far end's clock).
      expect(turn.voiceToVoiceMs ?? 0).toBeGreaterThanOrEqual((turn.endpointingMs ?? 0) - 20);
    }
  }, 60_000);

  it('an HTTP tool: called signed, its answer sent back as function_call_output, then a new reply', async () => {
    receiver.respond = () => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'shipped', eta: 'Friday' }),
    });
    server.push(
      'Hi, this is Ana from Acme.',
      { text: 'Let me check that.', toolCalls: [{ name: 'check_order', arguments: { orderId: 'A-17' } }] },
      { text: 'Your order shipped and arrives Friday.', toolCalls: [{ name: 'end_call' }] },
    );
    const talking = farEnd.answerLines(['Where is my order A seventeen?']);
    const outcome = await call({
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
    await talking;

    const [request] = receiver.on('/tools/order');
    expect(request && JSON.parse(request.body)).toEqual({
      name: 'check_order',
      arguments: { orderId: 'A-17' },
      callId: 'call_rt_1',
    });
    expect(request && verifySignatures(request, secret)).toEqual({ hex: true, standard: true });
    const outputs = server.received('conversation.item.create').map((event) => event.item);
    expect(outputs).toEqual([
      {
        type: 'function_call_output',
        call_id: expect.any(String),
        output: JSON.stringify({ status: 'shipped', eta: 'Friday' }),
      },
    ]);
    // The output went before the reply it asked for.
    const order = server.events
      .map((event) => event.type)
      .filter((type) => type !== 'input_audio_buffer.append');
    expect(order.slice(-2)).toEqual(['conversation.item.create', 'response.create']);
    expect(outcome.toolCalls.map((entry) => [entry.name, entry.result, entry.error])).toEqual([
      ['check_order', { status: 'shipped', eta: 'Friday' }, null],
      ['end_call', { ok: true }, null],
    ]);
    expect(outcome.transcription.map((line) => line.content)).toEqual([
      'Hi, this is Ana from Acme.',
      'Where is my order A seventeen?',
      'Let me check that.',
      'Your order shipped and arrives Friday.',
    ]);
    expect(outcome.endedReason).toBe('agent-ended');
  }, 60_000);

  it('barge-in: the agent stops, the reply is cancelled and truncated to the audio that went out', async () => {
    const long =
      'Our offer has three parts. The first part is a free month of service for your whole team. ' +
      'The second part is a personal onboarding call with one of our experts. The third part is a discount on the yearly plan.';
    server.push(
      // Sent at twice real time: the reply is still being made when the callee cuts in.
      { text: long, chunkMs: 200, paceMs: 100 },
      { text: 'Of course. Goodbye!', toolCalls: [{ name: 'end_call' }] },
    );
    const bargeIns: BargeInEvent[] = [];
    const talking = (async () => {
      await farEnd.agentStarts();
      await new Promise((resolve) => setTimeout(resolve, 2000));
      await farEnd.say('Stop, wait, I have to go now.');
    })();
    const outcome = await call({}, { bargeIns });
    await talking;

    const [cancel] = server.received('response.cancel');
    expect(cancel?.response_id).toBe('resp_1');
    expect(farEnd.playbackStops).toHaveLength(1);
    await vi.waitFor(() => expect(server.received('conversation.item.truncate')).toHaveLength(1), {
      timeout: 10_000,
    });
    const [truncate] = server.received('conversation.item.truncate');
    // audio_end_ms is what went out on the line: the agent's frames before the callee's line ended
    // (the reply was its only audio until then; nothing went out between the stop and that end).
    const calleeLine = farEnd.calleeSpeech.at(-1);
    const playedMs = farEnd.agentFrames.filter((entry) => entry.at < (calleeLine?.endedAt ?? 0)).length * 20;
    expect(truncate).toMatchObject({ type: 'conversation.item.truncate', content_index: 0 });
    expect(Math.abs(Number(truncate?.audio_end_ms) - playedMs)).toBeLessThanOrEqual(40);
    expect(Number(truncate?.audio_end_ms)).toBeGreaterThan(1000);
    // The agent said only the start of the reply, and that is what the transcript keeps.
    expect(bargeIns).toHaveLength(1);
    const heard = outcome.transcription[0]?.content ?? '';
    expect(heard).toBe(bargeIns[0]?.heard);
    expect(heard.length).toBeGreaterThan(0);
    expect(long.startsWith(heard)).toBe(true);
    expect(heard.length).toBeLessThan(long.length);
    expect(outcome.transcription[1]).toEqual({ role: 'user', content: 'Stop, wait, I have to go now.' });
    // Nothing of the cut reply went out after the stop.
    const during = farEnd.agentFrames.filter(
      (entry) => entry.at > (farEnd.playbackStops[0] ?? 0) + 20 && entry.at < (calleeLine?.endedAt ?? 0),
    );
    expect(during).toEqual([]);
    expect(outcome.endedReason).toBe('agent-ended');
  }, 60_000);

  it('an error event ends the call with model-unavailable, after the apology', async () => {
    server.push({ error: 'The model is overloaded' });
    const outcome = await call({ firstMessage: 'Hi, this is Ana from Acme.' });
    expect(outcome.endedReason).toBe('model-unavailable');
    expect(outcome.status).toBe('FAILED');
    expect(outcome.transcription.at(-1)?.content).toMatch(/sorry/i);
    // The apology went out on the line (espeak-ng).
    expect(farEnd.agentFrames.length).toBeGreaterThan(50);
    expect(farEnd.hungUpBy).toBe('agent');
  }, 60_000);

  it('a reply that ends failed (response.done, status failed) ends the call with model-unavailable, after the apology', async () => {
    server.push({
      text: 'Hi, this is Ana.',
      failed: 'The server had an error while processing your request',
    });
    const outcome = await call({ firstMessage: 'Hi, this is Ana from Acme.' });
    expect(outcome.endedReason).toBe('model-unavailable');
    expect(outcome.status).toBe('FAILED');
    expect(outcome.error).toContain('The server had an error while processing your request');
    expect(outcome.transcription.at(-1)?.content).toMatch(/sorry/i);
    expect(farEnd.hungUpBy).toBe('agent');
  }, 60_000);

  for (const [fault, reply] of [
    [
      'the socket drops mid-reply',
      { text: 'Hi, this is Ana from Acme, calling about your order.', drop: true },
    ],
    [
      'the server sends malformed JSON',
      { text: 'Hi, this is Ana from Acme, calling about your order.', malformed: true },
    ],
    ['the server never answers', { hang: true }],
  ] as const) {
    it(`${fault}: the call ends with model-unavailable, never hangs`, async () => {
      server.push(reply);
      const outcome = await call({ firstMessage: 'Hi, this is Ana from Acme.' }, { modelTimeoutMs: 1500 });
      expect(outcome.endedReason).toBe('model-unavailable');
      expect(outcome.status).toBe('FAILED');
      expect(outcome.transcription.at(-1)?.content).toMatch(/sorry/i);
      expect(farEnd.hungUpBy).toBe('agent');
    }, 60_000);
  }

  it('a server that cannot be reached or refuses the upgrade: model-unavailable', async () => {
    const down = (await downUrl()).replace(/^http/, 'ws');
    const outcome = await call({}, { url: down, modelTimeoutMs: 1500 });
    expect(outcome.endedReason).toBe('model-unavailable');
    expect(outcome.error).toBeTruthy();

    farEnd = new AudioFarEnd();
    const refusing = await startRealtimeServer({ refuse: 401 });
    try {
      const refused = await call({}, { url: refusing.url, modelTimeoutMs: 1500 });
      expect(refused.endedReason).toBe('model-unavailable');
      expect(refusing.connections).toHaveLength(1);
    } finally {
      await refusing.close();
    }
  }, 60_000);
});
