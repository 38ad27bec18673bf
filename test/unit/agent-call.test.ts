import { describe, expect, it } from 'vitest';
import {
  AGENT_AI_DEFAULTS,
  agentAiSettings,
  DEFAULT_IGNORE_WORDS,
  dialVariables,
  fillVariables,
  latencySummary,
  validateAgentAi,
} from '../../src/domain/agent-call.js';

describe('fillVariables', () => {
  it('fills {{name}} placeholders, white space inside the braces allowed', () => {
    expect(fillVariables('Hi {{name}}, from {{ company }}!', { name: 'Ada', company: 'Acme' })).toBe(
      'Hi Ada, from Acme!',
    );
  });

  it('leaves an unknown variable empty', () => {
    expect(fillVariables('Hi {{name}}{{nope}}.', { name: 'Ada' })).toBe('Hi Ada.');
  });

  it('names metadata keys with spaces and punctuation', () => {
    expect(
      fillVariables('Plan: {{ plan tier }} / {{order-id}}', { 'plan tier': 'gold', 'order-id': '7' }),
    ).toBe('Plan: gold / 7');
  });

  it('puts values in as they are, even ones that look like replacement patterns ($&, $1)', () => {
    expect(fillVariables('Pay {{amount}}', { amount: '$& $1 $$' })).toBe('Pay $& $1 $$');
  });

  it('does not read inherited object keys as variables', () => {
    expect(fillVariables('[{{constructor}}][{{toString}}]', {})).toBe('[][]');
  });

  it('keeps single braces and text without placeholders as they are', () => {
    expect(fillVariables('{name} {{}} plain', { name: 'x' })).toBe('{name}  plain');
  });
});

describe('dialVariables', () => {
  it('gives the contact fields under their names', () => {
    expect(
      dialVariables({ name: 'Ada Lovelace', phoneNumber: '+14155550123', company: 'Acme' }, {}, {}),
    ).toEqual({
      name: 'Ada Lovelace',
      contactName: 'Ada Lovelace',
      firstName: 'Ada',
      company: 'Acme',
      phoneNumber: '+14155550123',
    });
  });

  it("gives empty name variables for a contact stored without a name ('Unknown')", () => {
    const vars = dialVariables({ name: 'Unknown', phoneNumber: '+14155550123' }, {}, {});
    expect(vars).toMatchObject({ name: '', contactName: '', firstName: '', company: '' });
    expect(fillVariables('Hello{{ firstName }}.', vars)).toBe('Hello.');
  });

  it('adds every metadata key as text, and the dial variables win on a clash', () => {
    const vars = dialVariables(
      { name: 'Ada', phoneNumber: '+14155550123', company: null },
      { plan: 'gold', seats: 12, vip: true, none: null, address: { city: 'Paris' }, name: 'From metadata' },
      { plan: 'platinum' },
    );
    expect(vars).toMatchObject({
      company: '',
      plan: 'platinum',
      seats: '12',
      vip: 'true',
      none: '',
      address: '{"city":"Paris"}',
      name: 'From metadata',
      contactName: 'Ada',
    });
  });
});

