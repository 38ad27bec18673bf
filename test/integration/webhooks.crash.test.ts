import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  ADMIN_TOKEN,
  createTestStorage,
  DATABASE_TEST_URL,
  eventually,
  JWT_SECRET,
  STORE,
  startTestApp,
} from '../helpers/app.js';
import { type Child, childEnv, freePort, startCli } from '../helpers/process.js';
import { Receiver, verifySignatures } from '../helpers/receiver.js';

/** Webhooks survive the process: an event is sent even if the process dies before or while sending it. */
describe(`webhook delivery across crashes (${STORE})`, () => {
  const cleanup: Array<() => Promise<unknown> | unknown> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  it('a delivery in flight when the process is SIGKILLed is sent again, same webhook-id, by the next process', async () => {
    const receiver = await Receiver.start();
    cleanup.push(() => receiver.close());
    // The first attempt never gets an answer: the process dies while it waits.
    receiver.respond = (_request, index) => (index === 0 ? 'hang' : { status: 200 });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-hookcrash-'));
    cleanup.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
    let databaseUrl: string | undefined;
    if (STORE === 'postgres') {
      const storage = await createTestStorage('postgres');
      cleanup.push(() => storage.dispose());
      databaseUrl = `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`;
    }
    const port = await freePort();
    const env = childEnv({
      PORT: String(port),
      HOST: '127.0.0.1',
      OUTDIAL_DATA_DIR: dataDir,
      DATABASE_URL: databaseUrl,
      OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
      OUTDIAL_JWT_SECRET: JWT_SECRET,
      OUTDIAL_SIM_RING_MS: '20',
      OUTDIAL_SIM_TALK_MS: '80',
      OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true',
      // An attempt may take 3 s; its claim lapses 5 s after that.
      OUTDIAL_WEBHOOK_TIMEOUT_MS: '3000',
    });
    let server: Child = startCli(['serve'], env);
    cleanup.push(() => server.stop('SIGKILL'));
    await server.waitFor(/API key:\s+(\S+)/, 90_000);
    const key = server.output().match(/API key:\s+(\S+)/)?.[1] ?? '';
    const agentId = server.output().match(/agent:\s+(agt_\S+)/)?.[1] ?? '';
    const userId = server.output().match(/user:\s+(usr_\S+)/)?.[1] ?? '';
    const base = `http://127.0.0.1:${port}`;
    const res = await fetch(`${base}/api/v1/call/dial`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        to: '+14155550181',
        agentConfigId: agentId,
        statusCallBackUrl: receiver.url('/calls'),
      }),
    });
    expect(res.status).toBe(200);
    const { callId } = (await res.json()) as { callId: string };

    await eventually(async () => (receiver.received.length === 1 ? true : undefined), 15_000);
    await server.stop('SIGKILL');
    server = startCli(['serve'], env);
    await server.waitFor(/listening on/, 90_000);

    await eventually(async () => (receiver.received.length >= 2 ? true : undefined), 20_000, 100);
    const [first, second] = receiver.received;
    expect(second?.headers['webhook-id']).toBe(first?.headers['webhook-id']);
    expect(second?.body).toBe(first?.body);
    expect(JSON.parse(second?.body ?? '{}')).toMatchObject({ event: 'call.completed', call: { id: callId } });
    const secret = await fetch(`${base}/admin/v1/users/${userId}/webhook-secret`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    }).then(async (r) => ((await r.json()) as { secret: string }).secret);
    if (second) expect(verifySignatures(second, secret)).toEqual({ hex: true, standard: true });
    const log = await eventually(async () => {
      const list = (await fetch(`${base}/api/v1/webhooks/deliveries?callId=${callId}`, {
        headers: { authorization: `Bearer ${key}` },
      }).then((r) => r.json())) as Array<{ status: string; attempts: number }>;
      return list[0]?.status === 'succeeded' ? list : undefined;
    });
    // Two attempts at least (the lost one, the one after the restart); on a loaded machine an
    // answer can also come too late for an attempt, which makes one more, with the same id.
    expect(log).toEqual([expect.objectContaining({ status: 'succeeded', lastStatus: 200 })]);
    expect(log[0]?.attempts).toBeGreaterThanOrEqual(2);
    expect(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size).toBe(1);
    await server.stop('SIGTERM');
  }, 180_000);

  it('an event recorded while no delivery worker runs is sent when one starts', async () => {
    const receiver = await Receiver.start();
    cleanup.push(() => receiver.close());
    // No workers: the call ends and its event is written, but nothing sends it yet.
    const t = await startTestApp({ env: { OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true' } });
    cleanup.push(() => t.close());
    const account = await t.createAccount();
    const dial = await t.request({
      method: 'POST',
      url: '/api/v1/call/dial',
      key: account.key,
      payload: {
        to: '+14155550182',
        agentConfigId: account.agentId,
        statusCallBackUrl: receiver.url('/late'),
      },
    });
    expect(dial.statusCode).toBe(200);
    const { callId } = dial.json<{ callId: string }>();
    // The call ends with a conversation, so its event waits for the call's analysis, which is
    // durable work on the call row: nothing is queued or sent while no worker runs.
    await eventually(async () => {
      const status = (
        await t.request({
          method: 'GET',
          url: `/api/v1/call/check-status?callId=${callId}`,
          key: account.key,
        })
      ).json<{ data: { status: string } }>();
      return status.data.status !== 'ONGOING' ? true : undefined;
    });
    const before = (
      await t.request({
        method: 'GET',
        url: `/api/v1/webhooks/deliveries?callId=${callId}`,
        key: account.key,
      })
    ).json<unknown[]>();
    expect(before).toEqual([]);
    expect(receiver.received).toHaveLength(0);

    t.runtime.startWorkers();
    await eventually(async () => (receiver.on('/late').length === 1 ? true : undefined));
    const event = JSON.parse(receiver.on('/late')[0]?.body ?? '{}');
    expect(event.call).toMatchObject({ id: callId, summary: expect.stringMatching(/\S/) });
  }, 60_000);
});
