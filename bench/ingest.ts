import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { contacts, DATABASE_URL, report, sleep, startBenchRuntime } from './harness.js';

const COUNT = Number(process.env.BENCH_CONTACTS ?? 100_000);

/** Raw COPY of the same rows into a plain table: the physical floor for writing them. */
async function rawCopy(rows: ReturnType<typeof contacts>): Promise<number> {
  const client = new pg.Client({ connectionString: DATABASE_URL });
  await client.connect();
  try {
    await client.query(
      'create temp table copy_baseline (phone text, name text, email text, company text, metadata jsonb)',
    );
    const started = performance.now();
    const escapeCopy = (v: string) => v.replace(/\\/g, '\\\\').replace(/\t/g, '\\t').replace(/\n/g, '\\n');
    const lines = rows.map(
      (r) =>
        `${r.phoneNumber}\t${escapeCopy(r.name)}\t${r.email}\t${r.company}\t${escapeCopy(JSON.stringify(r.metadata))}\n`,
    );
    await pipeline(Readable.from(lines), client.query(copyFrom('copy copy_baseline from stdin')));
    return performance.now() - started;
  } finally {
    await client.end();
  }
}

export async function benchIngest(store: 'postgres' | 'pglite'): Promise<void> {
  const bench = await startBenchRuntime(store);
  try {
    const rows = contacts(COUNT);
    const body = JSON.stringify({ agentId: bench.agentId, userId: bench.userId, contacts: rows });
    const rssBefore = process.memoryUsage().rss;
    let peakRss = rssBefore;
    const sampler = setInterval(() => {
      peakRss = Math.max(peakRss, process.memoryUsage().rss);
    }, 20);
    const started = performance.now();
    const res = await fetch(`${bench.base}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bench.key}`, 'content-type': 'application/json' },
      body,
    });
    const acceptedMs = performance.now() - started;
    if (res.status !== 202) throw new Error(`batch refused: ${res.status} ${await res.text()}`);
    const { batchId } = (await res.json()) as { batchId: string };
    let ingestedMs = 0;
    for (;;) {
      const row = await bench.runtime.deps.db
        .selectFrom('batches')
        .select(['status', 'ingested'])
        .where('id', '=', batchId)
        .executeTakeFirstOrThrow();
      if (row.status !== 'ingesting') {
        ingestedMs = performance.now() - started;
        break;
      }
      await sleep(10);
    }
    clearInterval(sampler);
    const rate = COUNT / (ingestedMs / 1000);
    const out: Array<[string, string]> = [
      ['body', `${(body.length / 1e6).toFixed(1)} MB, ${COUNT} contacts`],
      ['202 after', `${acceptedMs.toFixed(0)} ms (target < 1000 ms)`],
      ['fully ingested after', `${ingestedMs.toFixed(0)} ms`],
      [
        'ingestion rate',
        `${Math.round(rate)} contacts/s (target ${store === 'postgres' ? '50,000' : '20,000'}/s)`,
      ],
      ['peak RSS (whole process)', `${Math.round(peakRss / 1e6)} MB (target < 512 MB)`],
    ];
    if (store === 'postgres') {
      const copyMs = await rawCopy(rows);
      const copyRate = COUNT / (copyMs / 1000);
      out.push(['raw COPY of the same rows', `${copyMs.toFixed(0)} ms, ${Math.round(copyRate)} rows/s`]);
      out.push(['ratio to raw COPY', `${(rate / copyRate).toFixed(2)}x (target >= 0.4x)`]);
    }
    report(`Accept and ingest a ${COUNT}-contact batch (${store})`, out);
  } finally {
    await bench.close();
  }
}
