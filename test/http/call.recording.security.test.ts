import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Account, eventually, startTestApp, type TestApp, TestClock } from '../helpers/app.js';

/**
 * Signed recording links are credentials: they expire (OUTDIAL_RECORDING_URL_TTL_HOURS, here 2 h,
 * rounded up to the hour), every read hands out a fresh one, and the request log never holds one,
 * nor an Authorization or Cookie header.
 */
describe('recording links: expiry and the request log', () => {
  let t: TestApp;
  let alice: Account;
  let callId: string;
  const clock = new TestClock();
  const lines: string[] = [];
  const HOUR = 3_600_000;

  beforeAll(async () => {
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString('utf8').split('\n').filter(Boolean));
        done();
      },
    });
    t = await startTestApp({
      env: { OUTDIAL_RECORDING_URL_TTL_HOURS: '2' },
      overrides: { clock, logger: pino({ level: 'info' }, sink) },
    });
    alice = await t.createAccount();
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to: '+14155550123', agentConfigId: alice.agentId },
    });
    expect(dial.statusCode, dial.body).toBe(200);
    callId = dial.json<{ callId: string }>().callId;
    await eventually(async () => (await recordingPath('/api/v1/call/check-status')) ?? undefined);
  });
  afterAll(() => t.close());

  /** The recording link a read of the call answers now (path and query, for inject). */
  const recordingPath = async (read: string): Promise<string | null> => {
    const res = await t.request({ method: 'GET', url: `${read}?callId=${callId}`, key: alice.key });
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json<{ recordingUrl?: string | null; data?: { recordingUrl: string | null } }>();
    const url = body.data ? body.data.recordingUrl : (body.recordingUrl ?? null);
    if (url === null) return null;
    const parsed = new URL(url);
    return parsed.pathname + parsed.search;
  };
  const fetchRecording = (path: string) => t.request({ method: 'GET', url: path });

  it('stops working after its expiry, and the next read of the call gives a link that works', async () => {
    for (const read of ['/api/v1/call/check-status', '/api/v1/status/call']) {
      const old = await recordingPath(read);
      if (!old) throw new Error(`${read} gave no recording link`);
      expect((await fetchRecording(old)).statusCode).toBe(200);

      clock.advance(HOUR);
      expect((await fetchRecording(old)).statusCode, 'still valid within the TTL').toBe(200);
      clock.advance(2 * HOUR + 1000);
      const expired = await fetchRecording(old);
      expect(expired.statusCode).toBe(404);
      expect(expired.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });

      const fresh = await recordingPath(read);
      expect(fresh).not.toBe(old);
      expect((await fetchRecording(fresh ?? '')).statusCode).toBe(200);
    }
  });

  it('refuses a link whose expiry was pushed back, and the old never-expiring form', async () => {
    const path = (await recordingPath('/api/v1/call/check-status')) ?? '';
    const url = new URL(path, 'http://x');
    const [expires, signature] = (url.searchParams.get('token') ?? '').split('.');
    for (const token of [`${Number(expires) + 86_400}.${signature}`, signature, `${expires}.`, '']) {
      const res = await fetchRecording(`${url.pathname}?token=${token}`);
      expect(res.statusCode, token).toBe(404);
      expect(res.json()).toEqual({ error: 'Not Found', message: 'Resource not found' });
    }
  });

  it('keeps tokens, API keys and cookies out of the request log', async () => {
    const path = (await recordingPath('/api/v1/call/check-status')) ?? '';
    const token = new URL(path, 'http://x').searchParams.get('token') ?? '';
    expect(token.length).toBeGreaterThan(20);
    lines.length = 0;
    expect((await fetchRecording(path)).statusCode).toBe(200);
    await t.request({
      method: 'GET',
      url: `/api/v1/call/check-status?callId=${callId}&Token=${token}`,
      key: alice.key,
      headers: { cookie: 'outdial_session=cookie-value-0123456789' },
    });
    const log = lines.join('\n');
    expect(lines.some((line) => line.includes('recording.wav'))).toBe(true);
    expect(log).not.toContain(token);
    expect(log).not.toContain(token.split('.')[1]);
    expect(log).not.toContain(alice.key);
    expect(log).not.toContain('cookie-value-0123456789');
  });
});
