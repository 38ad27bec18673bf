import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedVoiceProvider } from '../../src/adapters/voice/simulator.js';
import { type Cluster, runBatches, startCluster } from '../helpers/cluster.js';
import { maxInWindow } from '../helpers/rate.js';

// Several processes need a shared database: PostgreSQL and Redis only (PGlite belongs to one process).
describe('an API process and two worker processes on one PostgreSQL and Redis', () => {
  let cluster: Cluster | undefined;
  afterAll(() => cluster?.stop());

  it('dials no contact twice and keeps every batch under its rate', async () => {
    cluster = await startCluster({ redisDb: 2, workers: 2 });
    const rates = [20, 7];
    const runs = await runBatches(cluster, rates, 50);
    const dials = SimulatedVoiceProvider.readRecord(cluster.dialsDir);
    expect(new Set(dials.map((d) => d.to)).size).toBe(dials.length);
    expect(dials).toHaveLength(100);
    for (const [index, run] of runs.entries()) {
      expect(run.status).toBe('completed');
      const ids = new Set(run.callIds);
      expect(ids.size).toBe(50);
      const times = dials.filter((d) => ids.has(d.callId)).map((d) => d.at.getTime());
      expect(times).toHaveLength(50);
      // Admission is strict (Redis, 1,010 ms windows); the network sees each start after a
      // delivery delay that differs between two busy workers (tens of ms when this 2-core
      // machine runs the whole suite), allowed here up to 50 ms. Two workers each running the
      // batch at full rate would put twice the rate in these windows. Accuracy over time is the
      // bench's to measure (npm run bench dispatch-postgres).
      expect(maxInWindow(times, 950), `batch at ${rates[index]}/s`).toBeLessThanOrEqual(rates[index] ?? 0);
    }
  }, 120_000);
});
