import { answeredSeconds, type CarrierCall } from './carrier-log.js';

/** One attempt as the database recorded it (a row of `calls`). */
export interface AttemptRow {
  id: string;
  phoneNumber: string;
  status: string;
  error: string | null;
  minutesCharged: number;
  /** calls.failure_source: 'service' when the call failed on our side (a process cut off): never charged. */
  failureSource: string | null;
}

export interface RunFacts {
  /** Every number of every batch the API accepted (202). */
  accepted: string[];
  /** Numbers with a row in batch_contacts (ingested). */
  ingested: Set<string>;
  /** batch_contacts rows not done (queued or dialing) once the run settled. */
  contactsNotDone: number;
  /** Batches not in a final state once the run settled. */
  batchesNotDone: number;
  attempts: AttemptRow[];
  carrier: CarrierCall[];
  /** Minutes taken from the user's balance. */
  balanceTaken: number;
}

export interface RunTotals {
  /** Contacts of the dialed batches that the API accepted (202). */
  accepted: number;
  /** Contacts of the scheduled batch, accepted to be ingested (not dialed in the run). */
  acceptedToIngest: number;
  /** Accepted, yet never INVITEd (and so never reached the network). */
  lost: number;
  /** Of the lost, never ingested into batch_contacts. */
  notIngested: number;
  /** INVITEs beyond one per attempt: the same attempt placed twice. */
  dialedTwice: number;
  /** Numbers with at least one such extra INVITE. */
  numbersDialedTwice: number;
  /** Attempts the database counts as placed that the carrier never saw (an attempt used up without a dial). */
  attemptsWithoutDial: number;
  /** Calls left ONGOING, contacts left queued or dialing, batches not finished. */
  stuck: number;
  answeredCalls: number;
  answeredSeconds: number;
  /**
   * Minutes the user owes: each answered call's started minutes, except the calls that failed on
   * our side (a process cut off after the answer), which are not charged (issue 24).
   */
  answeredMinutes: number;
  /** Answered calls that failed on our side, and their started minutes: kept, never charged. */
  ourFailureCalls: number;
  ourFailureMinutes: number;
  /** Sum of calls.minutes_charged. */
  chargedMinutes: number;
  balanceTaken: number;
  /** Numbers the carrier answered whose calls were charged fewer minutes than it would bill. */
  underCharged: number;
  /** Numbers charged more minutes than the carrier would bill. */
  overCharged: number;
}

/** A refusal for capacity: the INVITE reached the carrier but did not place the call. */
const CAPACITY = new Set([503]);
/** How the provider ends an attempt that only ever met refusals for capacity (src/adapters/voice/sip/provider.ts). */
const NO_CAPACITY = /no capacity/i;

/**
 * The accounting of one run, from sipp's log and the database. Without our call id in the INVITE
 * the link is the number (each contact of a run has a number of its own): per number, the carrier
 * should see exactly one placed INVITE (any answer but a refusal for capacity) per attempt in
 * `calls`, except attempts that met only refusals for capacity.
 */
export function account(facts: RunFacts): RunTotals {
  const placed = new Map<string, CarrierCall[]>();
  const invited = new Set<string>();
  for (const call of facts.carrier) {
    invited.add(call.number);
    if (call.finalCode !== null && CAPACITY.has(call.finalCode)) continue;
    placed.set(call.number, [...(placed.get(call.number) ?? []), call]);
  }
  const attempts = new Map<string, AttemptRow[]>();
  for (const row of facts.attempts)
    attempts.set(row.phoneNumber, [...(attempts.get(row.phoneNumber) ?? []), row]);

  const totals: RunTotals = {
    accepted: facts.accepted.length,
    acceptedToIngest: 0,
    lost: 0,
    notIngested: 0,
    dialedTwice: 0,
    numbersDialedTwice: 0,
    attemptsWithoutDial: 0,
    stuck: facts.contactsNotDone + facts.batchesNotDone,
    answeredCalls: 0,
    answeredSeconds: 0,
    answeredMinutes: 0,
    ourFailureCalls: 0,
    ourFailureMinutes: 0,
    chargedMinutes: 0,
    balanceTaken: facts.balanceTaken,
    underCharged: 0,
    overCharged: 0,
  };
  for (const number of facts.accepted) {
    if (!invited.has(number)) {
      totals.lost++;
      if (!facts.ingested.has(number)) totals.notIngested++;
    }
  }
  const numbers = new Set([...placed.keys(), ...attempts.keys()]);
  for (const number of numbers) {
    const rows = attempts.get(number) ?? [];
    const calls = placed.get(number) ?? [];
    const expected = rows.filter(
      (row) => !(row.status === 'FAILED' && NO_CAPACITY.test(row.error ?? '')),
    ).length;
    const byOurId = calls.every((call) => call.ourCallId !== null);
    // With our call id in the INVITE the link is exact: more than one placed INVITE per call id.
    const extra = byOurId
      ? calls.length - new Set(calls.map((call) => call.ourCallId)).size
      : Math.max(0, calls.length - expected);
    totals.dialedTwice += extra;
    if (extra > 0) totals.numbersDialedTwice++;
    totals.attemptsWithoutDial += Math.max(0, expected - (calls.length - extra));
    totals.stuck += rows.filter((row) => row.status === 'ONGOING').length;
    // A call whose row says it failed on our side owes nothing; linked by our call id in the INVITE.
    const ours = new Set(rows.filter((row) => row.failureSource === 'service').map((row) => row.id));
    const isOurs = (call: CarrierCall) => call.ourCallId !== null && ours.has(call.ourCallId);
    const minutesOf = (call: CarrierCall) => Math.ceil(answeredSeconds(call) / 60);
    const answered = calls.filter((call) => call.answeredAt !== null);
    const billed = answered.filter((call) => !isOurs(call)).reduce((sum, call) => sum + minutesOf(call), 0);
    for (const call of answered.filter(isOurs)) {
      totals.ourFailureCalls++;
      totals.ourFailureMinutes += minutesOf(call);
    }
    const charged = rows.reduce((sum, row) => sum + row.minutesCharged, 0);
    for (const call of calls) {
      if (call.answeredAt === null) continue;
      totals.answeredCalls++;
      totals.answeredSeconds += answeredSeconds(call);
    }
    totals.answeredMinutes += billed;
    totals.chargedMinutes += charged;
    if (charged < billed) totals.underCharged++;
    if (charged > billed) totals.overCharged++;
  }
  return totals;
}

/** Adds one run's totals into the running sum. */
export function addTotals(sum: RunTotals, run: RunTotals): RunTotals {
  const out = { ...sum };
  for (const key of Object.keys(run) as Array<keyof RunTotals>) out[key] = sum[key] + run[key];
  return out;
}
