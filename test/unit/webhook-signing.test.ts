import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { afterAttempt, signatureHeaders } from '../../src/domain/webhooks.js';

describe('webhook signatures', () => {
  it('matches the Standard Webhooks reference vector', () => {
    // The example of the Standard Webhooks specification: secret, id, timestamp, body, signature.
    const headers = signatureHeaders({
      id: 'msg_p5jXN8AQM9LWM0D4loKWxJek',
      timestamp: 1614265330,
      body: '{"test": 2432232314}',
      secrets: ['whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw'],
    });
    expect(headers['webhook-signature']).toBe('v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=');
    expect(headers['webhook-id']).toBe('msg_p5jXN8AQM9LWM0D4loKWxJek');
    expect(headers['webhook-timestamp']).toBe('1614265330');
  });

  it('signs the exact body bytes in hex for x-outdial-signature with the current secret only, one value even during a rotation', () => {
    const body = '{"event":"batch.failed","name":"Zoë"}';
    const current = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
    const previous = `whsec_${Buffer.alloc(32, 9).toString('base64')}`;
    const hex = (secret: string) =>
      createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
        .update(Buffer.from(body, 'utf8'))
        .digest('hex');
    const one = signatureHeaders({ id: 'dlv_1', timestamp: 1, body, secrets: [current] });
    expect(one['x-outdial-signature']).toBe(hex(current));
    const both = signatureHeaders({ id: 'dlv_1', timestamp: 1, body, secrets: [current, previous] });
    expect(both['x-outdial-signature']).toBe(hex(current));
    expect(both['x-outdial-signature']).toMatch(/^[0-9a-f]{64}$/);
    // The Standard Webhooks header carries one v1 signature per secret: new first, then old.
    const standard = (secret: string) =>
      `v1,${createHmac('sha256', Buffer.from(secret.slice(6), 'base64'))
        .update(`dlv_1.1.${body}`)
        .digest('base64')}`;
    expect(both['webhook-signature']).toBe(`${standard(current)} ${standard(previous)}`);
  });

  it('refuses a secret without the whsec_ prefix', () => {
    expect(() => signatureHeaders({ id: 'x', timestamp: 1, body: '{}', secrets: ['plain'] })).toThrow(
      /whsec_/,
    );
  });
});

describe('what follows a delivery attempt', () => {
  const delays = [1000, 5000, 25000];
  it('is done on any 2xx', () => {
    expect(afterAttempt({ kind: 'delivered', status: 204 }, 1, delays)).toEqual({ state: 'succeeded' });
  });
  it('retries other answers and errors after 1 s, 5 s, 25 s, then gives up after the fourth attempt', () => {
    const failure = { kind: 'rejected', status: 503 } as const;
    expect(afterAttempt(failure, 1, delays)).toEqual({ state: 'retry', delayMs: 1000 });
    expect(afterAttempt(failure, 2, delays)).toEqual({ state: 'retry', delayMs: 5000 });
    expect(afterAttempt({ kind: 'error', error: 'ECONNRESET', retryable: true }, 3, delays)).toEqual({
      state: 'retry',
      delayMs: 25000,
    });
    expect(afterAttempt(failure, 4, delays)).toEqual({ state: 'failed', reason: 'gave up after 4 attempts' });
  });
  it('stops at once on 410 Gone and on a refused address', () => {
    expect(afterAttempt({ kind: 'rejected', status: 410 }, 1, delays)).toMatchObject({ state: 'failed' });
    expect(afterAttempt({ kind: 'error', error: 'private', retryable: false }, 1, delays)).toEqual({
      state: 'failed',
      reason: 'private',
    });
  });
  it('with no retry delays configured, tries once', () => {
    expect(afterAttempt({ kind: 'rejected', status: 500 }, 1, [])).toEqual({
      state: 'failed',
      reason: 'gave up after 1 attempt',
    });
  });
});
