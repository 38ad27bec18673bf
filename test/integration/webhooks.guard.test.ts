import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LookupFn } from '../../src/webhooks/address-guard.js';
import { type Account, eventually, startTestApp, type TestApp } from '../helpers/app.js';
import { Receiver } from '../helpers/receiver.js';

/**
 * The SSRF guard as a user meets it, with the guard on (the default): URLs that can never be
 * delivered to are refused with a 400 when the batch or call is submitted, and a name that
 * resolves to a private address when the delivery is made (DNS rebinding) is refused at connect
 * time, so the local receiver never sees a request.
 */
describe('webhook address guard', () => {
  let t: TestApp;
  let receiver: Receiver;
  let alice: Account;
  // Test names resolve as this table says; the receiver listens on 127.0.0.1.
  const names: Record<string, string> = {
    'rebind.example': '127.0.0.1',
    'metadata.example': '169.254.169.254',
  };
  const resolve: LookupFn = (hostname, _options, callback) => {
    const address = names[hostname];
    if (!address) {
      callback(Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' }), []);
      return;
    }
    callback(null, [{ address, family: 4 }]);
  };
  beforeAll(async () => {
    receiver = await Receiver.start();
    t = await startTestApp({
      workers: true,
      env: { OUTDIAL_WEBHOOK_RETRY_DELAYS_MS: '50', OUTDIAL_WEBHOOK_TIMEOUT_MS: '1000' },
      overrides: { webhookResolve: resolve },
    });
    alice = await t.createAccount({ minutes: 1000 });
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  const dial = (statusCallBackUrl: string, to = '+14155550171') =>
    t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: alice.key,
      payload: { to, agentConfigId: alice.agentId, statusCallBackUrl },
    });

  it.each([
    ['http://127.0.0.1:9/hook', 'loopback'],
    ['http://[::1]/hook', 'loopback'],
    ['http://[::ffff:127.0.0.1]/hook', 'loopback'],
    ['http://[::ffff:7f00:1]/hook', 'loopback'],
    ['http://169.254.169.254/latest/meta-data', 'link-local'],
    ['http://10.0.0.8/hook', 'private'],
    ['http://100.64.1.1/hook', 'CGNAT'],
    ['http://[fd12::1]/hook', 'unique-local'],
    ['http://localhost:3000/hook', 'localhost'],
  ])('refuses a statusCallBackUrl of %s with a 400', async (url, reason) => {
    const res = await dial(url);
    expect(res.statusCode, res.body).toBe(400);
    const body = res.json();
    expect(body).toMatchObject({
      error: 'Validation failed',
      details: { fieldErrors: { statusCallBackUrl: [expect.any(String)] } },
    });
    expect(body.details.fieldErrors.statusCallBackUrl[0]).toContain(reason);
  });

  it('refuses private batch webhook URLs field by field, and creates nothing', async () => {
    const res = await t.request({
      method: 'POST',
      url: '/api/v1/batch',
      key: alice.key,
      payload: {
        agentId: alice.agentId,
        userId: alice.userId,
        contacts: [{ phoneNumber: '+14155550172' }],
        options: {
          webhooks: {
            onCallComplete: 'http://192.168.1.10/calls',
            onBatchComplete: 'https://hooks.example.com/done',
            onBatchFailed: 'http://[::1]:8080/failed',
          },
        },
      },
    });
    expect(res.statusCode, res.body).toBe(400);
    expect(Object.keys(res.json().details.fieldErrors).sort()).toEqual([
      'options.webhooks.onBatchFailed',
      'options.webhooks.onCallComplete',
    ]);
    const list = await t.request({ method: 'GET', url: '/api/v1/batch/list', key: alice.key });
    expect(list.json()).toEqual([]);
  });

  it('refuses schemes other than http and https, and credentials in the URL', async () => {
    for (const url of [
      'ftp://hooks.example.com/x',
      'file:///etc/passwd',
      'https://user:pw@hooks.example.com/x',
    ]) {
      const res = await dial(url);
      expect(res.statusCode, url).toBe(400);
    }
  });

  it.each([
    ['rebind.example', '127.0.0.1', '+14155550173'],
    ['metadata.example', '169.254.169.254', '+14155550174'],
  ])(
    'refuses at connect time a name (%s) that resolves to %s, and never reaches it',
    async (name, address, to) => {
      const { port } = new URL(receiver.url());
      const res = await dial(`http://${name}:${port}/hook`, to);
      expect(res.statusCode, res.body).toBe(200);
      const { callId } = res.json();
      const delivery = await eventually(async () => {
        const list = await t.request({
          method: 'GET',
          url: `/api/v1/webhooks/deliveries?callId=${callId}`,
          key: alice.key,
        });
        const [first] = list.json();
        return first && first.status !== 'pending' ? first : undefined;
      }, 10_000);
      expect(delivery).toMatchObject({ status: 'failed', attempts: 1, lastStatus: null });
      expect(delivery.lastError).toContain(address);
      expect(receiver.received).toHaveLength(0);
    },
  );
});
