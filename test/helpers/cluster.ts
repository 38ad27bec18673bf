import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ADMIN_TOKEN, createTestStorage, DATABASE_TEST_URL, JWT_SECRET, type TestStorage } from './app.js';
import { type Child, childEnv, freePort, startCli } from './process.js';
import { deleteKeysOf, keyIdsIn, redisTestUrl } from './redis.js';

/** An `outdial api` process and worker processes sharing one PostgreSQL schema and one Redis database. */
export interface Cluster {
  base: string;
  key: string;
  agentId: string;
  userId: string;
  storage: TestStorage;
  /** The simulated network's log of what it was asked to dial (OUTDIAL_SIM_DIALS_DIR). */
  dialsDir: string;
  stop(): Promise<void>;
}

/**
 * Starts the API (which seeds the demo user, agent and key it prints) and `workers` workers, with
 * fast simulated calls. `redisDb` is the file's own Redis database when REDIS_TEST_URL names none;
 * when it names one, the files share it and each deletes only its own keys when done.
 */
export async function startCluster(options: { redisDb: number; workers: number }): Promise<Cluster> {
  const children: Child[] = [];
  const storage = await createTestStorage('postgres');
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-cluster-'));
  const redisUrl = redisTestUrl(options.redisDb);
  const dialsDir = path.join(dataDir, 'dials');
  const port = await freePort();
  const env = childEnv({
    HOST: '127.0.0.1',
    PORT: String(port),
    OUTDIAL_DATA_DIR: dataDir,
    DATABASE_URL: `${DATABASE_TEST_URL}?options=${encodeURIComponent(`-c search_path=${storage.schema}`)}`,
    REDIS_URL: redisUrl,
    OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
    OUTDIAL_JWT_SECRET: JWT_SECRET,
    OUTDIAL_DEMO_MINUTES: '100000',
    OUTDIAL_SIM_RING_MS: '20',
    OUTDIAL_SIM_TALK_MS: '100',
    OUTDIAL_SIM_DIALS_DIR: dialsDir,
  });
  const stop = async () => {
    for (const child of children) await child.stop('SIGKILL');
    const handle = await storage.open();
    await deleteKeysOf(redisUrl, await keyIdsIn(handle.db));
    await storage.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const api = startCli(['api'], env);
    children.push(api);
    await api.waitFor(/API key:\s+(\S+)/, 60_000);
    const printed = (pattern: RegExp) => api.output().match(pattern)?.[1] ?? '';
    for (let i = 0; i < options.workers; i++) {
      const worker = startCli(['worker'], env);
      children.push(worker);
      await worker.waitFor(/worker running/, 60_000);
    }
    return {
      base: `http://127.0.0.1:${port}`,
      key: printed(/API key:\s+(\S+)/),
      agentId: printed(/agent:\s+(agt_\S+)/),
      userId: printed(/user:\s+(usr_\S+)/),
      storage,
      dialsDir,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface BatchRun {
  batchId: string;
  status: string;
  callIds: string[];
}

/**
 * Submits one batch per rate, `contacts` distinct numbers each, and waits (at most 60 s) until
 * every batch is completed; returns each batch's last status and call ids.
 */
export async function runBatches(cluster: Cluster, rates: number[], contacts: number): Promise<BatchRun[]> {
  const headers = { authorization: `Bearer ${cluster.key}`, 'content-type': 'application/json' };
  const batchIds: string[] = [];
  for (const [index, rate] of rates.entries()) {
    const res = await fetch(`${cluster.base}/api/v1/batch`, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        agentId: cluster.agentId,
        userId: cluster.userId,
        contacts: Array.from({ length: contacts }, (_, i) => ({
          phoneNumber: `+1${300 + index}555${String(1000 + i).padStart(4, '0')}`,
        })),
        options: { maxCallsPerSecond: rate },
      }),
    });
    if (res.status !== 202) throw new Error(`batch refused: ${res.status} ${await res.text()}`);
    batchIds.push(((await res.json()) as { batchId: string }).batchId);
  }
  const runs = new Map<string, BatchRun>();
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    for (const batchId of batchIds) {
      const res = await fetch(`${cluster.base}/api/v1/batch/check-status?batchId=${batchId}&limit=all`, {
        headers,
      });
      const body = (await res.json()) as { status: string; recentCalls: Array<{ id: string }> };
      runs.set(batchId, { batchId, status: body.status, callIds: body.recentCalls.map((c) => c.id) });
    }
    if ([...runs.values()].every((run) => run.status === 'completed')) break;
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  return batchIds.map((batchId) => runs.get(batchId) ?? { batchId, status: 'unknown', callIds: [] });
}
