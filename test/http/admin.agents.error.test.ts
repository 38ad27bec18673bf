import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApp, type TestApp } from '../helpers/app.js';

describe('admin agents: errors', () => {
  let t: TestApp;
  let userId: string;
  let agentId: string;
  beforeAll(async () => {
    t = await startTestApp();
    userId = (await t.admin('POST', '/admin/v1/users', { name: 'U' })).json().id;
    agentId = (await t.admin('POST', '/admin/v1/agents', { userId, name: 'A' })).json().id;
  });
  afterAll(() => t.close());

  it.each([
    [{ name: 'x' }, 'userId'],
    [{ userId: 'usr_x' }, 'name'],
    [{ userId: 'usr_x', name: 'x', type: 'SIDEWAYS' }, 'type'],
    [{ userId: 'usr_x', name: 'x', isActive: 'yes' }, 'isActive'],
    [{ userId: 'usr_x', name: 'x', basicDetails: { voiceSpeed: 9 } }, 'basicDetails.voiceSpeed'],
    [{ userId: 'usr_x', name: 'x', metricConfig: { enabled: true } }, 'metricConfig.customMetrics'],
    [
      {
        userId: 'usr_x',
        name: 'x',
        metricConfig: { enabled: true, customMetrics: [{ name: 'bad name', type: 'string' }] },
      },
      'metricConfig.customMetrics.0.name',
    ],
    [{ userId: 'usr_x', name: 'x', colour: 'blue' }, 'colour'],
  ])('refuses %o naming %s', async (body, field) => {
    const res = await t.admin('POST', '/admin/v1/agents', body);
    expect(res.statusCode).toBe(400);
    expect(res.json().details.fieldErrors[field]).toBeDefined();
  });

  it('refuses an enum metric without options and duplicate metric names', async () => {
    const noOptions = await t.admin('POST', '/admin/v1/agents', {
      userId,
      name: 'x',
      metricConfig: { enabled: true, customMetrics: [{ name: 'tier', type: 'enum' }] },
    });
    expect(noOptions.statusCode).toBe(400);
    expect(noOptions.json().details.fieldErrors['metricConfig.customMetrics.0.options']).toBeDefined();
    const duplicate = await t.admin('PATCH', `/admin/v1/agents/${agentId}`, {
      metricConfig: {
        enabled: true,
        customMetrics: [
          { name: 'a', type: 'string' },
          { name: 'a', type: 'number' },
        ],
      },
    });
    expect(duplicate.statusCode).toBe(400);
  });

  it('answers 404 for an unknown user or agent, and 400 for an empty PATCH or a list without userId', async () => {
    expect((await t.admin('POST', '/admin/v1/agents', { userId: 'usr_missing', name: 'x' })).statusCode).toBe(
      404,
    );
    expect((await t.admin('PATCH', '/admin/v1/agents/agt_missing', { name: 'x' })).statusCode).toBe(404);
    expect((await t.admin('PATCH', `/admin/v1/agents/${agentId}`, {})).statusCode).toBe(400);
    const list = await t.admin('GET', '/admin/v1/agents');
    expect(list.statusCode).toBe(400);
    expect(list.json()).toMatchObject({ error: 'Bad Request', message: 'Missing required parameter' });
  });
});
