import { describe, expect, it } from 'vitest';
import { EnergySpeechDetector } from '../../src/adapters/models/vad.js';
import type { ConversationSession, VoiceModels } from '../../src/voice/contracts.js';
import { type HeardTurn, Listening } from '../../src/voice/listening.js';
import { join, silence, tone } from '../helpers/audio.js';

/**
 * The engines' one listening path on a session of our own: the energy detector, and a
 * speech-to-text that answers with the length of what it was sent, in the agent's language.
 */
function session() {
  const listeners = new Set<(frame: Int16Array, receivedAt: number) => void>();
  const sent: Array<{ samples: number; language: string | null | undefined }> = [];
  const models = {
    chat: null,
    stt: {
      name: 'test',
      async transcribe(pcm: Int16Array, options?: { language?: string | null }) {
        sent.push({ samples: pcm.length, language: options?.language });
        return `${pcm.length} samples`;
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
