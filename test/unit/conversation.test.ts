import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { agentScript, loadConversationEngine } from '../../src/adapters/voice/conversation.js';
import type { DialAgent } from '../../src/ports.js';

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

  it('loads the offline engine by default, or a module that exports one', async () => {
    expect((await loadConversationEngine('offline')).name).toBe('offline');
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
});
