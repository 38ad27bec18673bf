/**
 * npm run soak: seeded runs of an API process and two workers on PostgreSQL and Redis, each with its
 * own data dir, killed with SIGKILL at seeded moments during ingest and dispatch, with sipp as the
 * carrier, and an accounting of every contact from sipp's own message log. Not part of npm test.
 * How to run it and what it found: docs/reliability.md.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { childEnv, freePort, ROOT } from '../test/helpers/process.js';
import { seededRandom } from '../test/helpers/random.js';
import { type Sipp, startSipp } from '../test/helpers/sipp.js';
import { type AttemptRow, account, addTotals, type RunTotals } from './soak/accounting.js';
import { readCarrierLog } from './soak/carrier-log.js';
import {
  ADMIN_TOKEN,
  call,
  DATABASE_URL,
  deleteKeys,
  ENCRYPTION_KEY,
  JWT_SECRET,
  log,
  REDIS_URL,
  type Role,
  seedCustomer,
  sleep,
  startDeployment,
} from './soak/harness.js';
import { runOutages } from './soak/outages.js';

const ENGINE = path.join(ROOT, 'scripts/soak/silent-engine.ts');

interface Options {
  seed: number;
  runs: number;
  contacts: number;
  ingestContacts: number;
  duration: number;
  kills: number;
  settle: number;
  keep: boolean;
  outages: boolean;
  outageSeconds: number;
  rate: number;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      seed: { type: 'string', default: '1' },
      runs: { type: 'string', default: '20' },
      contacts: { type: 'string', default: '300' },
      'ingest-contacts': { type: 'string', default: '20000' },
      duration: { type: 'string', default: '60' },
      kills: { type: 'string', default: '4' },
      settle: { type: 'string', default: '240' },
      keep: { type: 'boolean', default: false },
      outages: { type: 'boolean', default: false },
      'outage-seconds': { type: 'string', default: '60' },
      rate: { type: 'string', default: '2' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(
      [
        'npm run soak -- [--seed 1] [--runs 20] [--contacts 300] [--ingest-contacts 20000] [--duration 60] [--kills 4] [--settle 240] [--keep]',
        'npm run soak -- --outages [--contacts 300] [--rate 2] [--outage-seconds 60] [--settle 240] [--keep]',
        '  --outages: one campaign of AI calls through which the chat model, speech-to-text and the SIP',
        '  trunk go down in turn (--outage-seconds each); checks the circuit breakers (docs/reliability.md, "Outages")',
        '',
      ].join('\n'),
    );
    process.exit(0);
  }
  const int = (name: string, raw: string, min: number, max: number) => {
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) {
      process.stderr.write(`--${name} must be a whole number from ${min} to ${max}, got "${raw}"\n`);
      process.exit(2);
    }
    return value;
  };
  return {
    seed: int('seed', values.seed, 0, 2 ** 31),
    runs: int('runs', values.runs, 1, 1000),
    contacts: int('contacts', values.contacts, 10, 20_000),
    ingestContacts: int('ingest-contacts', values['ingest-contacts'], 0, 100_000),
    duration: int('duration', values.duration, 5, 3600),
    kills: int('kills', values.kills, 0, 100),
    settle: int('settle', values.settle, 30, 3600),
    keep: values.keep,
    outages: values.outages,
    outageSeconds: int('outage-seconds', values['outage-seconds'], 5, 3600),
    rate: int('rate', values.rate, 1, 100),
  };
}

/**
 * The last digit of a number decides what the carrier does (test/fixtures/sipp/soak-carrier.xml);
 * these weights make about 63% answered (3% for 48 s), 17% busy, 10% unanswered, and 10% refused
 * for capacity on half of their INVITEs (answered otherwise).
 */
const OUTCOME_WEIGHTS: Array<[digit: number, weight: number]> = [
  [0, 15],
  [1, 12],
  [2, 8],
  [3, 3],
  [4, 10],
  [5, 7],
  [6, 10],
  [7, 10],
  [8, 15],
  [9, 10],
];

