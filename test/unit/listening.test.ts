import { afterEach, describe, expect, it, vi } from 'vitest';
import { EnergySpeechDetector } from '../../src/adapters/models/vad.js';
import { AGENT_AI_DEFAULTS, DEFAULT_IGNORE_WORDS } from '../../src/domain/agent-call.js';
import type { ConversationSession, VoiceModels } from '../../src/voice/contracts.js';
import {
  type HeardTurn,
  type Interruption,
  Listening,
  type ListeningOptions,
} from '../../src/voice/listening.js';
import { join, silence, tone } from '../helpers/audio.js';

/**
 * The engines' one listening path on a session of our own: the energy detector, and a
 * speech-to-text that answers with the length of what it was sent, in the agent's language (or,
 * given `words`, with what the far end is saying, as a model that knows the words would).
 */
function session(words?: () => string) {
  const listeners = new Set<(frame: Int16Array, receivedAt: number) => void>();
  const sent: Array<{ samples: number; language: string | null | undefined }> = [];
  const models = {
    chat: null,
    stt: {
      name: 'test',
      async transcribe(pcm: Int16Array, options?: { language?: string | null }) {
        sent.push({ samples: pcm.length, language: options?.language });
        return words ? words() : `${pcm.length} samples`;
      },
    },
    tts: { name: 'test', synthesize: async function* () {} },
    detector: async (options) => new EnergySpeechDetector(options),
  } satisfies VoiceModels;
  const value = {
    agent: { language: 'hi-IN' },
    models,
    signal: new AbortController().signal,
    onAudio(listener: (frame: Int16Array, receivedAt: number) => void) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  } as unknown as ConversationSession;
  const feed = (pcm: Int16Array, from: number) => {
    for (let at = 0, n = 0; at < pcm.length; at += 160, n++) {
      for (const listener of listeners) listener(pcm.subarray(at, at + 160), from + n * 20);
    }
  };
  return { value, feed, sent, listeners };
}

describe('listening', () => {
  it('hands each turn over as it ends, transcribed in the agent language, and keeps recent audio', async () => {
    const call = session();
    const starts: number[] = [];
    const turns: HeardTurn[] = [];
    const listening = await Listening.start(call.value, {
      endSilenceMs: 500,
      maxTurnMs: 6000,
      keepAudioMs: 1000,
      onSpeechStart: (at) => starts.push(at),
      onTurn: (turn) => turns.push(turn),
      onError: (error) => {
        throw error;
      },
    });
    call.feed(join(silence(400), tone(200, 800, { amplitude: 6000 }), silence(800)), 1000);
    expect(starts).toHaveLength(1);
    expect(turns).toHaveLength(1);
    const [turn] = turns;
    const words = await turn?.words;
    expect(call.sent).toEqual([{ samples: expect.any(Number), language: 'hi-IN' }]);
    expect(words).toBe(`${call.sent[0]?.samples} samples`);
    expect(turn?.sttMs).not.toBeNull();
    // The speech ended at about 1000 + 1200 ms; the turn about 500 ms later.
    expect(Math.abs((turn?.speechEndedAt ?? 0) - 2200)).toBeLessThanOrEqual(40);
    expect(turn?.endpointingMs).toBeGreaterThanOrEqual(460);
    // Only the last second is kept.
    expect(listening.audioSince(0).length).toBeLessThanOrEqual(8000 + 160);
    expect(listening.audioSince(2500).length).toBe(((2980 - 2500) / 20 + 1) * 160);

    await listening.close();
    expect(call.listeners.size).toBe(0);
  });
});

/**
 * Speech over the agent, on the LLM engine's settings (the agent defaults: 300 ms, the default
 * backchannels). The clock is faked: each 20 ms frame arrives as the clock reaches it, so the
 * overlap checks run at the times they would on a call.
 */
describe('listening: speech over the agent', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  async function over(options: Partial<ListeningOptions> = {}) {
    vi.useFakeTimers({ now: 1_000_000 });
    let saying = '';
    const call = session(() => saying);
    const turns: string[] = [];
    const interruptions: Array<Interruption & { at: number }> = [];
    const listening = await Listening.start(call.value, {
      endSilenceMs: 500,
      maxTurnMs: 6000,
      keepAudioMs: 10_000,
      interruption: { minSpeechMs: AGENT_AI_DEFAULTS.minSpeechMs, ignoreWords: [...DEFAULT_IGNORE_WORDS] },
      onSpeechStart: () => undefined,
      onTurn: (turn) => void turn.words.then((text) => turns.push(text)),
      onInterruption: (event) => interruptions.push({ ...event, at: Date.now() }),
      onError: (error) => {
        throw error;
      },
      ...options,
    });
    /**
     * The far end says `text` for `ms`, then is silent long enough for the turn to end (with a
     * line's quiet before it, from which the energy detector learns the noise floor).
     */
    const say = async (text: string, ms: number) => {
      saying = text;
      const pcm = join(silence(400), tone(200, ms, { amplitude: 6000 }), silence(800));
      for (let at = 0; at < pcm.length; at += 160) {
        await vi.advanceTimersByTimeAsync(20);
        for (const listener of call.listeners) listener(pcm.subarray(at, at + 160), Date.now());
      }
      await vi.advanceTimersByTimeAsync(20);
    };
    return { listening, say, turns, interruptions };
  }

  it('a backchannel while the agent speaks does not interrupt it, and is no turn', async () => {
    const { listening, say, turns, interruptions } = await over();
    const speech = listening.agentSpeaks();
    await say('yeah', 700);
    expect(interruptions).toEqual([]);
    expect(speech.interrupted).toBe(false);
    expect(turns).toEqual(['']);
    await listening.close();
  });

  it('sustained words over the agent interrupt it at minSpeechMs, and are a turn', async () => {
    const { listening, say, turns, interruptions } = await over();
    const speech = listening.agentSpeaks();
    await say('wait, I have a question', 1000);
    expect(interruptions).toHaveLength(1);
    const [interruption] = interruptions;
    expect(interruption?.speech).toBe(speech);
    expect(speech.interrupted).toBe(true);
    // Not before minSpeechMs of speech, and well before the speech ended (1 s in).
    const spokenMs = (interruption?.at ?? 0) - (interruption?.startedAt ?? 0);
    expect(spokenMs).toBeGreaterThanOrEqual(AGENT_AI_DEFAULTS.minSpeechMs);
    expect(spokenMs).toBeLessThan(1000);
    expect(turns).toEqual(['wait, I have a question']);
    await listening.close();
  });

  it('words after the agent stopped are a turn, a backchannel too, and interrupt nothing', async () => {
    const { listening, say, turns, interruptions } = await over();
    const speech = listening.agentSpeaks();
    listening.agentDone(speech);
    await say('yeah', 700);
    await say('tell me more about it', 1000);
    expect(interruptions).toEqual([]);
    expect(turns).toEqual(['yeah', 'tell me more about it']);
    await listening.close();
  });

  it('without interruption settings (the scripted engine), speech over the agent is only a turn', async () => {
    const { listening, say, turns, interruptions } = await over({ interruption: undefined });
    const speech = listening.agentSpeaks();
    await say('yeah', 700);
    await say('wait, I have a question', 1000);
    expect(interruptions).toEqual([]);
    expect(speech.interrupted).toBe(false);
    expect(turns).toEqual(['yeah', 'wait, I have a question']);
    await listening.close();
  });
});
