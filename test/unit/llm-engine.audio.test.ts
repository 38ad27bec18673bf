import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type BuiltVoiceModels, buildVoiceModels } from '../../src/adapters/models/index.js';
import { EspeakTextToSpeech } from '../../src/adapters/models/tts.js';
import { type BargeInEvent, createLlmEngine } from '../../src/voice/engines/llm.js';
import { runAnsweredCall } from '../../src/voice/session.js';
import { agentFor } from '../helpers/agents.js';
import { AudioFarEnd } from '../helpers/far-ends.js';
import {
  type ChatServer,
  downUrl,
  type SttServer,
  startChatServer,
  startSttServer,
  startTtsServer,
  type TtsServer,
} from '../helpers/model-servers.js';

/**
 * The LLM engine on audio calls, in real time: a far end that speaks espeak-ng speech in 20 ms
 * frames and records what the agent plays, the real chat, speech-to-text and text-to-speech
 * clients against local OpenAI-compatible servers (text-to-speech is espeak-ng; the
 * speech-to-text server answers with the words the far end has spoken so far, as a model that
 * knows the words would), voice activity on the received audio, and the answered-call session.
 */

let chat: ChatServer;
let stt: SttServer;
let tts: TtsServer;
let farEnd: AudioFarEnd;
let built: BuiltVoiceModels | null = null;

beforeEach(async () => {
  farEnd = new AudioFarEnd();
  chat = await startChatServer({ wordsPerChunk: 2 });
  stt = await startSttServer({ text: () => farEnd.heardSoFar() });
  tts = await startTtsServer();
});
afterEach(async () => {
  farEnd.calleeHangsUp();
  await built?.close();
  built = null;
  await Promise.all([chat.close(), stt.close(), tts.close()]);
});

/** The process's model ports as main.ts builds them, pointed at the local servers (Silero VAD). */
function models(urls: { tts?: string } = {}): BuiltVoiceModels {
  built = buildVoiceModels({
    llm: { url: chat.url, model: 'test-model' },
    stt: { url: stt.url, model: 'test-whisper' },
    tts: { url: urls.tts ?? tts.url, model: 'test-voice' },
  });
  return built;
}

async function call(
  details: Record<string, unknown>,
  options: { bargeIns?: BargeInEvent[]; tts?: string } = {},
) {
  return runAnsweredCall({
    callId: 'call_audio_1',
    transport: farEnd,
    agent: agentFor(details),
    contact: { id: 'cnt_1', name: 'Priya Shah' },
    variables: { name: 'Priya Shah', firstName: 'Priya' },
    engine: createLlmEngine({
      // As main.ts gives it: espeak-ng speaks the apology when the call's text-to-speech is down.
      fallbackTts: new EspeakTextToSpeech(),
      modelTimeoutMs: 5000,
      onBargeIn: (event) => options.bargeIns?.push(event),
    }),
    models: models(options.tts ? { tts: options.tts } : {}),
    amd: false,
    maxCallMs: 90_000,
  });
}