function outcomeDigit(rand: () => number): number {
  let pick = rand() * 100;
  for (const [digit, weight] of OUTCOME_WEIGHTS) {
    pick -= weight;
    if (pick < 0) return digit;
  }
  return 9;
}

/** `count` distinct numbers under an area code, each ending in a seeded outcome digit. */
function numbers(area: number, count: number, rand: () => number): string[] {
  return Array.from({ length: count }, (_, i) => `+1${area}${2_000_000 + i * 10 + outcomeDigit(rand)}`);
}

interface RunResult {
  totals: RunTotals;
  kills: number;
  ingestKillLanded: boolean | null;
  seconds: number;
  settled: boolean;
}

async function runOnce(index: number, seed: number, opts: Options): Promise<RunResult> {
  const started = Date.now();
  const rand = seededRandom(seed);
  const schema = `soak_${seed}_${randomBytes(3).toString('hex')}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `outdial-soak-${seed}-`));
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await deleteKeys();
  const roles: Role[] = [];
  let sipp: Sipp | null = null;
  const carrierLog = path.join(dir, 'carrier.log');
  try {
    // The whole run's bound, for sipp's own timeout too.
    const bound = opts.duration + opts.settle + 300;
    sipp = await startSipp('soak-carrier', {
      calls: 10_000_000,
      messageLog: carrierLog,
      timeoutSeconds: bound,
      cwd: dir,
    });
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const env = (name: string, rtp: string) => {
      const dataDir = path.join(dir, name);
      fs.mkdirSync(dataDir);
      return childEnv({
        HOST: '127.0.0.1',
        PORT: String(port),
        OUTDIAL_DATA_DIR: dataDir,
        DATABASE_URL: `${DATABASE_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
        REDIS_URL,
        OUTDIAL_ADMIN_TOKEN: ADMIN_TOKEN,
        OUTDIAL_JWT_SECRET: JWT_SECRET,
        OUTDIAL_ENCRYPTION_KEY: ENCRYPTION_KEY,
        OUTDIAL_SEED_DEMO: 'false',
        OUTDIAL_SIP_BIND: '127.0.0.1',
        OUTDIAL_SIP_PORT: '0',
        OUTDIAL_RTP_PORTS: rtp,
        OUTDIAL_SIP_RING_TIMEOUT_MS: '3000',
        // A call cut off by a kill is ours (issue 24): its contact keeps the attempt and is tried
        // again after this, like the batches' own 5 s retries, so a run settles in its bound.
        OUTDIAL_SERVICE_RETRY_MS: '5000',
        OUTDIAL_AMD: 'false',
        OUTDIAL_CONVERSATION_ENGINE: ENGINE,
      });
    };
    const logFile = path.join(dir, 'processes.log');
    const { api, workers } = await startDeployment(env, logFile, roles);
    const { userId, key, agentId } = await seedCustomer(
      base,
      sipp.port,
      { user: 'Soak', agent: 'Soak agent' },
      { agent_name: 'Ava', agentLanguage: 'en-us', prompts: [] },
    );

    const accepted: string[] = [];
    const scheduled: string[] = [];
    const dialedBatches: string[] = [];
    let ingestBatch: string | null = null;
    // Two attempts (busy and unanswered numbers are retried after 5 s), except where said: with one
    // attempt, an attempt used up without a dial leaves its contact never called, that is lost.
    const submit = async (
      phones: string[],
      rate: number,
      extra: Record<string, unknown> = {},
      maxAttempts = 2,
    ): Promise<string | null> => {
      await api.up();
      const res = await call(base, 'POST', '/api/v1/batch', key, {
        agentId,
        userId,
        contacts: phones.map((phoneNumber, i) => ({ phoneNumber, name: `Contact ${i}` })),
        options: {
          maxCallsPerSecond: rate,
          retryStrategy: { maxAttempts, noAnswerDelay: 5000, busyDelay: 5000 },
          ...extra,
        },
      });
      if (res.status !== 202) {
        log(
          `  batch of ${phones.length} not accepted: ${res.status} ${JSON.stringify(res.json).slice(0, 200)}`,
        );
        return null;
      }
      return String(res.json.batchId);
    };
    const dialBatch = async (phones: string[], rate: number, maxAttempts = 2) => {
      const id = await submit(phones, rate, {}, maxAttempts);
      if (id) {
        accepted.push(...phones);
        dialedBatches.push(id);
      }
    };

    // The plan, all drawn from the seed: batch sizes, when each process is killed, how long it stays down.
    const first = Math.round(opts.contacts * 0.3);
    const large = Math.round(opts.contacts * 0.45);
    const last = opts.contacts - first - large;
    const phones = {
      first: numbers(212, first, rand),
      large: numbers(415, large, rand),
      last: numbers(646, last, rand),
      ingest: numbers(312, opts.ingestContacts, rand),
    };
    const ingestKillMs = Math.floor(rand() * 300);
    const kills = Array.from({ length: Math.max(0, opts.kills - 1) }, () => ({
      at: 5000 + rand() * (opts.duration * 1000 - 5000),
      role: rand() < 0.2 ? api : (workers[rand() < 0.5 ? 0 : 1] ?? api),
      downMs: 500 + rand() * 2500,
    })).sort((a, b) => a.at - b.at);
    const restartAfter = (role: Role, ms: number) =>
      sleep(ms).then(() => role.start().catch((error: unknown) => log(`  ${role.name}: ${String(error)}`)));

    const t0 = Date.now();
    await dialBatch(phones.first, 5);
    // The large batch lands while the API still ingests a far larger one; the API is killed then.
    let ingestKillLanded: boolean | null = null;
    if (opts.ingestContacts > 0 && opts.kills > 0) {
      ingestBatch = await submit(phones.ingest, 10, {
        scheduledStartTime: new Date(Date.now() + 24 * 3600_000).toISOString(),
      });
      if (ingestBatch) {
        scheduled.push(...phones.ingest);
        await sleep(ingestKillMs);
        await api.kill();
        const row = await admin.query<{ status: string }>(
          `select status from ${schema}.batches where id = $1`,
          [ingestBatch],
        );
        ingestKillLanded = row.rows[0]?.status === 'ingesting';
        void restartAfter(api, 500 + rand() * 2500);
      }
    }
    await dialBatch(phones.large, 10, 1);
    let lastSent = false;
    for (const kill of kills) {
      if (!lastSent && kill.at > (opts.duration * 1000) / 2) {
        await dialBatch(phones.last, 5);
        lastSent = true;
      }
      const wait = t0 + kill.at - Date.now();
      if (wait > 0) await sleep(wait);
      // A process that is still coming back from the previous kill is killed once it is up.
      await kill.role.up();
      if (kill.role === api) await sleep(rand() * 200); // not while a submission is in flight
      await kill.role.kill();
      void restartAfter(kill.role, kill.downMs);
    }
    if (!lastSent) await dialBatch(phones.last, 5);
    const windowLeft = t0 + opts.duration * 1000 - Date.now();
    if (windowLeft > 0) await sleep(windowLeft);
    await Promise.all(roles.map((role) => role.up()));

    // Settle: every dialed batch finished and no call ONGOING, within a bound.
    const deadline = Date.now() + opts.settle * 1000;
    let settled = false;
    while (Date.now() < deadline) {
      const open = await admin.query<{ n: number }>(
        `select (select count(*) from ${schema}.batches where id = any($1::text[])
                   and status not in ('completed', 'cancelled', 'failed'))
              + (select count(*) from ${schema}.calls where status = 'ONGOING') as n`,
        [dialedBatches],
      );
      if (Number(open.rows[0]?.n) === 0) {
        settled = true;
        break;
      }
      await sleep(2000);
    }
    // sipp's last BYEs and their answers.
    await sleep(2000);
    for (const role of roles) await role.stop();
    sipp.child.kill('SIGTERM');
    await Promise.race([sipp.done, sleep(10_000)]);

    const q = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
      (await admin.query<T>(text, values)).rows;
    const ingested = new Set(
      (await q<{ phone_number: string }>(`select phone_number from ${schema}.batch_contacts`)).map(
        (row) => row.phone_number,
      ),
    );
    const notDone = await q<{ n: number }>(
      `select count(*)::int as n from ${schema}.batch_contacts where batch_id = any($1::text[]) and state in ('queued', 'dialing')`,
      [dialedBatches],
    );
    const openBatches = await q<{ n: number }>(
      `select count(*)::int as n from ${schema}.batches where id = any($1::text[]) and status not in ('completed', 'cancelled', 'failed')`,
      [dialedBatches],
    );
    const attempts = (
      await q<{
        id: string;
        phone_number: string;
        status: string;
        error: string | null;
        minutes_charged: number;
        failure_source: string | null;
      }>(`select id, phone_number, status, error, minutes_charged, failure_source from ${schema}.calls`)
    ).map<AttemptRow>((row) => ({
      id: row.id,
      phoneNumber: row.phone_number,
      status: row.status,
      error: row.error,
      minutesCharged: row.minutes_charged,
      failureSource: row.failure_source,
    }));
    const balance = await q<{ available_minutes: number }>(
      `select available_minutes from ${schema}.users where id = $1`,
      [userId],
    );
    const totals = account({
      accepted,
      ingested,
      contactsNotDone: notDone[0]?.n ?? 0,
      batchesNotDone: openBatches[0]?.n ?? 0,
      attempts,
      carrier: [...readCarrierLog(fs.readFileSync(carrierLog, 'utf8')).values()],
      balanceTaken: 1_000_000 - (balance[0]?.available_minutes ?? 1_000_000),
    });
    // The scheduled batch is not dialed in the run: its contacts are lost when they were never ingested.
    const scheduledLost = scheduled.filter((phone) => !ingested.has(phone)).length;
    totals.lost += scheduledLost;
    totals.notIngested += scheduledLost;
    totals.acceptedToIngest = scheduled.length;
    const result: RunResult = {
      totals,
      kills: roles.reduce((sum, role) => sum + role.kills, 0),
      ingestKillLanded,
      seconds: Math.round((Date.now() - started) / 1000),
      settled,
    };
    log(runLine(index, seed, result));
    return result;
  } finally {
    for (const role of roles) await role.stop().catch(() => {});
    if (sipp && sipp.child.exitCode === null) sipp.child.kill('SIGKILL');
    if (!opts.keep) await admin.query(`drop schema if exists ${schema} cascade`).catch(() => {});
    await admin.end();
    await deleteKeys().catch(() => {});
    if (opts.keep)
      log(
        `  kept ${dir} (carrier.log: sipp's message log; processes.log: every process's output) and schema ${schema}`,
      );
    else fs.rmSync(dir, { recursive: true, force: true });
  }
}

