import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import { type Cluster, runBatches, startCluster } from '../helpers/cluster.js';
import { maxInWindow } from '../helpers/rate.js';

/**
 * The start time recorded on each call (startTime in check-status, the live view and the export)
 * is the moment the call went out, and no one-second window of those times holds more than the
 * batch's rate, with two workers dialing the same batches.
 */
describe('recorded call start times of fast batches, two workers on one PostgreSQL and Redis', () => {
  let cluster: Cluster | undefined;
  afterAll(() => cluster?.stop());

  it('never records more than maxCallsPerSecond starts of a batch in any second', async () => {
    cluster = await startCluster({ redisDb: 4, workers: 2 });
    const rates = [30, 30, 30];
    const runs = await runBatches(cluster, rates, 90);
    const handle = await cluster.storage.open();
    const dials = SimulatedVoiceProvider.readRecord(cluster.dialsDir);
    const dialedAt = new Map(dials.map((dial) => [dial.callId, dial.at.getTime()]));
    for (const [index, run] of runs.entries()) {
      expect(run.status).toBe('completed');
      const calls = await handle.db
        .selectFrom('calls')
        .select(['id', 'created_at'])
        .where('batch_id', '=', run.batchId)
        .execute();
      expect(calls).toHaveLength(90);
      const starts = calls.map((call) => call.created_at.getTime());
      // Each recorded start is the moment the network took the call, not a planned slot.
      for (const call of calls) expect(call.created_at.getTime()).toBe(dialedAt.get(call.id));
      expect(maxInWindow(starts, 1000), `batch ${index} at ${rates[index]}/s`).toBeLessThanOrEqual(
        rates[index] ?? 0,
      );
    }
  }, 120_000);
});
