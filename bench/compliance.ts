import { DateTime } from 'luxon';
import type { CallingWindow } from '../src/domain/batch.js';
import { createBenchUser, report, sleep, startBenchRuntime } from './harness.js';

const CONTACTS = Number(process.env.BENCH_COMPLIANCE_CONTACTS ?? 10_000);
/** The highest rate a batch may ask for (BatchBody: maxCallsPerSecond 1..30). */
const RATE = Number(process.env.BENCH_COMPLIANCE_RATE ?? 30);
const SECONDS = Number(process.env.BENCH_COMPLIANCE_SECONDS ?? 60);
const WARMUP_SECONDS = Number(process.env.BENCH_COMPLIANCE_WARMUP ?? 5);
/** Every 20th number is on the user's suppression list before the batch: 5%. */
const SUPPRESSED_EVERY = 20;
/** Every 100th number ends in 0008, the simulator's callee who asks not to be called again: 1%. */
const OPT_OUT_EVERY = 100;
/** The rate a batch must keep for its due contacts: within 2% of its setting. */
const TARGET_ERROR = 0.02;
/** How long the compliance batch may take to dial its last due contacts after the measure. */
const DRAIN_SECONDS = Number(process.env.BENCH_COMPLIANCE_DRAIN ?? 300);

/**
 * A contact's zone and how the service is meant to find it: from the number (a US area code or a
 * country with one zone), or from the contact's own `timezone` (a multi-zone country, or a person
 * whose number is from elsewhere, here a New York number living in Los Angeles).
 */
interface ZonePlan {
  zone: string;
  /** The number before the 3-digit exchange and the 4-digit subscriber number. */
  prefix: string;
  /** Set: the contact carries `timezone`; unset: the number's zone must be found. */
  explicit: boolean;
}

/** Six zones, 2 to 7 hours apart, so that a daytime window is open in some and closed in others at any hour. */
const ZONES: Array<{ zone: string; plans: ZonePlan[] }> = [
  { zone: 'America/New_York', plans: [{ zone: 'America/New_York', prefix: '+1212', explicit: false }] },
  { zone: 'America/Chicago', plans: [{ zone: 'America/Chicago', prefix: '+1312', explicit: false }] },
  {
    zone: 'America/Los_Angeles',
    plans: [
      { zone: 'America/Los_Angeles', prefix: '+1415', explicit: false },
      { zone: 'America/Los_Angeles', prefix: '+1646', explicit: true },
    ],
  },
  { zone: 'Europe/London', plans: [{ zone: 'Europe/London', prefix: '+44207', explicit: false }] },
  { zone: 'Asia/Tokyo', plans: [{ zone: 'Asia/Tokyo', prefix: '+8135', explicit: false }] },
  { zone: 'Australia/Sydney', plans: [{ zone: 'Australia/Sydney', prefix: '+6129', explicit: true }] },
];

interface BenchContact {
  phoneNumber: string;
  name: string;
  timezone?: string;
}

interface Planned {
  contact: BenchContact;
  zone: string;
  suppressed: boolean;
  optOut: boolean;
}

/**
 * `count` contacts spread over the six zones in turn (so every claim of the dispatcher meets
 * contacts of open and closed zones alike), numbers unique within `exchangeBase`'s range. The
 * baseline has neither suppressed numbers nor opt-out callees.
 */
export function planContacts(count: number, exchangeBase: number, compliance: boolean): Planned[] {
  const perPlan = new Map<ZonePlan, number>();
  return Array.from({ length: count }, (_, i) => {
    const group = ZONES[i % ZONES.length] ?? ZONES[0];
    if (!group) throw new Error('no zones');
    const round = Math.floor(i / ZONES.length);
    const plan = group.plans[round % group.plans.length] ?? group.plans[0];
    if (!plan) throw new Error('no plan');
    const k = perPlan.get(plan) ?? 0;
    perPlan.set(plan, k + 1);
    const optOut = compliance && k % OPT_OUT_EVERY === 8;
    // Subscriber numbers 5000-5099 stay clear of the simulator's special suffixes 0001-0008.
    const subscriber = optOut ? '0008' : String(5000 + (k % 100));
    const exchange = String(exchangeBase + Math.floor(k / 100));
    const phoneNumber = `${plan.prefix}${exchange}${subscriber}`;
    return {
      contact: {
        phoneNumber,
        name: `Contact ${i}`,
        ...(plan.explicit ? { timezone: plan.zone } : {}),
      },
      zone: plan.zone,
      suppressed: compliance && !optOut && k % SUPPRESSED_EVERY === 3,
      optOut,
    };
  });
}

