import { spawn } from 'node:child_process';
import autocannon from 'autocannon';
import { report, sleep, startServerProcess } from './harness.js';

const SECONDS = Number(process.env.BENCH_READ_SECONDS ?? 10);
const CONNECTIONS = Number(process.env.BENCH_READ_CONNECTIONS ?? 50);

/** A bare Fastify route answering a small JSON object: the floor for any route on this machine. */
export const BARE_SERVER = `
const fastify = require('fastify')({ logger: false });
fastify.get('/bare', async () => ({ callId: 'call_x', status: 'COMPLETED', startTime: new Date().toISOString() }));
fastify.listen({ port: 0, host: '127.0.0.1' }).then((address) => process.stdout.write(address + '\\n'));
`;

interface Load {
  rps: number;
  p99: number;
  errors: number;
}

async function load(url: string, headers: Record<string, string> = {}): Promise<Load> {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: SECONDS, headers });
  return {
    rps: result.requests.average,
    p99: result.latency.p99,
    errors: result.errors + result.non2xx,
  };
}

/**
 * The read path under load from this process (a second process to the server's): live call status
 * and persistent batch statistics, beside a bare Fastify route in its own process, in the same run.
 * Targets: at least 0.5x the bare route's requests per second, p99 under 20 ms.
 */
export async function benchReads(store: 'postgres' | 'pglite'): Promise<void> {
  const server = await startServerProcess(store, { OUTDIAL_SIM_RING_MS: '10', OUTDIAL_SIM_TALK_MS: '50' });
  const bare = spawn(process.execPath, ['-e', BARE_SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  try {
    const auth = { authorization: `Bearer ${server.key}` };
    const json = { ...auth, 'content-type': 'application/json' };
    const dial = (await fetch(`${server.base}/api/v1/call/dial`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({ to: '+14155550123', agentConfigId: server.agentId }),
    }).then((r) => r.json())) as { callId: string };
    const batch = (await fetch(`${server.base}/api/v1/batch`, {
      method: 'POST',
      headers: json,
      body: JSON.stringify({
        agentId: server.agentId,
        userId: server.userId,
        contacts: Array.from({ length: 50 }, (_, i) => ({ phoneNumber: `+1415666${String(1000 + i)}` })),
        options: { maxCallsPerSecond: 30 },
      }),
    }).then((r) => r.json())) as { batchId: string };
    for (let i = 0; i < 100; i++) {
      const status = (await fetch(
        `${server.base}/api/v1/batch/check-status?batchId=${batch.batchId}&limit=0`,
        {
          headers: auth,
        },
      ).then((r) => r.json())) as { status: string };
      if (status.status === 'completed') break;
      await sleep(100);
    }
    const bareBase = await new Promise<string>((resolve) =>
      bare.stdout.once('data', (d: Buffer) => resolve(d.toString().trim())),
    );

    const bareLoad = await load(`${bareBase}/bare`);
    const callLoad = await load(`${server.base}/api/v1/status/call?callId=${dial.callId}`, auth);
    const batchLoad = await load(`${server.base}/api/v1/batch/check-status?batchId=${batch.batchId}`, auth);
    const line = (l: Load) =>
      `${Math.round(l.rps)} req/s, p99 ${l.p99} ms${l.errors ? `, ${l.errors} errors` : ''}`;
    report(`Read path, ${CONNECTIONS} connections for ${SECONDS} s each (${store})`, [
      ['bare Fastify route', line(bareLoad)],
      ['GET /api/v1/status/call', `${line(callLoad)}: ${(callLoad.rps / bareLoad.rps).toFixed(2)}x bare`],
      [
        'GET /api/v1/batch/check-status',
        `${line(batchLoad)}: ${(batchLoad.rps / bareLoad.rps).toFixed(2)}x bare`,
      ],
      ['targets', '>= 0.5x the bare route, p99 < 20 ms'],
    ]);
  } finally {
    bare.kill();
    await server.close();
  }
}
