import { report, sleep, startBenchRuntime } from './harness.js';

const SECONDS = Number(process.env.BENCH_DISPATCH_SECONDS ?? 60);
const BATCHES = Number(process.env.BENCH_BATCHES ?? 40);
const RATE = Number(process.env.BENCH_BATCH_RATE ?? 25);

/**
 * Many batches at once, each at RATE calls/s, for SECONDS: the aggregate calls per second the
 * dispatcher reaches (target 1,000/s) and each batch's achieved rate against its own setting,
 * measured from the simulated network's record of dials in the steady window.
 */
export async function benchDispatch(store: 'postgres' | 'pglite'): Promise<void> {
  const bench = await startBenchRuntime(store, {
    OUTDIAL_SIM_RING_MS: '100',
    OUTDIAL_SIM_TALK_MS: '400',
    OUTDIAL_MAX_CONCURRENT_CALLS: '5000',
  });
  try {
    const perBatch = Math.ceil(RATE * (SECONDS + 10));
    const ids: string[] = [];
    for (let b = 0; b < BATCHES; b++) {
      const contacts = Array.from({ length: perBatch }, (_, i) => ({
        phoneNumber: `+1${String(200 + b)}${String(i).padStart(7, '0')}`,
      }));
      const res = await fetch(`${bench.base}/api/v1/batch`, {
        method: 'POST',
        headers: { authorization: `Bearer ${bench.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          agentId: bench.agentId,
          userId: bench.userId,
          contacts,
          options: { maxCallsPerSecond: RATE },
        }),
      });
      if (res.status !== 202) throw new Error(`batch refused: ${res.status} ${await res.text()}`);
      ids.push(((await res.json()) as { batchId: string }).batchId);
    }
    await bench.runtime.ingester.idle();
    bench.runtime.startWorkers();
    await sleep(5000); // warm-up: every batch reaches its pace
    const from = new Date();
    await sleep(SECONDS * 1000);
    const to = new Date();
    // The shared dial records: each call's moment on the network (sent_at), by batch.
    const sent = await bench.runtime.database.db
      .selectFrom('dials')
      .innerJoin('calls', 'calls.id', 'dials.call_id')
      .select(['calls.batch_id'])
      .where('dials.sent_at', '>=', from)
      .where('dials.sent_at', '<', to)
      .where('calls.batch_id', 'in', ids)
      .execute();
    const perBatchCount = new Map<string, number>();
    for (const row of sent) {
      if (row.batch_id) perBatchCount.set(row.batch_id, (perBatchCount.get(row.batch_id) ?? 0) + 1);
    }
    const inWindow = sent;
    const errors = ids.map((id) => Math.abs((perBatchCount.get(id) ?? 0) / SECONDS - RATE) / RATE);
    const aggregate = inWindow.length / SECONDS;
    report(`Dispatch: ${BATCHES} batches at ${RATE} calls/s for ${SECONDS} s (${store})`, [
      ['aggregate', `${aggregate.toFixed(1)} calls/s of ${BATCHES * RATE} configured (target 1,000/s)`],
      ['ratio to configured', `${(aggregate / (BATCHES * RATE)).toFixed(3)}x`],
      [
        'per-batch rate error',
        `max ${(Math.max(...errors) * 100).toFixed(2)}%, mean ${((errors.reduce((a, b) => a + b, 0) / errors.length) * 100).toFixed(2)}% (target <= 2%)`,
      ],
    ]);
  } finally {
    await bench.close();
  }
}
