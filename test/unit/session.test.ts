import { describe, expect, it } from 'vitest';
import type { DialAgent } from '../../src/ports.js';
import type {
  CallTransport,
  ConversationEngine,
  ConversationSession,
  PlayResult,
  VoiceModels,
} from '../../src/voice/contracts.js';
import { APOLOGY } from '../../src/voice/engines/apology.js';
import { ProcessLoad } from '../../src/voice/load.js';
import { runAnsweredCall } from '../../src/voice/session.js';

/**
 * The answered-call session on in-memory transports (the port the SIP transport and the simulator
 * implement): what outcome, reason, transcript and audio each path gives. The SIP tests run the
 * same module over real RTP.
 */

const agent = (details: Record<string, unknown> = {}): DialAgent => ({
  id: 'agt_1',
  name: 'Agent',
  agentName: 'Ava',
  language: 'en-US',
  sipTrunkId: null,
  details,
});

/** An audio transport: `feed` delivers received frames; what is played is kept in `played`. */
class MemoryTransport implements CallTransport {
  readonly media: 'audio' | 'text';
  readonly played: Int16Array[] = [];
  readonly said: string[] = [];
  readonly hungUp: number[] = [];
  private readonly listeners = new Set<(frame: Int16Array, at: number) => void>();
  private readonly far = new AbortController();
  readonly signal = this.far.signal;
  transferAnswer: { ok: true } | { ok: false; reason: string } = { ok: true };
  verdict: 'human' | 'machine' | undefined;
  amd?: () => Promise<'human' | 'machine'>;

  constructor(media: 'audio' | 'text', verdict?: 'human' | 'machine') {
    this.media = media;
    if (verdict) this.amd = async () => verdict;
  }
  onAudio(listener: (frame: Int16Array, at: number) => void) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  feed(frame: Int16Array) {
    for (const listener of [...this.listeners]) listener(frame, Date.now());
  }
  async play(pcm: Int16Array, onFirstPacket?: (at: number) => void): Promise<PlayResult> {
    onFirstPacket?.(Date.now());
    this.played.push(pcm);
    return { playedMs: pcm.length / 8, interrupted: false };
  }
  stopPlayback() {}
  sayText(text: string) {
    this.said.push(text);
  }
  onText() {
    return () => {};
  }
  async sendDtmf() {
    return true;
  }
  async transfer() {
    return this.transferAnswer;
  }
  hangup() {
    this.hungUp.push(Date.now());
  }
  farEndHangsUp() {
    this.far.abort();
  }
}

const tts = {
  name: 'test-tts',
  async *synthesize(text: string) {
    yield new Int16Array(text.length * 10).fill(1000);
  },
};
const models = {
  chat: null,
  stt: { name: 'none', transcribe: async () => '' },
  tts,
} as unknown as VoiceModels;

function engine(run: (session: ConversationSession) => Promise<void>): ConversationEngine & { ran: boolean } {
  const e = {
    name: 'test',
    ran: false,
    async converse(session: ConversationSession) {
      e.ran = true;
      await run(session);
    },
  };
  return e;
}

const base = (transport: CallTransport, conversation: ConversationEngine, details = {}) => ({
  callId: 'call_1',
  transport,
  agent: agent(details),
  contact: { id: 'cnt_1', name: 'Jordan' },
  variables: { name: 'Jordan' },
  engine: conversation,
  models,
  amd: true,
  maxCallMs: 60_000,
});

/** 20 ms frames: `ms` of a loud 300 Hz tone (speech-like energy, not a beep) or of a pure `hz` tone. */
function frames(ms: number, hz = 0, amplitude = 8000): Int16Array[] {
  const out: Int16Array[] = [];
  for (let f = 0; f < ms / 20; f++) {
    const frame = new Int16Array(160);
    if (amplitude > 0)
      for (let i = 0; i < 160; i++) {
        const t = (f * 160 + i) / 8000;
        // Two frequencies, so no single one holds most of the power, unless a pure tone is asked for.
        frame[i] =
          hz > 0
            ? amplitude * Math.sin(2 * Math.PI * hz * t)
            : (amplitude / 2) * (Math.sin(2 * Math.PI * 310 * t) + Math.sin(2 * Math.PI * 730 * t));
      }
    out.push(frame);
  }
  return out;
}

