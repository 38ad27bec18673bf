/**
 * `npm run soak -- --outages`: one campaign of AI calls (the LLM engine against local model
 * servers, sipp as a callee that talks) through which three dependencies go down in turn, each for
 * `--outage-seconds`: the chat model (its port closed), speech-to-text (503 on every request) and
 * the SIP trunk (sipp stopped, then started again on the same port). It checks the circuit
 * breakers' promise (issue 24): no call placed into an open breaker, nothing charged and no attempt
 * used for our failures, dispatch back within 30 s of the dependency, nothing lost or dialed twice.
 * What it measures and what a run found: docs/reliability.md, "Outages".
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { SNAPSHOT_MS } from '../../src/services/breakers.js';
import { APOLOGY } from '../../src/voice/engines/apology.js';
import { writeSpeechWav } from '../../test/helpers/audio.js';
import {
  type ChatResponder,
  type ChatServer,
  type SttServer,
  startChatServer,
  startSttServer,
  startTtsServer,
  type TtsServer,
} from '../../test/helpers/model-servers.js';
import { childEnv, freePort } from '../../test/helpers/process.js';
import { type Sipp, startSipp } from '../../test/helpers/sipp.js';
import { type AttemptRow, account } from './accounting.js';
import { type CarrierCall, readCarrierLog } from './carrier-log.js';
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
} from './harness.js';

export interface OutageOptions {
  contacts: number;
  /** The batch's calls per second. */
  rate: number;
  /** How long each dependency stays down. */
  outageSeconds: number;
  /** Bound, in seconds, on the wait for the batch to finish after the last outage. */
  settle: number;
  keep: boolean;
}

/** What the callee says (sipp plays it), and what speech-to-text hears (scripted, no pocketsphinx). */
const CALLEE_LINE = 'Yes, that works for me.';
const GREETING = 'Hello, this is Ava from outdial.';
const FAREWELL = 'Thank you. Goodbye!';
/** Calls sent before the first outage, and after each recovery before the next one. */
const WARM_UP_CALLS = 15;
const BETWEEN_CALLS = 10;
/** Bound on the wait for a dependency's recovery to show (its breaker closed, a call sent after it). */
const RECOVERY_BOUND_MS = 120_000;
/** Goal: the first INVITE this soon after the dependency is back. */
const RESUME_GOAL_MS = 30_000;

type Kind = 'llm' | 'stt' | 'trunk';

interface Outage {
  kind: Kind;
  what: string;
  key: string;
  downAt: number;
  upAt: number;
  /** Batch contacts still queued or dialing when it began: the campaign was running through it. */
  openContacts: number;
}

/** One opening of a breaker, as the soak's polling of the `breakers` table saw it. */
interface BreakerSpan {
  key: string;
  openedAt: number;
  closedAt: number | null;
}

interface Figure {
  label: string;
  value: string | number;
  goal?: string;
  met?: boolean;
}

const ms = (date: Date | string | null) => (date === null ? null : new Date(date).getTime());
const seconds = (millis: number | null) => (millis === null ? '-' : `${(millis / 1000).toFixed(1)} s`);

