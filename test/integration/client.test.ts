import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutdialClient, OutdialError, verifyWebhook } from '../../src/client/index.js';
import { createTestStorage, DATABASE_TEST_URL, eventually, STORE, type TestStorage } from '../helpers/app.js';
import { type Child, childEnv, freePort, startCli } from '../helpers/process.js';
import { Receiver } from '../helpers/receiver.js';

/** The TypeScript client against a real `outdial serve`, webhooks verified with its verifyWebhook. */
describe(`TypeScript client (${STORE})`, () => {
  let storage: TestStorage | null = null;
  let server: Child;
  let receiver: Receiver;
  let dataDir: string;
  let client: OutdialClient;
  let base: string;
  let agentId: string;
  let secret: string;

  beforeAll(async () => {
    receiver = await Receiver.start();
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-client-'));
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    let databaseUrl: string | undefined;
    if (STORE === 'postgres') {
      storage = await createTestStorage('postgres');
      databaseUrl = `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`;
    }
    server = startCli(
      ['serve'],
      childEnv({
        PORT: String(port),
        HOST: '127.0.0.1',
        OUTDIAL_DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
        OUTDIAL_SIM_RING_MS: '20',
        OUTDIAL_SIM_TALK_MS: '100',
        OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true',
      }),
    );
    await server.waitFor(/API key:\s+\S+\n/, 90_000);
    const out = server.output();
    agentId = out.match(/agent:\s+(agt_\S+)/)?.[1] ?? '';
    const userId = out.match(/user:\s+(usr_\S+)/)?.[1] ?? '';
    const adminToken = out.match(/Admin token[^\n]*\n\s+(\S+)/)?.[1] ?? '';
    client = new OutdialClient({ baseUrl: base, apiKey: out.match(/API key:\s+(\S+)/)?.[1] ?? '' });
    const reply = await fetch(`${base}/admin/v1/users/${userId}/webhook-secret`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    secret = ((await reply.json()) as { secret: string }).secret;
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await receiver?.close();
    await storage?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
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
