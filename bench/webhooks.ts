import { Worker } from 'node:worker_threads';
import { sql } from 'kysely';
import { Agent, request } from 'undici';
import { newId } from '../src/domain/ids.js';
import { report, sleep, startBenchRuntime } from './harness.js';

const DELIVERIES = Number(process.env.BENCH_WEBHOOKS ?? 20_000);
const CONCURRENCY = 100;

/** A bare HTTP receiver on its own thread, so it does not share the sender's event loop. */
const RECEIVER = `
const http = require('node:http');
const { parentPort } = require('node:worker_threads');
let count = 0;
const server = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => { count++; res.writeHead(204).end(); });
});
server.keepAliveTimeout = 30000;
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));
parentPort.on('message', (m) => { if (m === 'count') parentPort.postMessage({ count }); });
`;

/** A call.completed body of a typical size (transcript of a short conversation). */
function sampleBody(i: number): string {
  return JSON.stringify({
    event: 'call.completed',
    success: true,
    call: {
      id: `call_bench${i}`,
      contactId: `cnt_bench${i}`,
      agentId: 'agt_bench',
      batchId: 'bat_bench',
      status: 'COMPLETED',
      startTime: new Date().toISOString(),
      endTime: new Date().toISOString(),
      duration: 42,
      phoneNumber: '+14155550100',
      contactName: 'Bench Contact',
      transcription: Array.from({ length: 8 }, (_, turn) => ({
        role: turn % 2 === 0 ? 'assistant' : 'user',
        content: 'Hello, this is Ava calling about your account. Do you have a minute to talk today?',
      })),
      recordingUrl: null,
      summary: null,
      metricJson: null,
    },
    metricSchema: null,
  });
}

/**
 * Deliveries per second from the outbox to a local receiver (target 1,000/s), beside a bare
 * undici POST loop with the same concurrency and body to the same receiver in the same run.
 */
export async function benchWebhooks(store: 'postgres' | 'pglite'): Promise<void> {
  const worker = new Worker(RECEIVER, { eval: true });
  const port = await new Promise<number>((resolve) =>
    worker.once('message', (m: { port: number }) => resolve(m.port)),
  );
  const url = `http://127.0.0.1:${port}/hook`;
  const body = sampleBody(0);

  // Baseline: the same number of POSTs, CONCURRENCY at a time, with nothing else around them.
  const agent = new Agent({ keepAliveTimeout: 30_000 });
  let next = 0;
  const baselineStart = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < DELIVERIES) {
        next++;
        const res = await request(url, {
          method: 'POST',
          body,
          headers: { 'content-type': 'application/json' },
          dispatcher: agent,
        });
        await res.body.dump();
      }
    }),
  );
  const baselineRate = DELIVERIES / ((performance.now() - baselineStart) / 1000);
  await agent.close();

  const bench = await startBenchRuntime(store, {
    OUTDIAL_WEBHOOK_ALLOW_PRIVATE: 'true',
    OUTDIAL_WEBHOOK_CONCURRENCY: String(CONCURRENCY),
  });
  try {
    const { db } = bench.runtime.database;
    // The outbox filled as call ends fill it: one row per event, due now.
    const now = new Date();
    for (let from = 0; from < DELIVERIES; from += 5000) {
      const count = Math.min(5000, DELIVERIES - from);
      const ids = Array.from({ length: count }, () => newId('dlv'));
      const bodies = Array.from({ length: count }, (_, i) => sampleBody(from + i));
      await sql`
        insert into webhook_deliveries (id, user_id, event, url, body, status, next_attempt_at)
        select x.id, ${bench.userId}, 'call.completed', ${url}, x.body, 'pending', ${now}
        from unnest(${ids}::text[], ${bodies}::text[]) as x(id, body)`.execute(db);
    }
    const start = performance.now();
    bench.runtime.startWorkers();
    let done = 0;
    while (done < DELIVERIES) {
      await sleep(100);
      const row = await db
        .selectFrom('webhook_deliveries')
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('status', '<>', 'pending')
        .executeTakeFirstOrThrow();
      done = Number(row.n);
    }
    const seconds = (performance.now() - start) / 1000;
    const failed = await db
      .selectFrom('webhook_deliveries')
      .select((eb) => eb.fn.countAll<string>().as('n'))
      .where('status', '=', 'failed')
      .executeTakeFirstOrThrow();
    const rate = DELIVERIES / seconds;
    report(`Webhooks: ${DELIVERIES} signed deliveries, ${CONCURRENCY} in flight (${store})`, [
      [
        'outdial',
        `${rate.toFixed(0)} deliveries/s (target 1,000/s)${Number(failed.n) ? `, ${failed.n} failed` : ''}`,
      ],
      ['bare undici POST loop', `${baselineRate.toFixed(0)} requests/s`],
      ['ratio', `${(rate / baselineRate).toFixed(2)}× the bare loop`],
    ]);
  } finally {
    await bench.close();
    await worker.terminate();
  }
}
