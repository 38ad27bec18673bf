import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutdialClient, OutdialError, verifyWebhook } from '../../src/client/index.js';
import { eventually, STORE } from '../helpers/app.js';
import { Receiver } from '../helpers/receiver.js';
import { type Served, serveApp } from '../helpers/serve.js';

/** The TypeScript client against a real `outdial serve`, webhooks verified with its verifyWebhook. */
describe(`TypeScript client (${STORE})`, () => {
  let served: Served;
  let receiver: Receiver;
  let client: OutdialClient;
  let base: string;
  let agentId: string;
  let secret: string;

  beforeAll(async () => {
    receiver = await Receiver.start();
    served = await serveApp(
      { OUTDIAL_SIM_RING_MS: '20', OUTDIAL_SIM_TALK_MS: '100', OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true' },
      'outdial-client-',
    );
    base = served.base;
    const { demo } = served;
    agentId = demo.agentId;
    client = new OutdialClient({ baseUrl: base, apiKey: demo.key });
    const reply = await fetch(`${base}/admin/v1/users/${demo.userId}/webhook-secret`, {
      headers: { authorization: `Bearer ${demo.adminToken}` },
    });
    secret = ((await reply.json()) as { secret: string }).secret;
  }, 120_000);

  afterAll(async () => {
    await served?.close();
    await receiver?.close();
  });

  it('dials a call, follows it, and reads its analysis', async () => {
    const dialed = await client.dial({
      to: '+14155550121',
      agentConfigId: agentId,
      callerDetails: { name: 'Jo' },
    });
    expect(dialed.status).toBe('ONGOING');
    expect((await client.liveCall(dialed.callId)).callId).toBe(dialed.callId);
    const metrics = await eventually(async () => {
      const m = await client.callMetrics({ callId: dialed.callId, agentId, contactId: dialed.contactId });
      return m.call.summary ? m : undefined;
    }, 10_000);
    expect(metrics.call.metricJson).toMatchObject({ intent: 'interested' });
    expect((await client.call(dialed.callId)).status).toBe('COMPLETED');
    const summary = await client.createSummary(dialed.callId, [{ role: 'user', content: 'anything' }]);
    expect(summary.summary).toBe(metrics.call.summary);
  });

  it('sends an Idempotency-Key: a retried createBatch answers the first batch, another body is refused', async () => {
    const request = {
      agentId,
      contacts: [{ phoneNumber: '+14155550171' }],
      options: { scheduledStartTime: new Date(Date.now() + 86_400_000).toISOString() },
    };
    const first = await client.createBatch(request, { idempotencyKey: 'client-retry-1' });
    const again = await client.createBatch(request, { idempotencyKey: 'client-retry-1' });
    expect(again.batchId).toBe(first.batchId);
    const other = await client
      .createBatch({ ...request, name: 'Another' }, { idempotencyKey: 'client-retry-1' })
      .catch((e: unknown) => e);
    expect(other).toBeInstanceOf(OutdialError);
    expect((other as OutdialError).status).toBe(422);
    await client.cancelBatch(first.batchId);
  });

  it('runs a campaign to its end, exports it, and verifies its webhooks', async () => {
    const accepted = await client.createBatch({
      agentId,
      name: 'Client run',
      contacts: [{ phoneNumber: '+14155550161' }, { phoneNumber: '+14155550162' }],
      options: {
        maxCallsPerSecond: 30,
        tags: ['client'],
        webhooks: { onCallComplete: receiver.url('/calls') },
      },
    });
    const done = await eventually(async () => {
      const status = await client.batch(accepted.batchId, 'all');
      return status.status === 'completed' ? status : undefined;
    }, 15_000);
    expect(done.recentCalls).toHaveLength(2);
    expect((await client.listBatches({ tag: 'client' })).map((b) => b.batchId)).toEqual([accepted.batchId]);
    const csv = await client.exportBatch(accepted.batchId);
    expect(csv.trim().split('\r\n')).toHaveLength(3);

    await eventually(async () => (receiver.on('/calls').length === 2 ? true : undefined), 10_000);
    for (const delivery of receiver.on('/calls')) {
      const payload = verifyWebhook(delivery.headers, delivery.body, secret);
      expect(payload).toMatchObject({ event: 'call.completed', call: { batchId: accepted.batchId } });
    }
    const [first] = receiver.on('/calls');
    if (!first) throw new Error('no delivery');
    expect(() =>
      verifyWebhook(first.headers, first.body.replace('call.completed', 'call.tampered'), secret),
    ).toThrow('signature does not match');
    expect(() =>
      verifyWebhook(first.headers, first.body, `whsec_${Buffer.alloc(32).toString('base64')}`),
    ).toThrow();
    expect(() =>
      verifyWebhook(first.headers, first.body, secret, { now: new Date(Date.now() + 3_600_000) }),
    ).toThrow('too far from now');
    // The receiver has them; their results are recorded right after the answers.
    const deliveries = await eventually(async () => {
      const list = await client.webhookDeliveries({ batchId: accepted.batchId });
      return list.every((d) => d.status === 'succeeded') ? list : undefined;
    });
    expect(deliveries).toHaveLength(2);
  });

  it('preflights a batch without creating it, and reads the account', async () => {
    const report = await client.preflightBatch({
      agentId,
      contacts: [{ phoneNumber: '+14155550171' }, { phoneNumber: '+14155550171' }, { phoneNumber: '12' }],
    });
    expect(report).toMatchObject({ total: 3, valid: 2, duplicates: 1, wouldBeAccepted: false });
    expect(report.invalid.map((c) => c.index)).toEqual([2]);
    expect(report.refusal).toMatchObject({ status: 400, code: 'INVALID_REQUEST' });
    expect(JSON.stringify(await client.listBatches())).not.toContain('+14155550171');
    const account = await client.account();
    expect(account).toEqual({
      userId: expect.stringMatching(/^usr_/),
      availableMinutes: expect.any(Number),
      reservedMinutes: expect.any(Number),
      maxConcurrentCalls: expect.any(Number),
      activeCalls: expect.any(Number),
      defaultCountry: 'US',
    });
  });

  it('pauses and resumes a batch', async () => {
    const { batchId } = await client.createBatch({
      agentId,
      contacts: [{ phoneNumber: '+14155550161' }],
      options: { scheduledStartTime: '2099-01-01T00:00:00Z' },
    });
    await eventually(async () => ((await client.batch(batchId)).status === 'scheduled' ? true : undefined));
    expect(await client.pauseBatch(batchId)).toMatchObject({ success: true, batchId, status: 'paused' });
    expect(await client.resumeBatch(batchId)).toMatchObject({ success: true, batchId, status: 'scheduled' });
    await expect(client.resumeBatch(batchId)).rejects.toMatchObject({
      status: 400,
      body: { error: 'Bad Request', code: 'BATCH_NOT_PAUSED' },
    });
    await client.cancelBatch(batchId);
  });

  it('turns error answers into OutdialError with the spec body', async () => {
    const error = await client.batch('bat_missing').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OutdialError);
    expect(error).toMatchObject({ status: 404, body: { error: 'Not Found' } });
    const invalid = await client.dial({ to: '12', agentConfigId: agentId }).catch((e: unknown) => e);
    expect(invalid).toMatchObject({ status: 400, body: { error: 'Validation failed' } });
    const stranger = new OutdialClient({
      baseUrl: base,
      apiKey: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c3JfeCJ9.x',
    });
    await expect(stranger.listBatches()).rejects.toMatchObject({ status: 401 });
  });
});