function runLine(index: number, seed: number, r: RunResult): string {
  const t = r.totals;
  return `run ${index + 1} seed ${seed}: ${[
    `accepted ${t.accepted} + ${t.acceptedToIngest} to ingest`,
    `lost ${t.lost} (never ingested ${t.notIngested})`,
    `dialed twice ${t.dialedTwice} (numbers ${t.numbersDialedTwice})`,
    `stuck ${t.stuck}${r.settled ? '' : ' (not settled)'}`,
    `attempts without a dial ${t.attemptsWithoutDial}`,
    `answered ${t.answeredCalls} calls ${t.answeredMinutes} min owed (+${t.ourFailureMinutes} min of ${t.ourFailureCalls} cut-off calls, ours), charged ${t.chargedMinutes} min (balance -${t.balanceTaken}), under ${t.underCharged} over ${t.overCharged}`,
    `kills ${r.kills}${r.ingestKillLanded === null ? '' : r.ingestKillLanded ? ' (one during ingest)' : ' (ingest done before the kill)'}`,
    `${r.seconds} s`,
  ].join(' | ')}`;
}

function table(sum: RunTotals, runs: number, kills: number, seconds: number): string {
  const rows: Array<[string, number | string]> = [
    ['runs', runs],
    ['SIGKILLs', kills],
    ['contacts accepted, dialed batches', sum.accepted],
    ['contacts accepted, scheduled batch (ingest only)', sum.acceptedToIngest],
    ['lost (accepted, never INVITEd)', sum.lost],
    ['  of which never ingested', sum.notIngested],
    ['INVITEs beyond one per attempt', sum.dialedTwice],
    ['  numbers dialed twice', sum.numbersDialedTwice],
    ['stuck (ONGOING calls, open contacts and batches)', sum.stuck],
    ['attempts used without reaching the carrier', sum.attemptsWithoutDial],
    ['answered calls (sipp)', sum.answeredCalls],
    ['answered seconds (sipp)', sum.answeredSeconds],
    ['answered minutes owed, as billed per call (sipp)', sum.answeredMinutes],
    ['  answered calls that failed on our side (cut off), not owed', sum.ourFailureCalls],
    ['  their minutes, as billed per call (sipp)', sum.ourFailureMinutes],
    ['minutes charged (calls.minutes_charged)', sum.chargedMinutes],
    ["minutes taken from the user's balance", sum.balanceTaken],
    ['numbers charged less than answered', sum.underCharged],
    ['numbers charged more than answered', sum.overCharged],
    ['wall time (s)', seconds],
  ];
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${String(value).padStart(8)}`).join('\n');
}

async function main(): Promise<void> {
  const opts = options();
  if (opts.outages) {
    log(
      `soak --outages: ${opts.contacts} contacts at ${opts.rate}/s; the chat model, speech-to-text and the trunk down ${opts.outageSeconds} s each`,
    );
    let code = 1;
    try {
      code = await runOutages(opts);
    } catch (error) {
      log(`soak --outages: could not complete: ${(error as Error).stack ?? String(error)}`);
    }
    process.exit(code);
  }
  log(
    `soak: ${opts.runs} run(s) from seed ${opts.seed}, ${opts.contacts} contacts dialed and ${opts.ingestContacts} ingested per run, ${opts.kills} SIGKILLs in ${opts.duration} s, settle within ${opts.settle} s`,
  );
  const started = Date.now();
  let sum: RunTotals | null = null;
  let kills = 0;
  let failedRuns = 0;
  for (let index = 0; index < opts.runs; index++) {
    const seed = opts.seed + index;
    try {
      const result = await runOnce(index, seed, opts);
      sum = sum ? addTotals(sum, result.totals) : result.totals;
      kills += result.kills;
      if (!result.settled) failedRuns++;
    } catch (error) {
      failedRuns++;
      log(`run ${index + 1} seed ${seed}: could not complete: ${(error as Error).stack ?? String(error)}`);
    }
  }
  if (!sum) {
    log('soak: no run completed');
    process.exit(1);
  }
  log('');
  log(table(sum, opts.runs, kills, Math.round((Date.now() - started) / 1000)));
  const missed = sum.lost + sum.dialedTwice + sum.stuck > 0 || failedRuns > 0;
  log('');
  log(
    missed
      ? `soak: target missed (0 lost, 0 dialed twice, 0 stuck${failedRuns ? `; ${failedRuns} run(s) did not settle or complete` : ''})`
      : 'soak: target met: 0 lost, 0 dialed twice, 0 stuck',
  );
  process.exit(missed ? 1 : 0);
}

await main();
