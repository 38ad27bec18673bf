import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/adapters/postgres/database.js';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import {
  ADMIN_TOKEN,
  createTestStorage,
  DATABASE_TEST_URL,
  JWT_SECRET,
  STORE,
  type TestStorage,
} from '../helpers/app.js';
import { type Child, childEnv, freePort, startCli } from '../helpers/process.js';
import { seededRandom as random } from '../helpers/random.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** 120 contacts per batch: most answer, some never answer (retried), some are busy once. */
function contacts(batch: number) {
  return Array.from({ length: 120 }, (_, i) => {
    const suffix = i % 10 === 0 ? '0002' : i % 10 === 1 ? '0006' : String(1000 + i).slice(-4);
    return {
      phoneNumber: `+1${String(200 + batch)}${String(100 + i).padStart(3, '0')}${suffix}`,
      name: `C${batch}-${i}`,
    };
  });
}

describe(`crash safety with SIGKILL (${STORE})`, () => {
  const cleanup: Array<() => Promise<void> | void> = [];
  afterAll(async () => {
    for (const step of cleanup.reverse()) await step();
  });

  for (const seed of [11, 23, 47]) {
    it(`seed ${seed}: every accepted contact reaches a final state, none lost, no attempt dialed twice`, async () => {
      const rand = random(seed);
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-crash-'));
      const dialsDir = path.join(dataDir, 'dials');
      cleanup.push(() => fs.rmSync(dataDir, { recursive: true, force: true }));
      let storage: TestStorage | null = null;
      let databaseUrl: string | undefined;
      if (STORE === 'postgres') {
        storage = await createTestStorage('postgres');
        const owned = storage;
        cleanup.push(() => owned.dispose());
        databaseUrl = `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`;
      }
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const env = childEnv({
        PORT: String(port),
        HOST: '127.0.0.1',
        OUTDIAL_DATA_DIR: dataDir,
        DATABASE_URL: databaseUrl,
        OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
        OUTDIAL_JWT_SECRET: JWT_SECRET,
        OUTDIAL_DEMO_MINUTES: '100000',
        OUTDIAL_SIM_RING_MS: '20',
        OUTDIAL_SIM_TALK_MS: '80',
        OUTDIAL_SIM_DIALS_DIR: dialsDir,
      });
      let server: Child = startCli(['serve'], env);
      cleanup.push(async () => {
        await server.stop('SIGKILL');
      });
      await server.waitFor(/API key:\s+(\S+)/, 90_000);
      const key = server.output().match(/API key:\s+(\S+)/)?.[1] ?? '';
      const agentId = server.output().match(/agent:\s+(agt_\S+)/)?.[1] ?? '';
      const userId = server.output().match(/user:\s+(usr_\S+)/)?.[1] ?? '';
      const restart = async () => {
        await server.stop('SIGKILL');
        server = startCli(['serve'], env);
        await server.waitFor(/listening on/, 90_000);
      };

      // Three batches at once; the first kill lands during acceptance or ingestion.
      const submit = (batch: number) =>
        fetch(`${base}/api/v1/batch`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            agentId,
            userId,
            contacts: contacts(batch),
            options: {
              maxCallsPerSecond: 30,
              retryStrategy: { maxAttempts: 2, noAnswerDelay: 300, busyDelay: 200 },
            },
          }),
        })
          .then(async (res) =>
            res.status === 202 ? ((await res.json()) as { batchId: string }).batchId : null,
          )
          .catch(() => null);
      const submissions = [0, 1, 2].map(submit);
      await sleep(Math.floor(rand() * 300));
      await restart();
      let accepted = (await Promise.all(submissions)).filter((id): id is string => id !== null);
      if (accepted.length === 0) {
        // The kill came before any 202: submit again so that this run exercises dispatch too.
        accepted = (await Promise.all([3, 4, 5].map(submit))).filter((id): id is string => id !== null);
      }
      expect(accepted.length).toBeGreaterThan(0);

      // The second kill lands while calls are being claimed, paced and dialed.
      await sleep(300 + Math.floor(rand() * 2000));
      await restart();

      // Drain: every batch the database holds (accepted or recorded just before the kill) completes.
      const deadline = Date.now() + 120_000;
      let batches: Array<{ batchId: string; status: string }> = [];
      while (Date.now() < deadline) {
        const res = await fetch(`${base}/api/v1/batch/list`, { headers: { authorization: `Bearer ${key}` } });
        batches = (await res.json()) as typeof batches;
        if (batches.every((b) => b.status === 'completed')) break;
        await sleep(500);
      }
      if (!batches.every((b) => b.status === 'completed')) {
        // Left in on purpose: a stall is rare, and its state is what the next reader needs.
        await server.stop('SIGTERM');
        const debug = await openDatabase({ databaseUrl, pgliteDir: path.join(dataDir, 'pgdata') });
        const states =
          await sql`select b.id, b.status, b.total, b.processed, bc.state, c.status as call_status, count(*)::int as n
          from batch_contacts bc join batches b on b.id = bc.batch_id left join calls c on c.id = bc.call_id
          group by 1,2,3,4,5,6`.execute(debug.db);
        console.log(
          'STUCK',
          JSON.stringify(states.rows),
          server.output().slice(-3000),
          server.stderr().slice(-3000),
        );
        await debug.close();
      }
      expect(batches.map((b) => b.status)).toEqual(batches.map(() => 'completed'));
      for (const id of accepted) expect(batches.map((b) => b.batchId)).toContain(id);
      await server.stop('SIGTERM');

      // The accounting, from the database and the simulated network's own record of dials.
      const handle = await openDatabase({ databaseUrl, pgliteDir: path.join(dataDir, 'pgdata') });
      cleanup.push(() => handle.close());
      const perBatch = await sql<{
        id: string;
        total: number;
        processed: number;
        rows: number;
        done: number;
      }>`
        select b.id, b.total, b.processed,
               (select count(*)::int from batch_contacts bc where bc.batch_id = b.id) as rows,
               (select count(*)::int from batch_contacts bc where bc.batch_id = b.id and bc.state = 'done') as done
        from batches b`.execute(handle.db);
      for (const batch of perBatch.rows) {
        expect(batch.total).toBe(120);
        expect(batch.rows).toBe(120);
        expect(batch.done).toBe(120);
        expect(batch.processed).toBe(120);
      }
      const calls = await sql<{
        id: string;
        batch_id: string;
        batch_seq: number;
        attempt: number;
        status: string;
      }>`
        select id, batch_id, batch_seq, attempt, status from calls where batch_id is not null`.execute(
        handle.db,
      );
      expect(calls.rows.filter((c) => c.status === 'ONGOING')).toEqual([]);
      const attemptsByContact = await sql<{ batch_id: string; seq: number; attempts: number }>`
        select batch_id, seq, attempts from batch_contacts`.execute(handle.db);
      const callsPerContact = new Map<string, number>();
      for (const call of calls.rows) {
        const k = `${call.batch_id}/${call.batch_seq}`;
        callsPerContact.set(k, (callsPerContact.get(k) ?? 0) + 1);
      }
      for (const row of attemptsByContact.rows) {
        expect(callsPerContact.get(`${row.batch_id}/${row.seq}`) ?? 0).toBe(row.attempts);
        expect(row.attempts).toBeGreaterThanOrEqual(1);
        expect(row.attempts).toBeLessThanOrEqual(2);
      }

      const dials = SimulatedVoiceProvider.readRecord(dialsDir);
      const dialedIds = dials.map((d) => d.callId);
      expect(new Set(dialedIds).size).toBe(dialedIds.length);
      const byId = new Map(calls.rows.map((c) => [c.id, c]));
      const attemptsDialed = new Set<string>();
      for (const dial of dials) {
        const call = byId.get(dial.callId);
        if (!call) continue; // the demo's single calls are not part of this test
        const attemptKey = `${call.batch_id}/${call.batch_seq}/${call.attempt}`;
        expect(attemptsDialed.has(attemptKey), `attempt ${attemptKey} dialed twice`).toBe(false);
        attemptsDialed.add(attemptKey);
      }
      // Every recorded call was really dialed: no call was finished without reaching the network.
      for (const call of calls.rows)
        expect(attemptsDialed.has(`${call.batch_id}/${call.batch_seq}/${call.attempt}`)).toBe(true);
    }, 240_000);
  }
});
