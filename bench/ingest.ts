import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';
import { contacts, DATABASE_URL, report, sleep, startServerProcess } from './harness.js';

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
  const server = await startServerProcess(store, { OUTDIAL_DEMO_MINUTES: '1000000' });
  try {
    const rows = contacts(COUNT);
    const body = JSON.stringify({ agentId: server.agentId, userId: server.userId, contacts: rows });
    const rssBefore = server.rss();
    const started = performance.now();
    const res = await fetch(`${server.base}/api/v1/batch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${server.key}`, 'content-type': 'application/json' },
      body,
    });
    const acceptedMs = performance.now() - started;
    if (res.status !== 202) throw new Error(`batch refused: ${res.status} ${await res.text()}`);
    const { batchId } = (await res.json()) as { batchId: string };
    let ingestedMs = 0;
    for (;;) {
      const status = await fetch(`${server.base}/api/v1/batch/check-status?batchId=${batchId}&limit=0`, {
        headers: { authorization: `Bearer ${server.key}` },
      }).then((r) => r.json() as Promise<{ status: string }>);
      if (status.status !== 'ingesting') {
        ingestedMs = performance.now() - started;
        break;
      }
      await sleep(10);
    }
    const peakRss = server.peakRss();
    const rate = COUNT / (ingestedMs / 1000);
    const out: Array<[string, string]> = [
      ['body', `${(body.length / 1e6).toFixed(1)} MB, ${COUNT} contacts`],
      ['202 after', `${acceptedMs.toFixed(0)} ms (target < 1000 ms)`],
      ['fully ingested after', `${ingestedMs.toFixed(0)} ms`],
      [
        'ingestion rate',
        `${Math.round(rate)} contacts/s (target ${store === 'postgres' ? '50,000' : '20,000'}/s)`,
      ],
      [
        'server peak RSS',
        `${Math.round(peakRss / 1e6)} MB (target < 512 MB; ${Math.round(rssBefore / 1e6)} MB before the request)`,
      ],
    ];
    if (store === 'postgres') {
      const copyMs = await rawCopy(rows);
      const copyRate = COUNT / (copyMs / 1000);
      out.push(['raw COPY of the same rows', `${copyMs.toFixed(0)} ms, ${Math.round(copyRate)} rows/s`]);
      out.push(['ratio to raw COPY', `${(rate / copyRate).toFixed(2)}x (target >= 0.4x)`]);
    }
    report(`Accept and ingest a ${COUNT}-contact batch, outdial serve in its own process (${store})`, out);
  } finally {
    await server.close();
  }
}