describe('agentAiSettings', () => {
  it('gives the defaults for an agent without AI settings', () => {
    expect(agentAiSettings({ voiceId: 'x' }, {})).toEqual({
      instructions: null,
      firstMessage: null,
      voicemailMessage: null,
      transferNumber: null,
      tools: [],
      interruption: { minSpeechMs: AGENT_AI_DEFAULTS.minSpeechMs, ignoreWords: DEFAULT_IGNORE_WORDS },
      silence: { repromptMs: 8000, hangupMs: 20000 },
      maxDurationSeconds: null,
    });
  });

  it('keeps "yes" and "no" out of the default backchannels, and has "yeah" and "uh-huh" in', () => {
    expect(DEFAULT_IGNORE_WORDS).not.toContain('yes');
    expect(DEFAULT_IGNORE_WORDS).not.toContain('no');
    expect(DEFAULT_IGNORE_WORDS).toEqual(expect.arrayContaining(['yeah', 'uh-huh', 'mm-hmm', 'okay']));
  });

  it('reads the settings and fills variables into the instructions and messages', () => {
    const tool = {
      name: 'book',
      description: 'Books a slot',
      parameters: { type: 'object', properties: { day: { type: 'string' } } },
      url: 'https://example.com/book',
    };
    const settings = agentAiSettings(
      {
        instructions: 'You call {{name}} of {{company}}.',
        firstMessage: 'Hello {{ firstName }}!',
        voicemailMessage: 'Call us back, {{name}}.',
        transferNumber: '+14155550100',
        tools: [tool],
        interruption: { minSpeechMs: 450, ignoreWords: ['yeah'] },
        silence: { repromptMs: 5000, hangupMs: 15000 },
        maxDurationSeconds: 600,
      },
      dialVariables({ name: 'Ada Lovelace', phoneNumber: '+14155550123', company: 'Acme' }, {}, {}),
    );
    expect(settings).toEqual({
      instructions: 'You call Ada Lovelace of Acme.',
      firstMessage: 'Hello Ada!',
      voicemailMessage: 'Call us back, Ada Lovelace.',
      transferNumber: '+14155550100',
      tools: [tool],
      interruption: { minSpeechMs: 450, ignoreWords: ['yeah'] },
      silence: { repromptMs: 5000, hangupMs: 15000 },
      maxDurationSeconds: 600,
    });
  });

  it('reads values of the wrong type as absent', () => {
    const settings = agentAiSettings(
      {
        instructions: 42,
        firstMessage: '   ',
        tools: 'none',
        interruption: { minSpeechMs: 'fast', ignoreWords: 'yeah' },
        silence: [],
        maxDurationSeconds: -5,
      },
      {},
    );
    expect(settings.instructions).toBeNull();
    expect(settings.firstMessage).toBeNull();
    expect(settings.tools).toEqual([]);
    expect(settings.interruption).toEqual({ minSpeechMs: 300, ignoreWords: DEFAULT_IGNORE_WORDS });
    expect(settings.silence).toEqual({ repromptMs: 8000, hangupMs: 20000 });
    expect(settings.maxDurationSeconds).toBeNull();
  });

  it('does not share the default backchannel list between calls', () => {
    const one = agentAiSettings({}, {});
    one.interruption.ignoreWords.push('changed');
    expect(agentAiSettings({}, {}).interruption.ignoreWords).not.toContain('changed');
  });
});

describe('latencySummary', () => {
  const turn = (voiceToVoiceMs: number | null) => ({
    endpointingMs: 500,
    sttMs: 100,
    llmFirstTokenMs: 150,
    ttsFirstByteMs: 80,
    voiceToVoiceMs,
  });

  it('is null without a measured turn', () => {
    expect(latencySummary([])).toBeNull();
    expect(latencySummary([turn(null)])).toBeNull();
  });

  it('gives nearest-rank p50 and p95 of the measured turns', () => {
    const turns = [900, 700, 800, null, 2000, 1000].map(turn);
    expect(latencySummary(turns)).toEqual({ turns: 5, voiceToVoiceP50Ms: 900, voiceToVoiceP95Ms: 2000 });
    expect(latencySummary([turn(640)])).toEqual({ turns: 1, voiceToVoiceP50Ms: 640, voiceToVoiceP95Ms: 640 });
  });
});

describe('validateAgentAi', () => {
  const tool = (name: string, parameters: Record<string, unknown>) => ({
    name,
    description: 'd',
    parameters,
    url: 'https://example.com/t',
  });

  it('accepts good settings, two tools with one $id, and a schema naming its draft', () => {
    expect(
      validateAgentAi({
        transferNumber: 'sips:desk@pbx.example.com:5061;transport=tls',
        tools: [
          tool('a', { $id: 'args', type: 'object', properties: { n: { type: 'integer' } } }),
          tool('b', { $id: 'args', type: 'object' }),
          tool('c', { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object' }),
        ],
        silence: { repromptMs: 5000 },
      }),
    ).toEqual({});
  });

  it('names each bad field by its path', () => {
    expect(
      Object.keys(
        validateAgentAi({
          transferNumber: '+1000000000',
          tools: [tool('send_dtmf', { type: 'object' }), tool('x', { type: 'object', required: 'n' })],
          silence: { repromptMs: 30_000 },
        }),
      ).sort(),
    ).toEqual([
      'basicDetails.silence.hangupMs',
      'basicDetails.tools.0.name',
      'basicDetails.tools.1.parameters',
      'basicDetails.transferNumber',
    ]);
  });

  it('refuses tool parameters over 16 KB of JSON', () => {
    const big = { type: 'object', description: 'x'.repeat(16_400) };
    expect(validateAgentAi({ tools: [tool('big', big)] })['basicDetails.tools.0.parameters']).toEqual([
      expect.stringContaining('16384'),
    ]);
  });
});