const minutesOfDay = (zone: string, at: Date) => {
  const local = DateTime.fromJSDate(at, { zone });
  return local.hour * 60 + local.minute;
};
const hhmm = (minutes: number) =>
  `${String(Math.floor(minutes / 60)).padStart(2, '0')}:${String(minutes % 60).padStart(2, '0')}`;

/**
 * A calling window (not crossing midnight) open now in some of the zones and closed in the others,
 * and staying so for `holdMinutes`: an open zone does not reach the end, a closed one does not
 * reach the start. 08:00-21:00 when it splits them so (2 to 4 open); else the window nearest to
 * half the zones open. Null when no such window exists at this moment.
 */
export function chooseWindow(
  zones: string[],
  at: Date,
  holdMinutes: number,
): { window: CallingWindow; open: string[] } | null {
  const local = zones.map((zone) => ({ zone, m: minutesOfDay(zone, at) })).sort((a, b) => a.m - b.m);
  // 47 CFR 64.1200's 08:00-21:00 when it splits the zones clearly at this moment.
  const [tcpaStart, tcpaEnd] = [8 * 60, 21 * 60];
  const tcpaOpen = local.filter((z) => z.m >= tcpaStart && z.m + holdMinutes < tcpaEnd);
  const unclear = local.some(
    (z) =>
      (z.m < tcpaStart && z.m + holdMinutes >= tcpaStart) || (z.m < tcpaEnd && z.m + holdMinutes >= tcpaEnd),
  );
  if (!unclear && tcpaOpen.length >= 2 && tcpaOpen.length <= zones.length - 2)
    return { window: { start: '08:00', end: '21:00' }, open: tcpaOpen.map((z) => z.zone) };
  let best: { window: CallingWindow; open: string[]; score: number } | null = null;
  for (let from = 0; from < local.length; from++) {
    for (let to = from; to < local.length; to++) {
      const first = local[from];
      const last = local[to];
      if (!first || !last) continue;
      const start = first.m - 1;
      const end = last.m + holdMinutes;
      if (start < 0 || end > 23 * 60 + 59) continue;
      // A closed zone before the start must not reach it during the run.
      const before = local[from - 1];
      if (before && before.m + holdMinutes >= start) continue;
      const open = local.slice(from, to + 1).map((z) => z.zone);
      const score = Math.abs(open.length - zones.length / 2);
      if (open.length < 2 || open.length > zones.length - 2) continue;
      if (!best || score < best.score) best = { window: { start: hhmm(start), end: hhmm(end) }, open, score };
    }
  }
  return best ? { window: best.window, open: best.open } : null;
}

/**
 * A batch of CONTACTS contacts across six zones with a calling window open in some of them, 5% of
 * its numbers suppressed beforehand and 1% callees who opt out, beside a baseline batch of the same
 * size with neither (another user, another range of numbers), both at RATE calls/s at once on
 * PostgreSQL. Measured from the dial records (`dials.sent_at`) over SECONDS after a warm-up: each
 * batch's dispatch rate against its setting (target within 2%), and what the controls must hold:
 * no suppressed number and no contact outside its window dialed, the waiting contacts counted,
 * the opt-outs on the suppression list.
 */
