import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('admin agents: happy path', () => {
  let t: TestApp;
  let userId: string;
  beforeAll(async () => {
    t = await startTestApp();
    userId = (await t.admin('POST', '/admin/v1/users', { name: 'U', minutes: 10 })).json().id;
  });
  afterAll(() => t.close());

  it("creates an agent in the spec's shape, with defaults", async () => {
    const res = await t.admin('POST', '/admin/v1/agents', { userId, name: 'Plain' });
    expect(res.statusCode).toBe(201);
    expect(res.json()).toEqual({
      id: expect.stringMatching(/^agt_/),
      userId,
      name: 'Plain',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      type: 'OUTBOUND',
      isActive: true,
      basicDetails: {},
      metricConfig: { enabled: false, customMetrics: [] },
      sipTrunkId: null,
    });
  });

  it('keeps every field given, including extra basicDetails keys and custom metrics', async () => {
    const trunkId = (
      await t.admin('POST', '/admin/v1/sip-trunks', {
        userId,
        name: 'PBX',
        host: 'pbx.example.com',
        fromNumber: '+14155550100',
      })
    ).json().id;
    const body = {
      userId,
      name: 'Hindi sales',
      type: 'INBOUND',
      isActive: false,
      basicDetails: {
        dialId: 'Dial6',
        voiceId: 'v-12',
        agent_name: 'Asha',
        voiceSpeed: 1.2,
        voiceGender: 'female',
        agentLanguage: 'hi',
        persona: 'warm',
      },
      metricConfig: {
        enabled: true,
        customMetrics: [
          { name: 'budget_confirmed', type: 'boolean', description: 'Did they confirm a budget?' },
          { name: 'tier', type: 'enum', options: ['gold', 'silver'] },
        ],
      },
      sipTrunkId: trunkId,
    };
    const res = await t.admin('POST', '/admin/v1/agents', body);
    expect(res.statusCode).toBe(201);
    const { userId: _u, ...expected } = body;
    expect(res.json()).toMatchObject(expected);
  });

  it('changes an agent with PATCH and lists the user’s agents newest first', async () => {
    const created = (await t.admin('POST', '/admin/v1/agents', { userId, name: 'Before' })).json();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const patched = await t.admin('PATCH', `/admin/v1/agents/${created.id}`, {
      name: 'After',
      isActive: false,
    });
    expect(patched.statusCode).toBe(200);
    expect(patched.json()).toMatchObject({
      id: created.id,
      name: 'After',
      isActive: false,
      createdAt: created.createdAt,
    });
    expect(Date.parse(patched.json().updatedAt)).toBeGreaterThan(Date.parse(created.updatedAt));

    const list = (await t.admin('GET', `/admin/v1/agents?userId=${userId}`)).json().agents;
    expect(list.length).toBeGreaterThanOrEqual(3);
    expect(list[0].id).toBe(created.id);
    const times = list.map((a: { createdAt: string }) => Date.parse(a.createdAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
  });
});
