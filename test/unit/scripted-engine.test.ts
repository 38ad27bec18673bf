import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildVoiceModels } from '../../src/adapters/models/index.js';
import { RealtimeConnection } from '../../src/adapters/models/realtime.js';
import { synthesize } from '../../src/adapters/speech/espeak.js';
import { ConfigError } from '../../src/config.js';
import { agentAiSettings } from '../../src/domain/agent-call.js';
import type { DialAgent } from '../../src/ports.js';
import type { ConversationSession } from '../../src/voice/contracts.js';
import { loadConversationEngine } from '../../src/voice/engines/index.js';
import { agentScript, ScriptedConversationEngine } from '../../src/voice/engines/scripted.js';
import { join, silence } from '../helpers/audio.js';

const agent = (details: Record<string, unknown>, agentName: string | null = 'Ava'): DialAgent => ({
  id: 'agt_1',
  name: 'Sales agent',
  agentName,
  language: 'en-us',
  sipTrunkId: 'trk_1',
  details,
});

describe("an agent's script", () => {
  it('fills the names into the defaults', () => {
    expect(agentScript(agent({}), { name: 'Jordan' })).toEqual({
      greeting: 'Hello Jordan, this is Ava. Do you have a moment to talk?',
      prompts: ['Thank you. Would you like to hear more about what we offer?'],
      closing: 'Thank you for your time. Goodbye.',
      noInputTimeoutMs: null,
    });
    // No agent_name: the agent's own name; no contact name: "there".
    expect(agentScript(agent({}, null), { name: '' }).greeting).toBe(
      'Hello there, this is Sales agent. Do you have a moment to talk?',
    );
  });

  it('takes greeting, prompts, closing and the answer timeout from basicDetails, ignoring bad values', () => {
    const script = agentScript(
      agent({
        greeting: 'Hi {contactName}, {agentName} here from Acme.',
        prompts: ['Is now a good time, {contactName}?', 42, '  ', 'Great.'],
        closing: 'Bye {contactName}.',
        noInputTimeoutMs: 2500,
      }),
      { name: 'Sam' },
    );
    expect(script).toEqual({
      greeting: 'Hi Sam, Ava here from Acme.',
      prompts: ['Is now a good time, Sam?', 'Great.'],
      closing: 'Bye Sam.',
      noInputTimeoutMs: 2500,
    });
    expect(agentScript(agent({ greeting: 7, noInputTimeoutMs: 'soon' }), { name: 'Sam' })).toMatchObject({
      greeting: 'Hello Sam, this is Ava. Do you have a moment to talk?',
      noInputTimeoutMs: null,
    });
  });
});

describe('OUTDIAL_CONVERSATION_ENGINE', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-engine-'));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('loads the scripted engine (also by its former name offline, and for auto without an LLM), or a module that exports one', async () => {
    expect((await loadConversationEngine('scripted')).name).toBe('scripted');
    expect((await loadConversationEngine('offline')).name).toBe('scripted');
    expect((await loadConversationEngine('auto', { llmUrl: undefined })).name).toBe('scripted');
    const file = path.join(dir, 'engine.mjs');
    fs.writeFileSync(file, "export default async () => ({ name: 'echo', async converse() {} });\n");
    expect((await loadConversationEngine(file)).name).toBe('echo');
  });

  it('stops with a clear message for a missing file or a module that is not an engine', async () => {
    await expect(loadConversationEngine(path.join(dir, 'missing.mjs'))).rejects.toThrow(
      /OUTDIAL_CONVERSATION_ENGINE: could not load/,
    );
    const wrong = path.join(dir, 'wrong.mjs');
    fs.writeFileSync(wrong, 'export default { name: "nothing" };\n');
    await expect(loadConversationEngine(wrong)).rejects.toThrow(
      /must export by default a conversation engine/,
    );
  });

  it('refuses realtime without OUTDIAL_REALTIME_URL and llm without OUTDIAL_LLM_URL, saying why', async () => {
    await expect(loadConversationEngine('realtime')).rejects.toThrow(ConfigError);
    await expect(loadConversationEngine('realtime')).rejects.toThrow(/realtime needs OUTDIAL_REALTIME_URL/);
    await expect(loadConversationEngine('llm')).rejects.toThrow(/needs OUTDIAL_LLM_URL/);
  });

  it('loads the realtime engine when its server is configured', async () => {
    const engine = await loadConversationEngine('realtime', {
      realtime: { url: 'ws://127.0.0.1:9/v1', model: 'gpt-realtime', connect: RealtimeConnection.open },
    });
    expect(engine.name).toBe('realtime');
  });
});

const offline = buildVoiceModels({ llm: null, stt: null, tts: null });
afterAll(() => offline.close());

/**
 * The offline engine on a session of our own: what it plays is taken as sent at once, and the
 * other side "answers" with espeak-ng speech once the greeting has been played.
 */
function session(agent: DialAgent, answer: Int16Array | null) {
  const turns: Array<{ role: string; content: string }> = [];
  const listeners = new Set<(frame: Int16Array, receivedAt: number) => void>();
  let played = 0;
  const stop = new AbortController();
  const feed = async (pcm: Int16Array) => {
    for (let at = 0; at + 160 <= pcm.length; at += 160) {
      for (const listener of listeners) listener(pcm.subarray(at, at + 160), Date.now());
      if (at % 1600 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const value: ConversationSession = {
    callId: 'call_1',
    agent,
    contact: { id: 'cnt_1', name: 'Jordan' },
    config: agentAiSettings(agent.details),
    variables: {},
    models: offline, // espeak-ng, pocketsphinx and Silero VAD, as main.ts builds them without model URLs
    media: 'audio',
    onAudio(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    async play(pcm) {
      played += pcm.length;
      if (played === pcm.length && answer) await feed(join(silence(300), answer, silence(1000)));
      return { playedMs: pcm.length / 8, interrupted: false };
    },
    stopPlayback() {},
    sayText() {},
    onText: () => () => {},
    sendDtmf: async () => false,
    transfer: async () => ({ ok: false, reason: 'not here' }),
    addTurn(role, content) {
      turns.push({ role, content });
    },
    addToolCall() {},
    addTurnMetrics() {},
    onOperatorSay: () => () => {},
    hangup() {},
    signal: stop.signal,
  };
  return { value, turns, played: () => played };
}

describe('the scripted conversation engine', () => {
  it('greets, hears the answer, closes; and speaks in English when the language has no voice', async () => {
    const answer = await synthesize('no thank you');
    const call = session(agent({ prompts: [], noInputTimeoutMs: 1000 }, 'Ava'), answer);
    await new ScriptedConversationEngine().converse({
      ...call.value,
      agent: { ...call.value.agent, language: 'xx-none' },
    });
    expect(call.turns[0]).toEqual({
      role: 'assistant',
      content: 'Hello Jordan, this is Ava. Do you have a moment to talk?',
    });
    expect(call.turns[1]?.role).toBe('user');
    expect(call.turns[1]?.content).toContain('thank you');
    expect(call.turns.at(-1)).toEqual({ role: 'assistant', content: 'Thank you for your time. Goodbye.' });
    expect(call.played()).toBeGreaterThan(8000 * 3); // seconds of speech were sent
  }, 30_000);

  it('goes on to its closing when nobody answers', async () => {
    const call = session(agent({ prompts: ['Are you there?'], noInputTimeoutMs: 600 }), null);
    await new ScriptedConversationEngine().converse(call.value);
    expect(call.turns.map((turn) => turn.role)).toEqual(['assistant', 'assistant', 'assistant']);
    expect(call.turns[1]?.content).toBe('Are you there?');
  }, 30_000);
});