/** Polls `check` every `everyMs` until it returns true; throws after `boundMs`, saying what it waited for. */
async function until(what: string, check: () => Promise<boolean>, boundMs: number, everyMs = 250) {
  const deadline = Date.now() + boundMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${Math.round(boundMs / 1000)} s`);
    await sleep(everyMs);
  }
}

export async function runOutages(opts: OutageOptions): Promise<number> {
  // sipp logs its messages in local time and carrier-log.ts reads them as UTC: the times are
  // compared with the database's here, so sipp (a child, which inherits this) logs in UTC.
  process.env.TZ = 'UTC';
  const started = Date.now();
  const schema = `soak_outages_${randomBytes(3).toString('hex')}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'outdial-soak-outages-'));
  const admin = new pg.Client({ connectionString: DATABASE_URL });
  await admin.connect();
  await admin.query(`create schema ${schema}`);
  await deleteKeys();
  const roles: Role[] = [];
  const sipps: Sipp[] = [];
  const carrierLogs: string[] = [];
  let chat: ChatServer | null = null;
  let stt: SttServer | null = null;
  let tts: TtsServer | null = null;
  let polling = true;
  let poller: Promise<void> = Promise.resolve();
  const q = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []) =>
    (await admin.query<T>(text, values)).rows;
  try {
    // The callee's line, as sipp plays it (an 8 kHz u-law WAV in its working folder).
    writeSpeechWav(path.join(dir, 'callee.wav'), CALLEE_LINE, { trailingMs: 500 });
    // The models: the agent greets (text-to-speech only), hears the callee's line (speech-to-text,
    // scripted), answers and ends the call with one completion. The breaker's probe asks for one token.
    const respond: ChatResponder = (record) =>
      record.body.max_tokens === 1 ? 'OK' : { text: FAREWELL, toolCalls: [{ name: 'end_call' }] };
    chat = await startChatServer({ respond });
    const chatPort = Number(new URL(chat.url).port);
    stt = await startSttServer({ text: CALLEE_LINE });
    tts = await startTtsServer();

    const boundSeconds = 3 * (opts.outageSeconds + RECOVERY_BOUND_MS / 1000) + opts.settle + 600;
    const carrier = async (n: number, port?: number) => {
      const file = path.join(dir, `carrier-${n}.log`);
      carrierLogs.push(file);
      const sipp = await startSipp('outage-carrier', {
        calls: 10_000_000,
        messageLog: file,
        timeoutSeconds: boundSeconds,
        cwd: dir,
        ...(port ? { port } : {}),
      });
      sipps.push(sipp);
      return sipp;
    };
    let sipp = await carrier(1);

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
        OUTDIAL_AMD: 'false',
        OUTDIAL_CONVERSATION_ENGINE: 'llm',
        OUTDIAL_LLM_URL: chat?.url,
        OUTDIAL_LLM_MODEL: 'soak-llm',
        OUTDIAL_STT_URL: stt?.url,
        OUTDIAL_STT_MODEL: 'soak-stt',
        OUTDIAL_TTS_URL: tts?.url,
        OUTDIAL_TTS_MODEL: 'soak-tts',
        // Only bounds a slow answer on this shared machine (espeak-ng for ~15 calls at once): an
        // outage here is a closed port or a 503, which fail at once whatever this is.
        OUTDIAL_MODEL_TIMEOUT_MS: '30000',
        // A contact whose call failed on our side is tried again after 5 s (then 10, 20, ...).
        OUTDIAL_SERVICE_RETRY_MS: '5000',
        // The breakers keep their defaults: 3 failures in 60 s, probes from 2 s doubling to 15 s.
      });
    };
    const logFile = path.join(dir, 'processes.log');
    await startDeployment(env, logFile, roles);
    const { userId, key, trunkId, agentId } = await seedCustomer(
      base,
      sipp.port,
      { user: 'Soak outages', agent: 'Outage soak agent' },
      {
        agent_name: 'Ava',
        agentLanguage: 'en-us',
        prompts: [],
        instructions: 'Confirm the appointment, thank the callee and end the call.',
        firstMessage: GREETING,
      },
    );

    // The breakers and the batch, polled through the run: when each breaker opened and closed,
    // when the batch paused and resumed.
    const spans: BreakerSpan[] = [];
    const batchStates: Array<{ at: number; status: string; dependency: string | null }> = [];
    let batchId = '';
    const poll = async () => {
      const rows = await q<{
        key: string;
        state: string;
        opened_at: Date | null;
        last_success_at: Date | null;
      }>(`select key, state, opened_at, last_success_at from ${schema}.breakers`);
      const now = Date.now();
      for (const row of rows) {
        const open = spans.find((span) => span.key === row.key && span.closedAt === null);
        if (row.state !== 'closed' && !open) {
          spans.push({ key: row.key, openedAt: ms(row.opened_at) ?? now, closedAt: null });
        } else if (row.state === 'closed' && open) {
          // The probe's success is the closing; the poll saw it up to 200 ms later.
          const success = ms(row.last_success_at);
          open.closedAt = success !== null && success >= open.openedAt && success <= now ? success : now;
        }
      }
      if (!batchId) return;
      const batch = await q<{ status: string; paused_dependency: string | null }>(
        `select status, paused_dependency from ${schema}.batches where id = $1`,
        [batchId],
      );
      const row = batch[0];
      const last = batchStates.at(-1);
      if (row && (last?.status !== row.status || last.dependency !== row.paused_dependency))
        batchStates.push({ at: now, status: row.status, dependency: row.paused_dependency });
    };
    poller = (async () => {
      while (polling) {
        await poll().catch((error: unknown) => log(`  poll: ${String(error)}`));
        await sleep(200);
      }
    })();

    const phones = Array.from({ length: opts.contacts }, (_, i) => `+1628${3_000_000 + i}`);
    const t0 = Date.now();
    const submitted = await call(base, 'POST', '/api/v1/batch', key, {
      agentId,
      userId,
      contacts: phones.map((phoneNumber, i) => ({ phoneNumber, name: `Contact ${i}` })),
      // One attempt: an attempt used up by a failure of ours leaves its contact never completed.
      options: { maxCallsPerSecond: opts.rate, retryStrategy: { maxAttempts: 1 } },
    });
    if (submitted.status !== 202)
      throw new Error(`batch: ${submitted.status} ${JSON.stringify(submitted.json)}`);
    batchId = String(submitted.json.batchId);
    log(`  batch ${batchId}: ${opts.contacts} contacts at ${opts.rate}/s`);

    const sentSince = async (at: number) =>
      (
        await q<{ n: number }>(`select count(*)::int as n from ${schema}.dials where sent_at > $1`, [
          new Date(at),
        ])
      )[0]?.n ?? 0;
    const openContacts = async () =>
      (
        await q<{ n: number }>(
          `select count(*)::int as n from ${schema}.batch_contacts where state in ('queued', 'dialing')`,
        )
      )[0]?.n ?? 0;
    const batchLive = async () =>
      (await q<{ status: string }>(`select status from ${schema}.batches where id = $1`, [batchId]))[0]
        ?.status !== 'completed';
    const breakerClosed = async (breakerKey: string) => {
      const row = (
        await q<{ state: string }>(`select state from ${schema}.breakers where key = $1`, [breakerKey])
      )[0];
      return row === undefined || row.state === 'closed';
    };

    await until(`${WARM_UP_CALLS} calls sent`, async () => (await sentSince(t0)) >= WARM_UP_CALLS, 120_000);

    const plan: Array<{ kind: Kind; what: string; key: string; down(): Promise<void>; up(): Promise<void> }> =
      [
        {
          kind: 'llm',
          what: 'chat model: port closed',
          key: `llm:${chat.url}`,
          down: async () => {
            await chat?.close();
          },
          up: async () => {
            chat = await startChatServer({ respond, port: chatPort });
          },
        },
        {
          kind: 'stt',
          what: 'speech-to-text: 503',
          key: `stt:${stt.url}`,
          down: async () => stt?.set({ fail: 503 }),
          up: async () => stt?.set({ fail: undefined }),
        },
        {
          kind: 'trunk',
          what: 'trunk: sipp stopped',
          key: `trunk:${trunkId}`,
          down: async () => {
            const done = sipp.done;
            sipp.child.kill('SIGTERM');
            const timer = setTimeout(() => sipp.child.kill('SIGKILL'), 10_000);
            await done;
            clearTimeout(timer);
          },
          up: async () => {
            sipp = await carrier(2, sipp.port);
          },
        },
      ];
    const outages: Outage[] = [];
    for (const step of plan) {
      const open = await openContacts();
      const downAt = Date.now();
      await step.down();
      log(`  ${seconds(downAt - t0)}: ${step.what} (${open} contacts still open)`);
      // The outage itself lasts this long: the scenario, not a wait for something.
      await sleep(opts.outageSeconds * 1000);
      const upAt = Date.now();
      await step.up();
      outages.push({ kind: step.kind, what: step.what, key: step.key, downAt, upAt, openContacts: open });
      log(`  ${seconds(upAt - t0)}: ${step.kind} back`);
      // Recovered: the breaker closed and calls flow again (or the campaign had nothing left).
      await until(
        `${step.kind}: breaker closed and a call sent`,
        async () => (await breakerClosed(step.key)) && ((await sentSince(upAt)) >= 1 || !(await batchLive())),
        RECOVERY_BOUND_MS,
      );
      if (step !== plan.at(-1)) {
        await until(
          `${BETWEEN_CALLS} calls sent after the ${step.kind} outage`,
          async () => (await sentSince(upAt)) >= BETWEEN_CALLS || !(await batchLive()),
          RECOVERY_BOUND_MS,
        );
      }
    }

    let settled = true;
    try {
      await until(
        'the batch finished and no call ONGOING',
        async () =>
          !(await batchLive()) &&
          ((
            await q<{ n: number }>(`select count(*)::int as n from ${schema}.calls where status = 'ONGOING'`)
          )[0]?.n ?? 0) === 0,
        opts.settle * 1000,
        1000,
      );
    } catch (error) {
      settled = false;
      log(`  ${(error as Error).message}`);
    }
    polling = false;
    await poller;
    // sipp's last BYE answers reach its log.
    await sleep(2000);
    for (const role of roles) await role.stop();
    const last = sipp;
    last.child.kill('SIGTERM');
    await Promise.race([last.done, sleep(10_000)]);

    // The carrier's view: both of sipp's logs (before and after the trunk outage).
    const carrierCalls: CarrierCall[] = carrierLogs.flatMap((file) =>
      fs.existsSync(file) ? [...readCarrierLog(fs.readFileSync(file, 'utf8')).values()] : [],
    );
    const invites = carrierCalls.map((entry) => entry.invitedAt).sort((a, b) => a - b);
    const calls = await q<{
      id: string;
      phone_number: string;
      status: string;
      error: string | null;
      minutes_charged: number;
      failure_source: string | null;
      ended_reason: string | null;
      created_at: Date;
      answered_at: Date | null;
      ended_at: Date | null;
      sent_at: Date | null;
      transcription: Array<{ role: string; content: string }> | null;
    }>(
      `select c.id, c.phone_number, c.status, c.error, c.minutes_charged, c.failure_source, c.ended_reason,
              c.created_at, c.answered_at, c.ended_at, d.sent_at, c.transcription
         from ${schema}.calls c left join ${schema}.dials d on d.call_id = c.id`,
    );
    const contacts = await q<{
      state: string;
      attempts: number;
      counted: number;
      ours: number;
      outcome: string | null;
    }>(
      `select bc.state, bc.attempts, bc.outcome,
              (select count(*)::int from ${schema}.calls c where c.batch_id = bc.batch_id and c.batch_seq = bc.seq
                 and c.failure_source is distinct from 'service') as counted,
              (select count(*)::int from ${schema}.calls c where c.batch_id = bc.batch_id and c.batch_seq = bc.seq
                 and c.failure_source = 'service') as ours
         from ${schema}.batch_contacts bc where bc.batch_id = $1`,
      [batchId],
    );
    const balance = await q<{ available_minutes: number }>(
      `select available_minutes from ${schema}.users where id = $1`,
      [userId],
    );
    const openBatches = (await batchLive()) ? 1 : 0;
    const totals = account({
      accepted: phones,
      ingested: new Set(phones),
      contactsNotDone: contacts.filter((row) => row.state === 'queued' || row.state === 'dialing').length,
      batchesNotDone: openBatches,
      attempts: calls.map<AttemptRow>((row) => ({
        id: row.id,
        phoneNumber: row.phone_number,
        status: row.status,
        error: row.error,
        minutesCharged: row.minutes_charged,
        failureSource: row.failure_source,
      })),
      carrier: carrierCalls,
      balanceTaken: 1_000_000 - (balance[0]?.available_minutes ?? 1_000_000),
    });

    const figures: Figure[] = [];
    const end = Date.now();
    for (const [index, outage] of outages.entries()) {
      const next = outages[index + 1]?.downAt ?? end;
      const span = spans.find(
        (s) => s.key === outage.key && s.openedAt >= outage.downAt && s.openedAt < next,
      );
      const label = `${index + 1}. ${outage.what}`;
      const window = (from: number, to: number) => (at: number | null) =>
        at !== null && at >= from && at < to;
      const during = window(outage.downAt, next);
      const failures = calls.filter((row) => row.failure_source === 'service' && during(ms(row.ended_at)));
      const reasons = new Map<string, number>();
      for (const row of failures)
        reasons.set(row.ended_reason ?? '?', (reasons.get(row.ended_reason ?? '?') ?? 0) + 1);
      figures.push({
        label,
        value: `${outage.openContacts} contacts open at its start; service failures ${failures.length} (${[
          ...reasons,
        ]
          .map(([reason, n]) => `${reason} ${n}`)
          .join(', ')})`,
        goal: 'campaign running',
        met: outage.openContacts > 0,
      });
      if (!span) {
        figures.push({ label: `   breaker ${outage.key}`, value: 'never opened', goal: 'opens', met: false });
        continue;
      }
      const closedAt = span.closedAt ?? end;
      const isOpen = window(span.openedAt, closedAt);
      const sentIntoOpen = calls.filter((row) => isOpen(ms(row.sent_at)));
      const claimedWhileOpen = sentIntoOpen.filter((row) => (ms(row.created_at) ?? 0) >= span.openedAt);
      // Each process reads the breakers through a snapshot up to SNAPSHOT_MS old (services/breakers.ts):
      // a call claimed that soon after another process opened the breaker is that lag, not a placement
      // into a breaker the dispatcher knew to be open.
      const claimedLate = claimedWhileOpen.filter(
        (row) => (ms(row.created_at) ?? 0) >= span.openedAt + SNAPSHOT_MS,
      );
      const sippIntoOpen = invites.filter((at) => isOpen(at)).length;
      figures.push({
        label: '   breaker open',
        value: `${seconds(span.openedAt - outage.downAt)} after the outage began, for ${seconds(closedAt - span.openedAt)}; closed ${seconds(closedAt - outage.upAt)} after the recovery`,
      });
      figures.push({
        label: '   INVITEs placed into the open breaker',
        value: `${claimedLate.length} claimed over ${SNAPSHOT_MS / 1000} s after it opened (${claimedWhileOpen.length - claimedLate.length} within ${SNAPSHOT_MS / 1000} s; INVITEs sent while open: ${sentIntoOpen.length} by our dials, ${sippIntoOpen} in sipp's log, ${sentIntoOpen.length - claimedWhileOpen.length} of calls claimed before it opened)`,
        goal: `0 claimed over ${SNAPSHOT_MS / 1000} s after it opened`,
        met: claimedLate.length === 0,
      });
      const firstInvite = invites.find((at) => at > outage.upAt) ?? null;
      const resumed = batchStates.find((state) => state.at > outage.upAt && state.status === 'processing');
      figures.push({
        label: '   recovery to the first INVITE (sipp)',
        value: `${seconds(firstInvite === null ? null : firstInvite - outage.upAt)} (batch resumed ${seconds(resumed ? resumed.at - outage.upAt : null)} after)`,
        goal: `<= ${RESUME_GOAL_MS / 1000} s`,
        met: firstInvite !== null && firstInvite - outage.upAt <= RESUME_GOAL_MS,
      });
    }
    const expected = new Set(outages.map((outage) => outage.key));
    const others = spans.filter((span) => !expected.has(span.key));
    const chargedOurs = calls.filter((row) => row.failure_source === 'service' && row.minutes_charged > 0);
    const consumed = contacts.filter((row) => row.attempts > row.counted);
    const answered = calls.filter((row) => row.answered_at !== null);
    const apologies = answered.filter((row) => {
      const lastTurn = (row.transcription ?? []).at(-1);
      return lastTurn?.role === 'assistant' && lastTurn.content.trim() === APOLOGY;
    });
    const byReason = new Map<string, number>();
    for (const row of calls) {
      const name = `${row.status}/${row.ended_reason ?? '-'}`;
      byReason.set(name, (byReason.get(name) ?? 0) + 1);
    }
    figures.push(
      {
        label: 'other breakers opened',
        value: others.length === 0 ? 'none' : others.map((span) => span.key).join(', '),
      },
      {
        label: 'calls of ours charged (service failure, minutes > 0)',
        value: chargedOurs.length,
        goal: '0',
        met: chargedOurs.length === 0,
      },
      {
        label: 'attempts used by service failures (contacts)',
        value: `${consumed.length} (contacts with a service failure: ${contacts.filter((row) => row.ours > 0).length})`,
        goal: '0',
        met: consumed.length === 0,
      },
      {
        label: 'contacts lost (never INVITEd) / not final',
        value: `${totals.lost} / ${totals.stuck}${settled ? '' : ' (not settled)'}`,
        goal: '0 / 0',
        met: totals.lost === 0 && totals.stuck === 0 && settled,
      },
      {
        label: 'INVITEs beyond one per attempt (dialed twice)',
        value: `${totals.dialedTwice} (numbers ${totals.numbersDialedTwice})`,
        goal: '0',
        met: totals.dialedTwice === 0,
      },
      {
        label: 'attempts that never reached sipp',
        value: `${totals.attemptsWithoutDial} (trunk-unreachable calls: ${calls.filter((row) => row.ended_reason === 'trunk-unreachable').length})`,
      },
      {
        label: 'apologies (answered calls ending with it)',
        value: `${apologies.length} of ${answered.length} answered`,
      },
      {
        label: 'contacts by outcome',
        value: [
          ...contacts.reduce(
            (map, row) => map.set(row.outcome ?? '-', (map.get(row.outcome ?? '-') ?? 0) + 1),
            new Map<string, number>(),
          ),
        ]
          .map(([outcome, n]) => `${outcome} ${n}`)
          .join(', '),
      },
      {
        label: 'calls by status/reason',
        value: [...byReason]
          .sort((a, b) => b[1] - a[1])
          .map(([name, n]) => `${name} ${n}`)
          .join(', '),
      },
      {
        label: 'minutes charged / taken from the balance',
        value: `${totals.chargedMinutes} / ${totals.balanceTaken}`,
      },
      { label: 'wall time', value: `${Math.round((Date.now() - started) / 1000)} s` },
    );
    log('');
    const width = Math.max(...figures.map((figure) => figure.label.length));
    for (const figure of figures) {
      const goal = figure.goal ? `   [goal ${figure.goal}: ${figure.met ? 'met' : 'MISSED'}]` : '';
      log(`${figure.label.padEnd(width)}  ${figure.value}${goal}`);
    }
    const missed = figures.filter((figure) => figure.goal !== undefined && !figure.met);
    log('');
    log(
      missed.length === 0
        ? 'soak --outages: every goal met'
        : `soak --outages: ${missed.length} goal(s) missed: ${missed.map((figure) => figure.label.trim()).join('; ')}`,
    );
    return missed.length === 0 ? 0 : 1;
  } finally {
    polling = false;
    await poller.catch(() => {});
    for (const role of roles) await role.stop().catch(() => {});
    for (const sipp of sipps)
      if (sipp.child.exitCode === null && sipp.child.signalCode === null) sipp.child.kill('SIGKILL');
    await Promise.all([chat?.close(), stt?.close(), tts?.close()]).catch(() => {});
    if (!opts.keep) await admin.query(`drop schema if exists ${schema} cascade`).catch(() => {});
    await admin.end();
    await deleteKeys().catch(() => {});
    if (opts.keep)
      log(
        `  kept ${dir} (carrier-*.log: sipp's message logs; processes.log: every process's output) and schema ${schema}`,
      );
    else fs.rmSync(dir, { recursive: true, force: true });
  }
}
