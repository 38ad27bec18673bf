import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, STORE, startTestApp, type TestApp } from '../helpers/app.js';

/**
 * Live call control's errors, on canned simulated calls (no LLM configured: an answered call plays
 * its script, with no agent session to take commands) that stay up for a minute.
 */
describe(`live call control errors (${STORE})`, () => {
  let t: TestApp;
  let account: Account;
  beforeAll(async () => {
    t = await startTestApp({
      env: { OUTDIAL_SIM_RING_MS: '30', OUTDIAL_SIM_TALK_MS: '60000' },
      overrides: { liveCommandTimeoutMs: 300 },
    });
    account = await t.createAccount();
  });
  afterAll(() => t.close());

  const dial = async (to: string) => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: { to, agentConfigId: account.agentId },
    });
    expect(res.statusCode, res.body).toBe(200);
    return res.json<{ callId: string }>().callId;
  };
  const post = (url: string, payload?: unknown) =>
    t.request({
      method: 'POST',
      url,
      key: account.key,
      ...(payload === undefined ? {} : { payload: payload as Record<string, unknown> }),
    });
  const commands = () =>
    [
      ['hangup', undefined],
      ['transfer', { to: '+14155550199' }],
      ['say', { text: 'Hello there.' }],
    ] as const;

  it('answers 409 CALL_NOT_LIVE to transfer and say on a call with no agent session (a canned simulated call)', async () => {
    const callId = await dial('+14155550123');
    // Hang-up works on it (test/http/call.hangup.test.ts).
    for (const [action, body] of commands().filter(([action]) => action !== 'hangup')) {
      const res = await post(`/api/v1/call/${action}?callId=${callId}`, body);
      expect(res.statusCode, `${action}: ${res.body}`).toBe(409);
      expect(res.json()).toMatchObject({ error: 'Conflict', code: 'CALL_NOT_LIVE' });
      expect(res.json().message).toMatch(/no agent is talking/i);
    }
  });

  it('answers 409 CALL_NOT_LIVE for a call that has ended', async () => {
    const callId = await dial('+14155550001'); // busy
    await eventually(async () => {
      const res = await t.request({
        method: 'GET',
        url: `/api/v1/call/check-status?callId=${callId}`,
        key: account.key,
      });
      return res.json().data.status === 'BUSY' ? true : undefined;
    });
    for (const [action, body] of commands()) {
      const res = await post(`/api/v1/call/${action}?callId=${callId}`, body);
      expect(res.statusCode, action).toBe(409);
      expect(res.json()).toMatchObject({ code: 'CALL_NOT_LIVE', message: expect.stringContaining('BUSY') });
    }
  });

  it('answers 504 LIVE_CALL_TIMEOUT when the process holding the call does not answer in time', async () => {
    const callId = await dial('+14155550124');
    // A host that takes the call's commands and never answers them.
    const stop = await t.runtime.liveChannel.serve(callId, () => new Promise(() => {}));
    try {
      const res = await post(`/api/v1/call/hangup?callId=${callId}`);
      expect(res.statusCode, res.body).toBe(504);
      expect(res.json()).toMatchObject({ error: 'Gateway Timeout', code: 'LIVE_CALL_TIMEOUT' });
    } finally {
      await stop();
    }
  });

  it('answers 404 for a call that does not exist', async () => {
    for (const [action, body] of commands()) {
      const res = await post(`/api/v1/call/${action}?callId=call_0000000000000000000000`, body);
      expect(res.statusCode, action).toBe(404);
      expect(res.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
    }
    const events = await t.request({
      method: 'GET',
      url: '/api/v1/call/events?callId=call_0000000000000000000000',
      key: account.key,
    });
    expect(events.statusCode).toBe(404);
  });

  it('answers 400 for a missing or malformed callId', async () => {
    for (const url of [
      '/api/v1/call/hangup',
      `/api/v1/call/hangup?callId=${'x'.repeat(65)}`,
      '/api/v1/call/hangup?callId=',
      '/api/v1/call/hangup?callId=a&extra=1',
    ]) {
      const res = await post(url);
      expect(res.statusCode, url).toBe(400);
    }
    const events = await t.request({ method: 'GET', url: '/api/v1/call/events', key: account.key });
    expect(events.statusCode).toBe(400);
    expect(events.json()).toMatchObject({ error: 'Bad Request', message: 'Missing required parameter' });
  });

  it('answers 400 for a bad body, naming the field', async () => {
    const callId = await dial('+14155550125');
    const cases: Array<[string, unknown, string]> = [
      ['transfer', {}, 'to'],
      ['transfer', { to: 'desk' }, 'to'],
      ['transfer', { to: '4155550199' }, 'to'],
      ['transfer', { to: 12 }, 'to'],
      ['transfer', { to: '+14155550199', extra: true }, 'extra'],
      ['say', {}, 'text'],
      ['say', { text: '' }, 'text'],
      ['say', { text: '   ' }, 'text'],
      ['say', { text: 'x'.repeat(2001) }, 'text'],
    ];
    for (const [action, body, field] of cases) {
      const res = await post(`/api/v1/call/${action}?callId=${callId}`, body);
      expect(res.statusCode, `${action} ${JSON.stringify(body)}: ${res.body}`).toBe(400);
      expect(res.json()).toMatchObject({ error: 'Validation failed', code: 'INVALID_REQUEST' });
      expect(Object.keys(res.json().details.fieldErrors)).toContain(field);
    }
    const text = await t.request({
      method: 'POST',
      url: `/api/v1/call/say?callId=${callId}`,
      key: account.key,
      headers: { 'content-type': 'text/plain' },
      payload: 'hello',
    });
    expect(text.statusCode).toBe(415);
  });

  it('declares every status in the OpenAPI document', async () => {
    const doc = (await t.request({ method: 'GET', url: '/api/v1/openapi.json' })).json();
    for (const [path, method] of [
      ['/api/v1/call/hangup', 'post'],
      ['/api/v1/call/transfer', 'post'],
      ['/api/v1/call/say', 'post'],
      ['/api/v1/call/events', 'get'],
    ] as const) {
      const operation = doc.paths[path][method];
      expect(operation.tags, path).toEqual(['calls']);
      expect(operation.operationId, path).toBeTruthy();
      expect(operation.summary, path).toBeTruthy();
      expect(operation.description, path).toBeTruthy();
      const statuses = Object.keys(operation.responses);
      for (const status of ['200', '400', '401', '404', '500'])
        expect(statuses, `${path} ${status}`).toContain(status);
      if (method === 'post')
        for (const status of ['409', '504']) expect(statuses, `${path} ${status}`).toContain(status);
    }
    expect(Object.keys(doc.paths['/api/v1/call/events'].get.responses['200'].content)).toEqual([
      'text/event-stream',
    ]);
    const endedReason =
      doc.paths['/api/v1/call/check-status'].get.responses['200'].content['application/json'].schema
        .properties.data.properties.endedReason;
    expect(JSON.stringify(endedReason)).toContain('operator-ended');
  });
});
