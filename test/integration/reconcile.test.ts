import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/postgres/database.js';
import { ADMIN_TOKEN, eventually, STORE } from '../helpers/app.js';
import {
  type Child,
  childEnv,
  createProcessStore,
  DEMO_CURL_PRINTED,
  freePort,
  LISTENING,
  type ProcessStore,
  parseBanner,
  startCli,
} from '../helpers/process.js';

const RING_MS = 100;
const TALK_MS = 1500;

interface CallStatus {
  status: string;
  duration: number | null;
  createdAt: string;
  endedAt: string | null;
  transcription: unknown[];
}

/**
 * The process that placed a call dies (SIGKILL) while the call is talking; the next start on the
 * same storage finishes the call from what the provider reports, and charges it once. On
 * PostgreSQL the reconciler takes a call once it is ring + talk + 10 s old (it polls every 5 s);
 * the embedded database belongs to one process, so there the next start takes it up at once.
 */
describe(`a call whose process was killed is finished by the next start (${STORE})`, () => {
  let store: ProcessStore | undefined;
  const children: Child[] = [];
  afterAll(async () => {
    for (const child of children) await child.stop('SIGKILL');
    await store?.dispose();
  });

  it('completes with its real duration and charges the user once', async () => {
    store = await createProcessStore('reconcile');
    const serve = async () => {
      const port = await freePort();
      const child = startCli(
        ['serve'],
        childEnv({
          PORT: String(port),
          HOST: '127.0.0.1',
          OUTDIAL_DATA_DIR: store?.dataDir,
          DATABASE_URL: store?.databaseUrl,
          OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
          OUTDIAL_SIM_RING_MS: String(RING_MS),
          OUTDIAL_SIM_TALK_MS: String(TALK_MS),
        }),
      );
      children.push(child);
      return { child, base: `http://127.0.0.1:${port}` };
    };

    const first = await serve();
    await first.child.waitFor(DEMO_CURL_PRINTED, 90_000);
    const demo = parseBanner(first.child.output()).demo;
    if (!demo) throw new Error(`no demo account in:\n${first.child.output()}`);
    const dial = await fetch(`${first.base}/api/v1/call/dial`, {
      method: 'POST',
      headers: { authorization: `Bearer ${demo.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        to: '+14155550123',
        agentConfigId: demo.agentId,
        callerDetails: { name: 'Jordan' },
      }),
    });
    expect(dial.status).toBe(200);
    const { callId, status } = (await dial.json()) as { callId: string; status: string };
    expect(status).toBe('ONGOING');
    await first.child.stop('SIGKILL');

    // What the crash left behind: the call is still ONGOING and nothing was charged.
    const handle = store.storage
      ? await store.storage.open()
      : await openDatabase({ databaseUrl: undefined, pgliteDir: path.join(store.dataDir, 'pgdata') });
    try {
      const left = await sql<{ status: string; available_minutes: number }>`
        select calls.status, users.available_minutes
        from calls join users on users.id = calls.user_id where calls.id = ${callId}
      `.execute(handle.db);
      expect(left.rows).toEqual([{ status: 'ONGOING', available_minutes: 100 }]);
    } finally {
      if (!store.storage) await handle.close();
    }

    const second = await serve();
    await second.child.waitFor(LISTENING, 90_000);
    const restartedAt = Date.now();
    const check = async () => {
      const res = await fetch(`${second.base}/api/v1/call/check-status?callId=${callId}`, {
        headers: { authorization: `Bearer ${demo.apiKey}` },
      });
      expect(res.status).toBe(200);
      return ((await res.json()) as { data: CallStatus }).data;
    };
    const ended = await eventually(
      async () => {
        const call = await check();
        return call.status === 'ONGOING' ? undefined : call;
      },
      30_000,
      250,
    );
    const tookMs = Date.now() - restartedAt;

    expect(ended.status).toBe('COMPLETED');
    expect(ended.duration).toBe(Math.ceil(TALK_MS / 1000));
    expect(ended.transcription.length).toBeGreaterThan(0);
    // It ended when the simulated call would have ended, not when it was found.
    expect(Date.parse(ended.endedAt ?? '') - Date.parse(ended.createdAt)).toBe(RING_MS + TALK_MS);

    const user = await fetch(`${second.base}/admin/v1/users/${demo.userId}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(user.status).toBe(200);
    expect(await user.json()).toMatchObject({ id: demo.userId, availableMinutes: 99 });
    // No second charge: a busy reconciler pass is followed at once by another, which finds the call done.
    const later = await fetch(`${second.base}/admin/v1/users/${demo.userId}`, {
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(await later.json()).toMatchObject({ availableMinutes: 99 });
    expect((await check()).status).toBe('COMPLETED');

    expect(await second.child.stop()).toBe(0);
    // PostgreSQL: by the 10 s grace and a 5 s poll; PGlite: at the start itself.
    expect(tookMs).toBeLessThan(STORE === 'pglite' ? 5_000 : 25_000);
  }, 150_000);
});
