import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, startTestApp, type TestApp } from '../helpers/app.js';

describe('POST /api/v1/batch: errors', () => {
  let t: TestApp;
  let account: Account;
  beforeAll(async () => {
    t = await startTestApp();
    account = await t.createAccount({ minutes: 5 });
  });
  afterAll(() => t.close());

  const post = (body: Record<string, unknown>, key = account.key) =>
    t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key,
      payload: { agentId: account.agentId, userId: account.userId, ...body },
    });
  const one = [{ phoneNumber: '+14155550123' }];

  it.each([
    [{ contacts: [] }, 'contacts'],
    [
      {
        contacts: [
          ...Array.from({ length: 12 }, (_, i) => ({ phoneNumber: `+1415555${1000 + i}` })),
          { phoneNumber: '555-0123' },
        ],
      },
      'contacts.12.phoneNumber',
    ],
    [{ contacts: one, options: { priority: 11 } }, 'options.priority'],
    [{ contacts: one, options: { maxCallsPerSecond: 31 } }, 'options.maxCallsPerSecond'],
    [{ contacts: one, options: { maxCallsPerSecond: 0 } }, 'options.maxCallsPerSecond'],
    [{ contacts: one, options: { retryStrategy: { maxAttempts: 6 } } }, 'options.retryStrategy.maxAttempts'],
    [
      { contacts: one, options: { retryStrategy: { retryOnVoicemail: 'yes' } } },
      'options.retryStrategy.retryOnVoicemail',
    ],
    [
      { contacts: one, options: { retryStrategy: { retryOnVoicemail: 1 } } },
      'options.retryStrategy.retryOnVoicemail',
    ],
    [{ contacts: one, options: { speed: 3 } }, 'options.speed'],
    [{ contacts: one, options: { priority: '5' } }, 'options.priority'],
    [{ contacts: one, options: { timezone: 'Mars/Base' } }, 'options.timezone'],
    [
      { contacts: one, options: { webhooks: { onBatchComplete: 'ftp://example.com/hook' } } },
      'options.webhooks.onBatchComplete',
    ],
  ])('refuses %o naming %s', async (body, field) => {
    const payload = { ...body } as Record<string, unknown>;
    const res = await post(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ error: 'Validation failed', code: 'INVALID_REQUEST' });
    expect(res.json().details.fieldErrors[field], JSON.stringify(res.json())).toBeDefined();
  });

  it('names a missing agentId', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: account.key,
      payload: { userId: account.userId, contacts: one },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().details.fieldErrors.agentId).toEqual(['is required']);
  });

  it('refuses a start time that is not in the future with exactly the spec body', async () => {
    const res = await post({ contacts: one, options: { scheduledStartTime: '2020-01-01T00:00:00Z' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'Scheduled start time must be in the future' });
  });

  it('answers 404 AGENT_NOT_FOUND for a missing or an inactive agent', async () => {
    const missing = await post({ contacts: one, agentId: 'agt_missing' });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ error: 'Agent not found or inactive', code: 'AGENT_NOT_FOUND' });
    const off = (
      await t.admin('POST', '/admin/v1/agents', { userId: account.userId, name: 'Off', isActive: false })
    ).json();
    expect((await post({ contacts: one, agentId: off.id })).json().code).toBe('AGENT_NOT_FOUND');
  });

  it('answers 402 with the estimate and the balance, counting duplicates once', async () => {
    const contacts = Array.from({ length: 6 }, (_, i) => ({ phoneNumber: `+1415555${2000 + i}` }));
    const res = await post({ contacts: [...contacts, contacts[0]] });
    expect(res.statusCode).toBe(402);
    expect(res.json()).toMatchObject({
      error: 'Insufficient call minutes',
      code: 'INSUFFICIENT_CREDITS',
      details: { estimatedMinutesRequired: 6, availableMinutes: 5 },
    });
    const fits = await post({ contacts: [...contacts.slice(0, 5), contacts[0]] });
    expect(fits.statusCode).toBe(202);
  });

  it('answers malformed JSON and non-JSON bodies with 4xx, and a refused batch leaves nothing behind', async () => {
    const other = await t.createAccount({ minutes: 5 });
    const malformed = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: other.key,
      headers: { 'content-type': 'application/json' },
      payload: '{"contacts": [',
    });
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toMatchObject({ error: 'Bad Request', code: 'INVALID_JSON' });
    const text = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: other.key,
      headers: { 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(text.statusCode).toBe(415);
    await post({ contacts: [] }, other.key);
    const list = await t.request({ method: 'GET', url: '/api/v1/batch/list', key: other.key });
    expect(list.json()).toEqual([]);
  });
});