export async function benchCompliance(): Promise<void> {
  const bench = await startBenchRuntime('postgres', {
    OUTDIAL_SIM_RING_MS: '100',
    OUTDIAL_SIM_TALK_MS: '400',
  });
  try {
    const api = (url: string, init: { method?: string; key?: string; body?: unknown } = {}) =>
      fetch(`${bench.base}${url}`, {
        method: init.method ?? 'GET',
        headers: {
          authorization: `Bearer ${init.key ?? bench.key}`,
          ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
      });
    const baselineUser = await createBenchUser(bench.base, 'bench-baseline');

    const now = new Date();
    // The window must hold for the whole run: ingestion, warm-up, the measure and the checks.
    const chosen = chooseWindow(
      ZONES.map((z) => z.zone),
      now,
      SECONDS / 60 + 20,
    );
    if (!chosen) throw new Error(`no calling window splits the zones at ${now.toISOString()}`);
    const compliance = planContacts(CONTACTS, 200, true);
    const baseline = planContacts(CONTACTS, 600, false);
    const open = new Set(chosen.open);
    const due = compliance.filter((p) => open.has(p.zone) && !p.suppressed);
    const seconds = Math.min(SECONDS, Math.floor(due.length / RATE) - WARMUP_SECONDS - 5);
    if (seconds < 5) throw new Error(`too few due contacts (${due.length}) for a measure at ${RATE}/s`);

    // The suppression list beforehand, through the API, 20 requests at a time.
    const toSuppress = compliance.filter((p) => p.suppressed).map((p) => p.contact.phoneNumber);
    for (let i = 0; i < toSuppress.length; i += 20) {
      await Promise.all(
        toSuppress.slice(i, i + 20).map(async (phoneNumber) => {
          const res = await api('/api/v1/suppressions', {
            method: 'POST',
            body: { phoneNumber, reason: 'bench' },
          });
          if (res.status !== 201 && res.status !== 200)
            throw new Error(`suppression refused: ${res.status} ${await res.text()}`);
        }),
      );
    }

    const submit = async (
      key: string,
      userId: string,
      agentId: string,
      planned: Planned[],
      extra: Record<string, unknown>,
    ) => {
      const res = await api('/api/v1/batch', {
        method: 'POST',
        key,
        body: {
          agentId,
          userId,
          name: 'compliance bench',
          contacts: planned.map((p) => p.contact),
          options: { maxCallsPerSecond: RATE, timezone: 'UTC', ...extra },
        },
      });
      if (res.status !== 202) throw new Error(`batch refused: ${res.status} ${await res.text()}`);
      return ((await res.json()) as { batchId: string }).batchId;
    };
    const complianceId = await submit(bench.key, bench.userId, bench.agentId, compliance, {
      callingWindow: chosen.window,
    });
    const baselineId = await submit(
      baselineUser.key,
      baselineUser.userId,
      baselineUser.agentId,
      baseline,
      {},
    );
    await bench.runtime.ingester.idle();
    bench.runtime.startWorkers();
    await sleep(WARMUP_SECONDS * 1000);
    const from = new Date();
    await sleep(seconds * 1000);
    const to = new Date();

    const db = bench.runtime.database.db;
    const sentIn = async (batchId: string) =>
      (
        await db
          .selectFrom('dials')
          .innerJoin('calls', 'calls.id', 'dials.call_id')
          .select((eb) => eb.fn.countAll<string>().as('n'))
          .where('calls.batch_id', '=', batchId)
          .where('dials.sent_at', '>=', from)
          .where('dials.sent_at', '<', to)
          .executeTakeFirstOrThrow()
      ).n;
    const complianceRate = Number(await sentIn(complianceId)) / seconds;
    const baselineRate = Number(await sentIn(baselineId)) / seconds;

    // The baseline has served its purpose; the compliance batch goes on until every due contact
    // has been dialed and its call has ended, so that the gate has met every row: then each
    // suppressed contact must be counted and each contact of a closed zone must be waiting.
    const cancelled = await api(`/api/v1/batch/cancel?batchId=${baselineId}`, {
      method: 'POST',
      key: baselineUser.key,
    });
    if (cancelled.status !== 200) throw new Error(`baseline cancel: ${cancelled.status}`);
    const states = async () =>
      db
        .selectFrom('batch_contacts')
        .select(['state', 'window_wait'])
        .select((eb) => eb.fn.countAll<string>().as('n'))
        .where('batch_id', '=', complianceId)
        .groupBy(['state', 'window_wait'])
        .execute();
    const count = (rows: Awaited<ReturnType<typeof states>>, state: string, wait?: boolean) =>
      rows
        .filter((s) => s.state === state && (wait === undefined || s.window_wait === wait))
        .reduce((sum, s) => sum + Number(s.n), 0);
    const drainStart = Date.now();
    let finalStates = await states();
    while (
      (count(finalStates, 'queued', false) > 0 || count(finalStates, 'dialing') > 0) &&
      Date.now() - drainStart < DRAIN_SECONDS * 1000
    ) {
      await sleep(2000);
      finalStates = await states();
    }
    const drainedIn = (Date.now() - drainStart) / 1000;

    const dialed = await db
      .selectFrom('dials')
      .innerJoin('calls', 'calls.id', 'dials.call_id')
      .select(['calls.id', 'calls.phone_number'])
      .where('calls.batch_id', '=', complianceId)
      .where('dials.sent_at', 'is not', null)
      .execute();
    const byNumber = new Map(compliance.map((p) => [p.contact.phoneNumber, p]));
    const suppressedDialed = dialed.filter((row) => byNumber.get(row.phone_number)?.suppressed).length;
    const closedDialed = dialed.filter((row) => {
      const p = byNumber.get(row.phone_number);
      return p !== undefined && !open.has(p.zone);
    }).length;
    const dueDialed = new Set(
      dialed.filter((row) => byNumber.get(row.phone_number)?.suppressed === false).map((r) => r.phone_number),
    ).size;
    const closedWaiting = compliance.filter((p) => !open.has(p.zone) && !p.suppressed).length;

    const status = (await (await api(`/api/v1/batch/check-status?batchId=${complianceId}`)).json()) as {
      statistics?: Record<string, number>;
    };
    const stats = status.statistics ?? {};

    // Opt-outs: every 0008 callee dialed so far is on the list with reason opt-out and its call,
    // once its call's analysis is stored (give it up to 20 s after the last call ends).
    const optOutCalls = new Map(
      dialed.filter((row) => byNumber.get(row.phone_number)?.optOut).map((row) => [row.phone_number, row.id]),
    );
    let optOutsListed = 0;
    let optOutsWithCall = 0;
    for (let waited = 0; waited <= 20_000; waited += 1000) {
      const listed = await listSuppressions(api);
      const optOuts = listed.filter((s) => optOutCalls.has(s.phoneNumber) && s.reason === 'opt-out');
      optOutsListed = optOuts.length;
      optOutsWithCall = optOuts.filter(
        (s) => s.sourceCallId !== undefined && s.sourceCallId === optOutCalls.get(s.phoneNumber),
      ).length;
      if (optOutsListed >= optOutCalls.size) break;
      await sleep(1000);
    }

    const error = (rate: number) => Math.abs(rate - RATE) / RATE;
    const verdict = (rate: number) => (error(rate) <= TARGET_ERROR ? 'met' : 'NOT met');
    report(
      `Compliance: ${CONTACTS.toLocaleString('en')} contacts in ${ZONES.length} zones at ${RATE} calls/s, measured for ${seconds} s (postgres)`,
      [
        ['bench time', now.toISOString()],
        [
          'calling window',
          `${chosen.window.start}-${chosen.window.end}, open in ${chosen.open.join(', ')} (${open.size} of ${ZONES.length} zones)`,
        ],
        [
          'compliance batch',
          `${due.length} due, ${toSuppress.length} suppressed beforehand, ${compliance.filter((p) => p.optOut).length} opt-out callees`,
        ],
        [
          'due contacts dispatch',
          `${complianceRate.toFixed(2)} calls/s = ${(complianceRate / RATE).toFixed(3)}x configured, error ${(error(complianceRate) * 100).toFixed(2)}% (target <= 2%): ${verdict(complianceRate)}`,
        ],
        [
          'baseline dispatch',
          `${baselineRate.toFixed(2)} calls/s = ${(baselineRate / RATE).toFixed(3)}x configured, error ${(error(baselineRate) * 100).toFixed(2)}%`,
        ],
        [
          'compliance / baseline',
          `${baselineRate > 0 ? (complianceRate / baselineRate).toFixed(3) : 'n/a'}x`,
        ],
        [
          'after the measure',
          `every due contact dialed and ended ${drainedIn.toFixed(0)} s later: ${dueDialed} of ${due.length} dialed`,
        ],
        ['suppressed numbers dialed', `${suppressedDialed} (must be 0)`],
        ['closed-zone contacts dialed', `${closedDialed} (must be 0)`],
        [
          'statistics.suppressed',
          `${stats.suppressed ?? 'absent'} (state suppressed: ${count(finalStates, 'suppressed')}; suppressed beforehand: ${toSuppress.length})`,
        ],
        [
          'statistics.waitingForWindow',
          `${stats.waitingForWindow ?? 'absent'} (queued with window_wait: ${count(finalStates, 'queued', true)}; closed-zone contacts: ${closedWaiting})`,
        ],
        [
          'opt-outs on the list',
          `${optOutsListed} of ${optOutCalls.size} dialed, ${optOutsWithCall} naming their call`,
        ],
      ],
    );
  } finally {
    await bench.close();
  }
}

interface SuppressionRow {
  phoneNumber: string;
  reason?: string | null;
  sourceCallId?: string | null;
}

/** Every entry of the user's suppression list, page by page (GET /api/v1/suppressions, X-Next-Cursor). */
async function listSuppressions(api: (url: string) => Promise<Response>): Promise<SuppressionRow[]> {
  const rows: SuppressionRow[] = [];
  let cursor: string | null = null;
  for (let page = 0; page < 100; page++) {
    const res = await api(
      `/api/v1/suppressions?limit=1000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
    );
    if (res.status !== 200) throw new Error(`suppression list: ${res.status} ${await res.text()}`);
    rows.push(...((await res.json()) as SuppressionRow[]));
    cursor = res.headers.get('x-next-cursor');
    if (!cursor) break;
  }
  return rows;
}
