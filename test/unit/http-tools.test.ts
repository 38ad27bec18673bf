import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { HttpTool } from '../../src/domain/agent-call.js';
import { newWebhookSecret } from '../../src/services/users.js';
import { HttpToolCaller } from '../../src/voice/http-tools.js';
import { webhookDispatcher } from '../../src/webhooks/address-guard.js';
import { Receiver, verifySignatures } from '../helpers/receiver.js';

/**
 * An agent's HTTP tool against a real local receiver: the signed request it gets, the answer the
 * model is handed, and every way a tool fails (an error answer, no answer in time, an address the
 * guard refuses, no secret to sign with).
 */
describe('HTTP tools', () => {
  let receiver: Receiver;
  const secret = newWebhookSecret();
  const dispatcher = webhookDispatcher({ allowPrivate: true });
  const caller = new HttpToolCaller({
    dispatcher,
    allowPrivate: true,
    signingSecrets: async (callId) => (callId === 'call_unsigned' ? [] : [secret]),
    timeoutMs: 500,
    userAgent: 'outdial-tools/test',
  });
  const tool = (): HttpTool => ({
    name: 'check_order',
    description: 'Looks an order up',
    parameters: { type: 'object', properties: { orderId: { type: 'string' } } },
    url: receiver.url('/tools/order'),
  });

  beforeAll(async () => {
    receiver = await Receiver.start();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.respond = () => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'shipped', eta: 'Friday' }),
    });
  });
  afterAll(async () => {
    await receiver.close();
    await dispatcher.close();
  });

  it('POSTs {name, arguments, callId} signed like a webhook and hands back the JSON answer', async () => {
    const result = await caller.call(tool(), { orderId: 'A-17' }, 'call_1');
    expect(result).toEqual({ ok: true, result: { status: 'shipped', eta: 'Friday' } });
    const [request] = receiver.on('/tools/order');
    expect(request).toBeDefined();
    if (!request) return;
    expect(JSON.parse(request.body)).toEqual({
      name: 'check_order',
      arguments: { orderId: 'A-17' },
      callId: 'call_1',
    });
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['user-agent']).toBe('outdial-tools/test');
    expect(verifySignatures(request, secret)).toEqual({ hex: true, standard: true });
    expect(verifySignatures(request, newWebhookSecret())).toEqual({ hex: false, standard: false });
  });

  it('hands a plain-text answer over as text', async () => {
    receiver.respond = () => ({ status: 200, body: 'done' });
    expect(await caller.call(tool(), {}, 'call_1')).toEqual({ ok: true, result: 'done' });
  });

  it('reports an error status with the start of the answer', async () => {
    receiver.respond = () => ({ status: 503, body: 'down for maintenance' });
    const result = await caller.call(tool(), {}, 'call_1');
    expect(result).toEqual({ ok: false, error: 'the tool answered 503: down for maintenance' });
  });

  it('gives up on a tool that does not answer in time', async () => {
    receiver.respond = () => 'hang';
    const result = await caller.call(tool(), {}, 'call_1');
    expect(result).toEqual({ ok: false, error: 'the tool did not answer within 500 ms' });
  });

  it('stops when the call ends', async () => {
    receiver.respond = () => 'hang';
    const over = new AbortController();
    setTimeout(() => over.abort(), 50);
    const result = await caller.call(tool(), {}, 'call_1', over.signal);
    expect(result).toEqual({ ok: false, error: 'the call ended before the tool answered' });
  });

  it('refuses loopback and private addresses unless they are allowed, as webhooks do', async () => {
    const strict = webhookDispatcher({ allowPrivate: false });
    const guarded = new HttpToolCaller({
      dispatcher: strict,
      allowPrivate: false,
      signingSecrets: async () => [secret],
    });
    const result = await guarded.call(tool(), {}, 'call_1');
    expect(result.ok).toBe(false);
    expect(!result.ok && result.error).toMatch(/loopback/);
    const named = await guarded.call({ ...tool(), url: 'http://localhost.:1/x' }, {}, 'call_1');
    expect(named.ok).toBe(false);
    expect(receiver.received).toHaveLength(0);
    await strict.close();
  });

  it('does not send a request it cannot sign', async () => {
    const result = await caller.call(tool(), {}, 'call_unsigned');
    expect(result).toEqual({ ok: false, error: 'no webhook secret to sign the request with' });
    expect(receiver.received).toHaveLength(0);
  });
});