describe('the LLM engine on an audio call', () => {
  it('holds a three-turn spoken conversation, and measures each turn', async () => {
    chat.push('Great. Would Tuesday at ten work?', 'Perfect, you are booked for Tuesday.', {
      text: 'Thank you Priya. Goodbye!',
      toolCalls: [{ name: 'end_call' }],
    });
    const lines = ['Yes I have a minute.', 'Tuesday at ten works.', 'No that is all.'];
    const talking = farEnd.answerLines(lines);
    const outcome = await call({
      firstMessage: 'Hi {{firstName}}, this is Ana from Acme. Do you have a minute?',
    });
    await talking;

    expect(outcome.endedReason).toBe('agent-ended');
    expect(farEnd.hungUpBy).toBe('agent');
    expect(chat.requests).toHaveLength(3);
    expect(lines.map((_line, index) => chat.lastUserText(index))).toEqual(lines);
    expect(stt.requests.every((request) => request.language === 'en')).toBe(true);
    expect(tts.requests.map((request) => request.input)).toEqual([
      'Hi Priya, this is Ana from Acme.',
      'Do you have a minute?',
      'Great.',
      'Would Tuesday at ten work?',
      'Perfect, you are booked for Tuesday.',
      'Thank you Priya.',
      'Goodbye!',
    ]);
    expect(outcome.transcription).toEqual([
      { role: 'assistant', content: 'Hi Priya, this is Ana from Acme. Do you have a minute?' },
      { role: 'user', content: lines[0] },
      { role: 'assistant', content: 'Great. Would Tuesday at ten work?' },
      { role: 'user', content: lines[1] },
      { role: 'assistant', content: 'Perfect, you are booked for Tuesday.' },
      { role: 'user', content: lines[2] },
      { role: 'assistant', content: 'Thank you Priya. Goodbye!' },
    ]);
    // The goodbye played out before the hang-up: the last agent audio ends after it started.
    expect(farEnd.agentSpeech.length).toBeGreaterThanOrEqual(4);
    expect(outcome.turns).toHaveLength(3);
    for (const turn of outcome.turns) {
      for (const figure of [
        'endpointingMs',
        'sttMs',
        'llmFirstTokenMs',
        'ttsFirstByteMs',
        'voiceToVoiceMs',
      ] as const) {
        expect(turn[figure]).toEqual(expect.any(Number));
      }
      expect(turn.voiceToVoiceMs ?? 0).toBeGreaterThanOrEqual(turn.endpointingMs ?? 0);
    }
  }, 60_000);

  it('barge-in: the agent stops, the model request is cancelled, only the words played are kept', async () => {
    const long =
      'Our offer has three parts. The first part is a free month of service for your whole team. ' +
      'The second part is a personal onboarding call with one of our experts. The third part is a discount on the yearly plan.';
    chat.push(
      { text: long, chunkDelayMs: 250 },
      { text: 'Of course. Goodbye!', toolCalls: [{ name: 'end_call' }] },
    );
    const bargeIns: BargeInEvent[] = [];
    const talking = (async () => {
      await farEnd.agentLine();
      await farEnd.say('Tell me about your offer.');
      await farEnd.agentStarts();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      await farEnd.say('Stop, wait, I have to go now.');
    })();
    const outcome = await call({ firstMessage: 'Hi, this is Ana from Acme.' }, { bargeIns });
    await talking;

    await vi.waitFor(() => expect(chat.aborted).toBe(1), { timeout: 10_000 });
    expect(bargeIns).toHaveLength(1);
    const [stop] = bargeIns;
    expect(stop?.stopMs).toBeGreaterThan(0);
    // What the callee heard is the start of the reply, not all of it, and that is what was kept.
    const heard = outcome.transcription[2];
    expect(heard?.role).toBe('assistant');
    expect(heard?.content).toBe(stop?.heard);
    expect(heard?.content.length).toBeGreaterThan(0);
    expect(long.startsWith(heard?.content ?? 'x')).toBe(true);
    expect((heard?.content.length ?? 0) < long.length).toBe(true);
    expect(outcome.transcription[3]).toEqual({ role: 'user', content: 'Stop, wait, I have to go now.' });
    const history = chat.requests[1]?.messages.slice(1).map((m) => [m.role, m.content]);
    expect(history).toEqual([
      ['assistant', 'Hi, this is Ana from Acme.'],
      ['user', 'Tell me about your offer.'],
      ['assistant', heard?.content],
      ['user', 'Stop, wait, I have to go now.'],
    ]);
    // The agent's audio stopped: nothing went out from the stop until the callee finished.
    expect(farEnd.playbackStops).toHaveLength(1);
    const [stoppedAt] = farEnd.playbackStops;
    const calleeLine = farEnd.calleeSpeech.at(-1);
    expect(calleeLine?.text).toBe('Stop, wait, I have to go now.');
    const during = farEnd.agentFrames.filter(
      (entry) => entry.at > (stoppedAt ?? 0) + 20 && entry.at < (calleeLine?.endedAt ?? 0),
    );
    expect(during).toEqual([]);
    expect(outcome.endedReason).toBe('agent-ended');
  });

  it('a backchannel over the agent is not an interruption and is not answered', async () => {
    const opening =
      'Hi Priya, this is Ana from Acme Dental, calling about your appointment next week. I would like to confirm the time with you.';
    chat.push({ text: 'Thanks, see you then. Goodbye!', toolCalls: [{ name: 'end_call' }] });
    const bargeIns: BargeInEvent[] = [];
    const talking = (async () => {
      await farEnd.agentStarts();
      await new Promise((resolve) => setTimeout(resolve, 1200));
      await farEnd.say('yeah');
      await farEnd.agentLine();
      await farEnd.say('Sure, the time is fine.');
    })();
    const outcome = await call({ firstMessage: opening }, { bargeIns });
    await talking;

    expect(bargeIns).toEqual([]);
    expect(chat.aborted).toBe(0);
    expect(outcome.transcription).toEqual([
      { role: 'assistant', content: opening },
      { role: 'user', content: 'Sure, the time is fine.' },
      { role: 'assistant', content: 'Thanks, see you then. Goodbye!' },
    ]);
    expect(chat.requests).toHaveLength(1);
    expect(chat.lastUserText(0)).toBe('Sure, the time is fine.');
  });

  it('with no ignoreWords, any speech of minSpeechMs over the agent stops it, without waiting for words', async () => {
    const opening =
      'Hi Priya, this is Ana from Acme Dental, calling about your appointment next week. I would like to confirm the time with you.';
    chat.push({ text: 'Sorry, go ahead. Goodbye!', toolCalls: [{ name: 'end_call' }] });
    const bargeIns: BargeInEvent[] = [];
    const talking = (async () => {
      await farEnd.agentStarts();
      await new Promise((resolve) => setTimeout(resolve, 1200));
      await farEnd.say('yeah');
    })();
    const outcome = await call(
      { firstMessage: opening, interruption: { minSpeechMs: 200, ignoreWords: [] } },
      { bargeIns },
    );
    await talking;

    expect(bargeIns).toHaveLength(1);
    expect(farEnd.playbackStops).toHaveLength(1);
    const first = outcome.transcription[0]?.content ?? '';
    expect(opening.startsWith(first)).toBe(true);
    expect(first.length).toBeLessThan(opening.length);
    expect(outcome.transcription[1]).toEqual({ role: 'user', content: 'yeah' });
    expect(chat.lastUserText(0)).toBe('yeah');
  });

  it('text-to-speech down: the apology is spoken with espeak-ng, and the call ends with tts-unavailable', async () => {
    const outcome = await call({ firstMessage: 'Hi, this is Ana from Acme.' }, { tts: await downUrl() });
    expect(outcome.endedReason).toBe('tts-unavailable');
    expect(outcome.transcription.at(-1)?.content).toMatch(/sorry/i);
    // espeak-ng's apology went out on the line.
    expect(farEnd.agentFrames.length).toBeGreaterThan(50);
    expect(farEnd.hungUpBy).toBe('agent');
  });
});