describe('the answered-call session', () => {
  it('hands a person to the engine with the filled-in config, and keeps its transcript, tools and turns', async () => {
    const transport = new MemoryTransport('text', 'human');
    const conversation = engine(async (session) => {
      expect(session.config.firstMessage).toBe('Hi Jordan');
      expect(session.config.interruption.minSpeechMs).toBe(300);
      session.sayText(session.config.firstMessage ?? '');
      session.addTurn('assistant', session.config.firstMessage ?? '');
      session.addTurn('user', '  yes  ');
      session.addTurn('user', '   ');
      session.addToolCall({
        name: 'lookup',
        arguments: {},
        result: { ok: 1 },
        error: null,
        at: 'now',
        durationMs: 3,
      });
      session.addTurnMetrics({
        endpointingMs: 500,
        sttMs: null,
        llmFirstTokenMs: 150,
        ttsFirstByteMs: null,
        voiceToVoiceMs: null,
      });
    });
    const outcome = await runAnsweredCall(base(transport, conversation, { firstMessage: 'Hi {{name}}' }));
    expect(outcome).toMatchObject({
      status: 'COMPLETED',
      endedReason: 'agent-ended',
      error: null,
      transcription: [
        { role: 'assistant', content: 'Hi Jordan' },
        { role: 'user', content: 'yes' },
      ],
    });
    expect(outcome.toolCalls).toHaveLength(1);
    expect(outcome.turns).toEqual([expect.objectContaining({ endpointingMs: 500 })]);
    expect(transport.said).toEqual(['Hi Jordan']);
    expect(transport.hungUp).toHaveLength(1);
  });

  it('leaves the voicemail message to a machine on a text transport, without the engine', async () => {
    const transport = new MemoryTransport('text', 'machine');
    const conversation = engine(async () => {});
    const outcome = await runAnsweredCall(
      base(transport, conversation, { voicemailMessage: 'Please call {{name}} back' }),
    );
    expect(conversation.ran).toBe(false);
    expect(transport.said).toEqual(['Please call Jordan back']);
    expect(outcome).toMatchObject({ status: 'VOICEMAIL', endedReason: 'voicemail' });
    expect(outcome.transcription).toEqual([{ role: 'assistant', content: 'Please call Jordan back' }]);
  });

  it('counts the call as an AI call while it is up; one answered past the bound ends overloaded after the apology', async () => {
    const load = new ProcessLoad({ maxAiCalls: 1, maxLagMs: 150, measure: () => 0, windowMs: 60_000 });
    try {
      let release = () => {};
      const held = new Promise<void>((resolve) => {
        release = resolve;
      });
      const first = engine(() => held);
      const running = runAnsweredCall({ ...base(new MemoryTransport('text'), first), load });
      await expect.poll(() => first.ran).toBe(true);
      expect(load.holds('call_1')).toBe(true);

      for (const media of ['text', 'audio'] as const) {
        const transport = new MemoryTransport(media);
        const second = engine(async () => {});
        const outcome = await runAnsweredCall({ ...base(transport, second), callId: `call_${media}`, load });
        expect(second.ran).toBe(false);
        expect(outcome).toMatchObject({ status: 'FAILED', endedReason: 'overloaded' });
        expect(outcome.error).toContain('OUTDIAL_MAX_AI_CALLS');
        expect(outcome.transcription).toEqual([{ role: 'assistant', content: APOLOGY }]);
        if (media === 'text') expect(transport.said).toEqual([APOLOGY]);
        else expect(transport.played.length).toBeGreaterThan(0);
        expect(transport.hungUp).toHaveLength(1);
      }
      expect(load.aiCalls).toBe(1);

      release();
      expect(await running).toMatchObject({ status: 'COMPLETED', endedReason: 'agent-ended' });
      expect(load.aiCalls).toBe(0);
    } finally {
      load.close();
    }
  });

  it("ends a call answered while its model is known down before any greeting, as that dependency's failure", async () => {
    const cases = [
      { kind: 'llm', media: 'text', reason: 'model-unavailable', apology: true },
      { kind: 'stt', media: 'audio', reason: 'stt-unavailable', apology: true },
      { kind: 'tts', media: 'audio', reason: 'tts-unavailable', apology: false },
      { kind: 'tts', media: 'text', reason: 'tts-unavailable', apology: true },
    ] as const;
    for (const { kind, media, reason, apology } of cases) {
      const transport = new MemoryTransport(media, 'human');
      const conversation = engine(async (session) => session.sayText('Hi Jordan'));
      const dependencies = { unavailable: () => ({ kind, name: `${kind} m at http://10.0.0.5/v1` }) };
      const outcome = await runAnsweredCall({
        ...base(transport, conversation, { firstMessage: 'Hi Jordan' }),
        dependencies,
      });
      expect(conversation.ran).toBe(false);
      expect(outcome).toMatchObject({ status: 'FAILED', endedReason: reason });
      expect(outcome.error).toContain(`${kind} m at http://10.0.0.5/v1 is unavailable`);
      expect(outcome.transcription).toEqual(apology ? [{ role: 'assistant', content: APOLOGY }] : []);
      expect(transport.hungUp).toHaveLength(1);
    }
    // All closed: the engine runs as usual.
    const transport = new MemoryTransport('text', 'human');
    const conversation = engine(async () => {});
    const outcome = await runAnsweredCall({
      ...base(transport, conversation),
      dependencies: { unavailable: () => null },
    });
    expect(conversation.ran).toBe(true);
    expect(outcome.endedReason).toBe('agent-ended');
  });

  it('hangs up on a machine at once when the agent has no voicemail message', async () => {
    const transport = new MemoryTransport('text', 'machine');
    const outcome = await runAnsweredCall(
      base(
        transport,
        engine(async () => {}),
      ),
    );
    expect(outcome).toMatchObject({ status: 'VOICEMAIL', endedReason: 'voicemail', transcription: [] });
    expect(transport.said).toEqual([]);
  });

  it('an engine failure ends the call as FAILED with reason error', async () => {
    const transport = new MemoryTransport('text');
    const outcome = await runAnsweredCall(
      base(
        transport,
        engine(async () => {
          throw new Error('model exploded');
        }),
      ),
    );
    expect(outcome).toMatchObject({ status: 'FAILED', endedReason: 'error' });
    expect(outcome.error).toContain('model exploded');
  });

  it('an engine that hangs up on its own failure (hangup error) ends the call FAILED', async () => {
    const outcome = await runAnsweredCall(
      base(
        new MemoryTransport('text'),
        engine(async (session) => {
          session.addTurn('assistant', 'Sorry, something went wrong. Goodbye.');
          session.hangup('error');
          session.hangup('agent-ended'); // the first reason wins
        }),
      ),
    );
    expect(outcome).toMatchObject({ status: 'FAILED', endedReason: 'error' });
    expect(outcome.error).toContain('failure');
  });

  it('the far end hanging up ends the call as callee-hung-up, even if the engine does not notice', async () => {
    const transport = new MemoryTransport('text');
    const conversation = engine(() => new Promise(() => {})); // never returns
    const running = runAnsweredCall(base(transport, conversation));
    await new Promise((resolve) => setTimeout(resolve, 20));
    transport.farEndHangsUp();
    expect(await running).toMatchObject({ status: 'COMPLETED', endedReason: 'callee-hung-up' });
  });

  it("holds the agent's maxDurationSeconds, capped by the process's longest call", async () => {
    const capped = await runAnsweredCall({
      ...base(
        new MemoryTransport('text'),
        engine((s) => new Promise((r) => s.signal.addEventListener('abort', () => r()))),
      ),
      agent: agent({ maxDurationSeconds: 3600 }),
      maxCallMs: 200,
    });
    expect(capped).toMatchObject({ status: 'COMPLETED', endedReason: 'max-duration' });
    const started = Date.now();
    const own = await runAnsweredCall({
      ...base(
        new MemoryTransport('text'),
        engine(() => new Promise(() => {})),
      ),
      agent: agent({ maxDurationSeconds: 1 }),
    });
    expect(own.endedReason).toBe('max-duration');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it('a transfer the far end accepts ends the call as transferred; a refused one goes on', async () => {
    const accepting = new MemoryTransport('text');
    const accepted = await runAnsweredCall(
      base(
        accepting,
        engine(async (session) => {
          expect(await session.transfer('+14155550199')).toEqual({ ok: true });
          expect(session.signal.aborted).toBe(true);
        }),
      ),
    );
    expect(accepted.endedReason).toBe('transferred');

    const refusing = new MemoryTransport('text');
    refusing.transferAnswer = { ok: false, reason: 'SIP 603' };
    const refused = await runAnsweredCall(
      base(
        refusing,
        engine(async (session) => {
          expect(await session.transfer('+14155550199')).toEqual({ ok: false, reason: 'SIP 603' });
          expect(session.signal.aborted).toBe(false);
          session.hangup('agent-ended');
        }),
      ),
    );
    expect(refused.endedReason).toBe('agent-ended');
  });

  it('audio: no engine and no audio before the AMD verdict; a short hello then silence is a person', async () => {
    const transport = new MemoryTransport('audio');
    let framesBeforeEngine = -1;
    let fed = 0;
    const conversation = engine(async (session) => {
      framesBeforeEngine = fed;
      await session.play(new Int16Array(160));
    });
    const running = runAnsweredCall(base(transport, conversation));
    // "Hello?" (500 ms), then silence: decided within 3 s of audio.
    for (const frame of [...frames(500), ...frames(3000, 0, 0)]) {
      if (conversation.ran) break;
      fed++;
      transport.feed(frame);
      await Promise.resolve();
    }
    const outcome = await running;
    expect(outcome.status).toBe('COMPLETED');
    expect(framesBeforeEngine).toBeGreaterThan(25);
    expect(framesBeforeEngine * 20).toBeLessThanOrEqual(3000);
    expect(transport.played).toHaveLength(1);
  });

  it('audio: a machine gets the voicemail message only after its beep', async () => {
    const transport = new MemoryTransport('audio');
    const conversation = engine(async () => {});
    const running = runAnsweredCall(
      base(transport, conversation, { voicemailMessage: 'This is Ava, please call back.' }),
    );
    // A greeting that runs on (a machine), then a 1 kHz beep of 600 ms, then silence.
    let playedDuringGreeting = 0;
    for (const frame of frames(4000)) {
      transport.feed(frame);
      await Promise.resolve();
    }
    for (const frame of frames(600, 1000)) {
      playedDuringGreeting += transport.played.length;
      transport.feed(frame);
      await Promise.resolve();
    }
    for (const frame of frames(200, 0, 0)) {
      transport.feed(frame);
      await new Promise((resolve) => setTimeout(resolve, 1));
    }
    const outcome = await running;
    expect(playedDuringGreeting).toBe(0);
    expect(conversation.ran).toBe(false);
    expect(transport.played.length).toBeGreaterThan(0);
    expect(outcome).toMatchObject({ status: 'VOICEMAIL', endedReason: 'voicemail' });
    expect(outcome.transcription).toEqual([{ role: 'assistant', content: 'This is Ava, please call back.' }]);
  });
});

describe('the answered-call session on a machine that beeps at once', () => {
  it('speaks as soon as the beep that decided the verdict stops', async () => {
    const transport = new MemoryTransport('audio');
    const running = runAnsweredCall(
      base(
        transport,
        engine(async () => {}),
        { voicemailMessage: 'Please call back.' },
      ),
    );
    let framesBeforeSpeech = 0;
    for (const frame of [...frames(300, 1000), ...frames(3000, 0, 0)]) {
      if (transport.played.length > 0) break;
      framesBeforeSpeech++;
      transport.feed(frame);
      await new Promise((resolve) => setImmediate(resolve));
    }
    const outcome = await running;
    expect(outcome).toMatchObject({ status: 'VOICEMAIL', endedReason: 'voicemail' });
    // Right after the 300 ms beep (100 ms of it after the verdict): not 1.5 s of silence later.
    expect(framesBeforeSpeech * 20).toBeGreaterThanOrEqual(300);
    expect(framesBeforeSpeech * 20).toBeLessThan(800);
  });
});
