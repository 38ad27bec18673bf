import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

/** An agent's AI settings in basicDetails through the admin API: kept as given, checked, guarded. */
describe('admin agents: AI settings in basicDetails', () => {
  let t: TestApp;
  let account: Account;
  const tool = {
    name: 'book_demo',
    description: 'Books a product demo on the given day',
    parameters: {
      type: 'object',
      properties: { day: { type: 'string', enum: ['Monday', 'Tuesday'] } },
      required: ['day'],
    },
    url: 'https://crm.example.com/tools/book',
  };
  const ai = {
    agent_name: 'Ava',
    instructions: 'You are Ava from {{company}}. Be brief.',
    firstMessage: 'Hi {{firstName}}, this is Ava.',
    voicemailMessage: 'Sorry we missed you, {{name}}.',
    transferNumber: '+14155550100',
    tools: [tool],
    interruption: { minSpeechMs: 400, ignoreWords: ['yeah', 'uh-huh'] },
    silence: { repromptMs: 6000, hangupMs: 15000 },
    maxDurationSeconds: 600,
  };
  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount();
  });
  afterAll(() => t.close());

  const create = (basicDetails: unknown) =>
    t.admin('POST', '/admin/v1/agents', { userId: account.userId, name: 'AI', basicDetails });
  const agentsOf = async () =>
    (await t.admin('GET', `/admin/v1/agents?userId=${account.userId}`)).json().agents;

  it('creates an agent with every AI setting and serves them back, to the admin and to the API key', async () => {
    const res = await create(ai);
    expect(res.statusCode).toBe(201);
    expect(res.json().basicDetails).toEqual(ai);
    const read = await t.request({
      method: 'GET',
      url: `/api/v1/agent?agentId=${res.json().id}`,
      key: account.key,
    });
    expect(read.statusCode).toBe(200);
    expect(read.json().basicDetails).toEqual(ai);
  });

  it('changes them with PATCH (basicDetails is replaced as a whole), a SIP URI as the transfer target', async () => {
    const id = (await create(ai)).json().id;
    const changed = {
      instructions: 'Shorter.',
      transferNumber: 'sip:desk@pbx.example.com',
      maxDurationSeconds: null,
    };
    const res = await t.admin('PATCH', `/admin/v1/agents/${id}`, { basicDetails: changed });
    expect(res.statusCode).toBe(200);
    expect(res.json().basicDetails).toEqual(changed);
  });

  it.each([
    [
      'instructions over 20,000 characters',
      { instructions: 'x'.repeat(20_001) },
      'basicDetails.instructions',
    ],
    ['a firstMessage that is not text', { firstMessage: 42 }, 'basicDetails.firstMessage'],
    [
      'a voicemailMessage over 2,000 characters',
      { voicemailMessage: 'x'.repeat(2001) },
      'basicDetails.voicemailMessage',
    ],
    [
      'a transferNumber that is neither E.164 nor SIP',
      { transferNumber: '555-0100' },
      'basicDetails.transferNumber',
    ],
    ['a transfer to a tel: URI', { transferNumber: 'tel:+14155550100' }, 'basicDetails.transferNumber'],
    [
      '21 tools',
      { tools: Array.from({ length: 21 }, (_, i) => ({ ...tool, name: `t${i}` })) },
      'basicDetails.tools',
    ],
    ['a tool name with a space', { tools: [{ ...tool, name: 'book demo' }] }, 'basicDetails.tools.0.name'],
    [
      'a tool name of 65 characters',
      { tools: [{ ...tool, name: 'x'.repeat(65) }] },
      'basicDetails.tools.0.name',
    ],
    ['a built-in tool name', { tools: [{ ...tool, name: 'end_call' }] }, 'basicDetails.tools.0.name'],
    ['two tools of one name', { tools: [tool, { ...tool }] }, 'basicDetails.tools.1.name'],
    [
      'a tool without a description',
      { tools: [{ ...tool, description: undefined }] },
      'basicDetails.tools.0.description',
    ],
    [
      'a tool with a field of its own',
      { tools: [{ ...tool, method: 'GET' }] },
      'basicDetails.tools.0.method',
    ],
    [
      'a tool url that is not http(s)',
      { tools: [{ ...tool, url: 'file:///etc/passwd' }] },
      'basicDetails.tools.0.url',
    ],
    [
      'tool parameters that are not an object schema',
      { tools: [{ ...tool, parameters: { type: 'string' } }] },
      'basicDetails.tools.0.parameters',
    ],
    [
      'tool parameters that are not a JSON Schema',
      { tools: [{ ...tool, parameters: { type: 'object', properties: { day: { type: 'weekday' } } } }] },
      'basicDetails.tools.0.parameters',
    ],
    [
      'tool parameters with a reference nothing resolves',
      {
        tools: [
          {
            ...tool,
            parameters: { type: 'object', properties: { day: { $ref: 'https://example.com/day.json' } } },
          },
        ],
      },
      'basicDetails.tools.0.parameters',
    ],
    [
      'parameters that are an array',
      { tools: [{ ...tool, parameters: [] }] },
      'basicDetails.tools.0.parameters',
    ],
    [
      'a negative minSpeechMs',
      { interruption: { minSpeechMs: -1 } },
      'basicDetails.interruption.minSpeechMs',
    ],
    [
      'ignoreWords that are not text',
      { interruption: { ignoreWords: [1] } },
      'basicDetails.interruption.ignoreWords.0',
    ],
    [
      'an unknown interruption field',
      { interruption: { minSpeech: 300 } },
      'basicDetails.interruption.minSpeech',
    ],
    ['a fractional repromptMs', { silence: { repromptMs: 1500.5 } }, 'basicDetails.silence.repromptMs'],
    [
      'a hang-up before the reprompt',
      { silence: { repromptMs: 9000, hangupMs: 9000 } },
      'basicDetails.silence.hangupMs',
    ],
    [
      'a hang-up before the default reprompt',
      { silence: { hangupMs: 5000 } },
      'basicDetails.silence.hangupMs',
    ],
    ['a reprompt after half a second', { silence: { repromptMs: 500 } }, 'basicDetails.silence.repromptMs'],
    ['a negative hang-up', { silence: { hangupMs: -1 } }, 'basicDetails.silence.hangupMs'],
    ['a maxDurationSeconds of 5', { maxDurationSeconds: 5 }, 'basicDetails.maxDurationSeconds'],
    ['a maxDurationSeconds over 4 hours', { maxDurationSeconds: 14_401 }, 'basicDetails.maxDurationSeconds'],
  ])('refuses %s with 400 naming %s, and stores nothing', async (_label, basicDetails, field) => {
    const before = (await agentsOf()).length;
    const res = await create(basicDetails);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'Validation failed', code: 'INVALID_REQUEST' });
    expect(res.json().details.fieldErrors[field]).toBeDefined();
    expect((await agentsOf()).length).toBe(before);
  });

  it('takes 0 for never: no reprompt, or no hang-up on silence', async () => {
    for (const silence of [{ repromptMs: 0 }, { hangupMs: 0 }, { repromptMs: 0, hangupMs: 0 }]) {
      const res = await create({ silence });
      expect(res.statusCode, JSON.stringify(silence)).toBe(201);
      expect(res.json().basicDetails.silence).toEqual(silence);
    }
  });

  it('refuses a bad PATCH and keeps the settings it had', async () => {
    const id = (await create(ai)).json().id;
    const res = await t.admin('PATCH', `/admin/v1/agents/${id}`, {
      basicDetails: { ...ai, tools: [tool, { ...tool, name: 'transfer_call' }] },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().details.fieldErrors['basicDetails.tools.1.name']).toEqual([
      expect.stringContaining('built-in tool'),
    ]);
    const stored = (await agentsOf()).find((agent: { id: string }) => agent.id === id);
    expect(stored.basicDetails).toEqual(ai);
  });

  it('names every bad field at once', async () => {
    const res = await create({
      transferNumber: 'nowhere',
      tools: [tool, tool],
      silence: { repromptMs: 20_000 },
    });
    expect(res.statusCode).toBe(400);
    expect(Object.keys(res.json().details.fieldErrors).sort()).toEqual([
      'basicDetails.silence.hangupMs',
      'basicDetails.tools.1.name',
      'basicDetails.transferNumber',
    ]);
  });

  it('takes AI settings only with the admin token: an API key or no token is 401, nothing stored', async () => {
    const before = (await agentsOf()).length;
    const body = { userId: account.userId, name: 'Sneaky', basicDetails: ai };
    const withKey = await t.request({
      method: 'POST',
      url: '/admin/v1/agents',
      key: account.key,
      payload: body,
    });
    expect(withKey.statusCode).toBe(401);
    expect(withKey.json()).toEqual({ error: 'Unauthorized', message: 'Invalid or missing admin token' });
    const without = await t.request({ method: 'POST', url: '/admin/v1/agents', payload: body });
    expect(without.statusCode).toBe(401);
    expect((await agentsOf()).length).toBe(before);
  });

  it('reads one agent with GET /admin/v1/agents/:agentId, only with the admin token', async () => {
    const created = (await create(ai)).json();
    const read = await t.admin('GET', `/admin/v1/agents/${created.id}`);
    expect(read.statusCode).toBe(200);
    expect(read.json()).toEqual(created);
    expect((await t.admin('GET', '/admin/v1/agents/agt_missing')).statusCode).toBe(404);
    const withKey = await t.request({
      method: 'GET',
      url: `/admin/v1/agents/${created.id}`,
      key: account.key,
    });
    expect(withKey.statusCode).toBe(401);
    expect(withKey.body).not.toContain('crm.example.com');
  });

  it("never shows an agent's instructions and tools to another user's key", async () => {
    const id = (await create(ai)).json().id;
    const other = await t.createAccount();
    const read = await t.request({ method: 'GET', url: `/api/v1/agent?agentId=${id}`, key: other.key });
    expect(read.statusCode).toBe(404);
    expect(read.body).not.toContain('crm.example.com');
  });
});
