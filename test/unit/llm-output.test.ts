import { describe, expect, it } from 'vitest';
import type { ConversationSession, PlayResult, TextToSpeech } from '../../src/voice/contracts.js';
import { AudioReply, bounded, guardedStream, StallError } from '../../src/voice/engines/llm-output.js';

/**
 * The agent's words on their way out: which words a stopped reply leaves as heard, failures of
 * text-to-speech, and the waits that never hang. A line that plays what it is given (the transport
 * side) stands in for the call; the SIP and audio tests run the same code on real lines.
 */

/** 8 kHz audio of `ms` milliseconds. */
const audio = (ms: number) => new Int16Array(ms * 8).fill(500);

/** A text-to-speech that speaks 100 ms per word, in one chunk per word. */
const wordsTts: TextToSpeech = {
  name: 'words',
  async *synthesize(text) {
    for (const _word of text.split(/\s+/)) yield audio(100);
  },
};

/**
 * A line that plays each chunk in `chunkMs` of real time, one after the other, and on a stop
 * reports the chunk in flight as half played and the rest as not played.
 */
function line(): ConversationSession & { played: number } {
  const queue: Array<{ ms: number; resolve: (result: PlayResult) => void; started: boolean }> = [];
  const next = () => {
    const head = queue[0];
    if (!head || head.started) return;
    head.started = true;
    setTimeout(() => {
      if (queue[0] !== head) return;
      queue.shift();
      session.played++;
      head.resolve({ playedMs: head.ms, interrupted: false });
      next();
    }, 5);
  };
  const session = {
    played: 0,
    agent: { id: 'agt', name: 'a', agentName: null, language: 'en-US', sipTrunkId: null, details: {} },
    signal: new AbortController().signal,
    play(pcm: Int16Array, onFirstPacket?: (at: number) => void) {
      onFirstPacket?.(Date.now());
      return new Promise<PlayResult>((resolve) => {
        queue.push({ ms: pcm.length / 8, resolve, started: false });
        next();
      });
    },
    stopPlayback() {
      for (const [index, item] of queue.splice(0).entries()) {
        item.resolve({ playedMs: index === 0 && item.started ? item.ms / 2 : 0, interrupted: true });
      }
    },
  };
  return session as unknown as ConversationSession & { played: number };
}

describe('an audio reply', () => {
  it('says every sentence in order and reports all of it heard', async () => {
    const session = line();
    const reply = new AudioReply({
      session,
      tts: wordsTts,
      signal: new AbortController().signal,
      idleMs: 1000,
    });
    reply.add('One two three.');
    reply.add('Four five.');
    expect(await reply.finish()).toEqual({ text: 'One two three. Four five.', interrupted: false });
    expect(session.played).toBe(5);
  });

  it('stopped mid-sentence, keeps the sentences before and the heard words of the one cut', async () => {
    const session = line();
    const reply = new AudioReply({
      session,
      tts: wordsTts,
      signal: new AbortController().signal,
      idleMs: 1000,
    });
    reply.add('One two three.');
    reply.add('Four five six seven.');
    // Three words of the first sentence and one of the second have played: stop in the fifth.
    while (session.played < 4) await new Promise((resolve) => setTimeout(resolve, 1));
    reply.stop();
    const heard = await reply.finish();
    expect(heard.interrupted).toBe(true);
    // 100 ms played plus half of the next 100 ms, of 400 ms: one whole word heard.
    expect(heard.text).toBe('One two three. Four');
  });

  it('throws when text-to-speech fails, and not once the reply was stopped', async () => {
    const failing: TextToSpeech = {
      name: 'failing',
      // biome-ignore lint/correctness/useYield: it fails before its first chunk
      async *synthesize() {
        throw new Error('speech server down');
      },
    };
    const failed = new AudioReply({
      session: line(),
      tts: failing,
      signal: new AbortController().signal,
      idleMs: 1000,
    });
    failed.add('Hello.');
    await expect(failed.finish()).rejects.toThrow('speech server down');

    const stopped = new AudioReply({
      session: line(),
      tts: failing,
      signal: new AbortController().signal,
      idleMs: 1000,
    });
    stopped.add('Hello.');
    stopped.stop();
    expect(await stopped.finish()).toEqual({ text: '', interrupted: true });
  });

  it('gives up on a text-to-speech that goes silent', async () => {
    const silent: TextToSpeech = {
      name: 'silent',
      async *synthesize() {
        yield audio(100);
        await new Promise(() => {});
      },
    };
    const reply = new AudioReply({
      session: line(),
      tts: silent,
      signal: new AbortController().signal,
      idleMs: 50,
    });
    reply.add('Hello there.');
    await expect(reply.finish()).rejects.toBeInstanceOf(StallError);
  });
});

describe('waits that never hang', () => {
  it('bounded: the value, a StallError after its time, or the abort', async () => {
    const never = new Promise<number>(() => {});
    const open = new AbortController().signal;
    expect(await bounded(Promise.resolve(7), 100, open, 'x')).toBe(7);
    await expect(bounded(never, 20, open, 'the model')).rejects.toThrow('the model: no answer within 20 ms');
    const over = new AbortController();
    setTimeout(() => over.abort(new Error('the call ended')), 10);
    await expect(bounded(never, 10_000, over.signal, 'x')).rejects.toThrow('the call ended');
  });

  it('guardedStream stops a source that ignores its signal when the call ends', async () => {
    const over = new AbortController();
    const stubborn = async function* () {
      yield 1;
      await new Promise(() => {});
    };
    const seen: number[] = [];
    setTimeout(() => over.abort(new Error('the call ended')), 20);
    await expect(
      (async () => {
        for await (const item of guardedStream(stubborn, over.signal, 10_000, 'source')) seen.push(item);
      })(),
    ).rejects.toThrow('the call ended');
    expect(seen).toEqual([1]);
  });

  it('guardedStream aborts the source it gives up on', async () => {
    let sourceSignal: AbortSignal | null = null;
    const slow = async function* (signal: AbortSignal) {
      sourceSignal = signal;
      await new Promise(() => {});
      yield 0;
    };
    await expect(
      (async () => {
        for await (const _ of guardedStream(slow, new AbortController().signal, 20, 'slow model')) {
        }
      })(),
    ).rejects.toBeInstanceOf(StallError);
    expect((sourceSignal as AbortSignal | null)?.aborted).toBe(true);
  });
});
