import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('POST /api/v1/call/dial: errors', () => {
  let t: TestApp;
  let account: Account;

  beforeAll(async () => {
    t = await startTestApp({ env: { OUTDIAL_SIM_TALK_MS: '3000' } });
    account = await t.createAccount({ minutes: 5 });
  });
  afterAll(() => t.close());

  const post = (payload: unknown, headers: Record<string, string> = {}) =>
    t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      headers: { 'content-type': 'application/json', ...headers },
      payload: typeof payload === 'string' ? payload : JSON.stringify(payload),
    });

  it('refuses a body without agentConfigId with the validation body', async () => {
    const res = await post({ to: '+14155550123' });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      error: 'Validation failed',
      code: 'INVALID_REQUEST',
      details: { fieldErrors: { agentConfigId: ['is required'] } },
    });
  });

  it('refuses a number that cannot be read with a sentence naming it', async () => {
    const cases: Array<[string, string]> = [
      ['555-0123', '555-0123 is not a valid number for US'],
      ['+1415', '+1415 is not a possible phone number'],
      ['not a number', 'not a number is not a phone number'],
      ['+1000000000', '+1000000000 is not a possible phone number'],
    ];
    for (const [to, reason] of cases) {
      const res = await post({ to, agentConfigId: account.agentId });
      expect(res.statusCode, to).toBe(400);
      expect(res.json(), to).toMatchObject({
        code: 'INVALID_REQUEST',
        message: `to: ${reason}`,
        details: { fieldErrors: { to: [reason] } },
      });
    }
  });

  it('refuses a body with neither to nor contactId', async () => {
    const res = await post({ agentConfigId: account.agentId });
    expect(res.statusCode).toBe(400);
    expect(res.json().details.fieldErrors.to).toEqual(['is required when contactId is not given']);
  });

  it('refuses wrong types and unknown fields rather than coercing or ignoring them', async () => {
    const wrongType = await post({ to: 14155550123, agentConfigId: account.agentId });
    expect(wrongType.statusCode).toBe(400);
    expect(wrongType.json().details.fieldErrors.to).toBeDefined();
    const unknown = await post({ to: '+14155550123', agentConfigId: account.agentId, priority: 3 });
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().details.fieldErrors.priority).toEqual(['is not a recognised field']);
    const badEmail = await post({
      to: '+14155550123',
      agentConfigId: account.agentId,
      callerDetails: { email: 'nope' },
    });
    expect(badEmail.statusCode).toBe(400);
    expect(badEmail.json().details.fieldErrors['callerDetails.email']).toBeDefined();
  });

  it('answers malformed JSON, an empty body, a non-JSON body and an oversized body with 4xx error bodies', async () => {
    const malformed = await post('{"to": "+14155550123",');
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toMatchObject({ error: 'Bad Request', code: 'INVALID_JSON' });

    const empty = await post('');
    expect(empty.statusCode).toBe(400);
    expect(empty.json().error).toBeDefined();

    const text = await post('to=+14155550123', { 'content-type': 'text/plain' });
    expect(text.statusCode).toBe(415);
    expect(text.json()).toMatchObject({ error: 'Unsupported Media Type' });

    const huge = await post({
      to: '+14155550123',
      agentConfigId: account.agentId,
      callerDetails: { metadata: { blob: 'x'.repeat(2 * 1024 * 1024) } },
    });
    expect(huge.statusCode).toBe(413);
    expect(huge.json()).toMatchObject({ error: 'Payload Too Large', code: 'PAYLOAD_TOO_LARGE' });
  });

  it('answers 404 AGENT_NOT_FOUND for a missing or inactive agent', async () => {
    const missing = await post({ to: '+14155550123', agentConfigId: 'agt_missing' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ error: 'Agent not found or inactive', code: 'AGENT_NOT_FOUND' });

    const agent = await t.admin('POST', '/admin/v1/agents', {
      userId: account.userId,
      name: 'Off',
      isActive: false,
    });
    const inactive = await post({ to: '+14155550123', agentConfigId: agent.json().id });
    expect(inactive.statusCode).toBe(404);
    expect(inactive.json().code).toBe('AGENT_NOT_FOUND');
  });

  it('answers 404 for a contactId that does not exist, and 400 when to contradicts it', async () => {
    const missing = await post({ contactId: 'cnt_missing', agentConfigId: account.agentId });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });

    const first = await post({ to: '+14155550140', agentConfigId: account.agentId });
    const contradicting = await post({
      to: '+14155550141',
      contactId: first.json().contactId,
      agentConfigId: account.agentId,
    });
    expect(contradicting.statusCode).toBe(400);
    expect(contradicting.json().details.fieldErrors.to).toBeDefined();
  });

  it('answers 409 with the earlier callId while a call to the contact is in progress, also when two dials race', async () => {
    const first = await post({ to: '+14155550150', agentConfigId: account.agentId });
    expect(first.statusCode).toBe(200);
    const second = await post({ to: '+14155550150', agentConfigId: account.agentId });
    expect(second.statusCode).toBe(409);
    expect(second.json()).toEqual({ message: expect.any(String), callId: first.json().callId });

    const racing = await Promise.all(
      Array.from({ length: 5 }, () => post({ to: '+14155550151', agentConfigId: account.agentId })),
    );
    const codes = racing.map((r) => r.statusCode).sort();
    expect(codes).toEqual([200, 409, 409, 409, 409]);
    const winner = racing.find((r) => r.statusCode === 200)?.json().callId;
    for (const loser of racing.filter((r) => r.statusCode === 409)) expect(loser.json().callId).toBe(winner);
  });

  it('answers 402 INSUFFICIENT_CREDITS when the balance is not positive, and dials nothing', async () => {
    const poor = await t.createAccount({ minutes: 0 });
    const dialsBefore = t.provider.dials.length;
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: poor.key,
      payload: { to: '+14155550160', agentConfigId: poor.agentId },
    });
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({
      error: 'Insufficient call minutes',
      code: 'INSUFFICIENT_CREDITS',
      details: { estimatedMinutesRequired: 1, availableMinutes: 0 },
    });
    expect(t.provider.dials.length).toBe(dialsBefore);
  });
});
