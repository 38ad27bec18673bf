import { setImmediate as nextTurn } from 'node:timers/promises';
import type { CallingWindow } from '../domain/batch.js';
import { estimateMinutes } from '../domain/batch.js';
import { contactZone, isContactZone, nextCallableAt } from '../domain/calling-window.js';
import { consentError, hasConsent } from '../domain/consent.js';
import { type BatchContactInput, distinctContacts } from '../domain/contacts.js';
import { AppError, type ErrorCode } from '../domain/errors.js';
import { type CountryCode, normalizePhone } from '../domain/phone.js';
import {
  type BatchCreateInput,
  type BatchOptionsInput,
  type BatchService,
  readCallingWindow,
} from './batches.js';
import type { Deps } from './deps.js';
import { defaultCountryOf, markPhoneRead } from './phone-numbers.js';
import { suppressedAmong } from './suppressions.js';

/**
 * Contacts looked at between two turns of the event loop. Checking one takes a few microseconds,
 * so 5,000 hold the loop well under 50 ms; a 100,000-contact body yields about 20 times per step.
 */
export const PREFLIGHT_CHUNK = 5_000;
/** Numbers per suppression lookup: one indexed join each, a few hundred KB of parameters. */
const SUPPRESSION_LOOKUP = 10_000;

/** POST's refusals that depend on the account, not on the request: reported, never this request's error. */
const ACCOUNT_REFUSALS: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  'AGENT_NOT_FOUND',
  'INSUFFICIENT_CREDITS',
]);

/** A contact the batch would refuse, and why (field names as the 400 of POST /api/v1/batch gives them). */
export interface InvalidContact {
  index: number;
  phoneNumber: string | null;
  reason: string;
}

/** The preflight's body: a batch body whose contacts are checked one by one instead of as a whole. */
export interface PreflightInput extends Omit<BatchCreateInput, 'contacts'> {
  contacts: unknown[];
  options?: BatchOptionsInput & { callingWindow?: unknown };
}

/**
 * What POST /api/v1/batch would do with a body. The counts partition the valid distinct contacts
 * the way the batch would: `withoutConsent` are skipped when queued, `suppressed` (of the rest) are
 * never dialed, and `outsideWindowNow` (of the rest again) would wait for their window.
 */
export interface PreflightReport {
  total: number;
  valid: number;
  invalid: InvalidContact[];
  duplicates: number;
  suppressed: number;
  outsideWindowNow: number;
  withoutConsent: number;
  estimatedMinutes: number;
  availableMinutes: number;
  wouldBeAccepted: boolean;
  /** What POST /api/v1/batch would answer instead of 202; null when it would accept. */
  refusal: AppError | null;
}

/** What is wrong with one field of a contact; `field` is relative to the contact, '' for the contact itself. */
export interface ContactProblem {
  field: string;
  message: string;
}

/** The schema's verdict on one contact (the HTTP layer owns the schema): its problems, or null when it passes. */
export type ContactSchemaCheck = (contact: unknown) => ContactProblem[] | null;

/**
 * POST /api/v1/batch/preflight: runs a batch body through the rules of a submission without
 * storing anything. Contacts are judged one by one (schema, then the rules the schema cannot state:
 * consent's obtainedAt, the contact's zone), the batch as a whole by BatchService.accept itself in
 * its check-only mode, so that `wouldBeAccepted` is what a POST would answer, by the same code.
 */
export class BatchPreflight {
  constructor(
    private readonly deps: Pick<Deps, 'store' | 'config' | 'clock'>,
    private readonly batches: Pick<BatchService, 'accept'>,
  ) {}

  async run(
    userId: string,
    input: PreflightInput,
    checkSchema: ContactSchemaCheck,
  ): Promise<PreflightReport> {
    const { store, config, clock } = this.deps;
    const now = clock.now();
    const options = input.options ?? {};

    const valid: BatchContactInput[] = [];
    const invalid: InvalidContact[] = [];
    const rules = new ContactRules(now, await defaultCountryOf(this.deps, userId));
    for (let start = 0; start < input.contacts.length; start += PREFLIGHT_CHUNK) {
      if (start > 0) await nextTurn();
      const end = Math.min(start + PREFLIGHT_CHUNK, input.contacts.length);
      for (let index = start; index < end; index++) {
        const contact = input.contacts[index];
        const schemaProblems = checkSchema(contact);
        const judged = schemaProblems ? null : rules.judge(contact as BatchContactInput);
        const problems = schemaProblems ?? judged?.problems ?? [];
        if (judged && problems.length === 0) {
          valid.push(judged.contact);
          continue;
        }
        const reason = problems
          .map(({ field, message }) => `contacts.${index}${field ? `.${field}` : ''} ${message}`)
          .join('; ');
        invalid.push({ index, phoneNumber: phoneOf(contact), reason });
      }
    }

    // The batch-wide rules, as POST applies them to the contacts that pass. A request-level 400
    // (an unknown timezone, a bad window or webhook URL, a start in the past) is this request's
    // 400 too; what depends on the account (the agent, the credit) is reported.
    let refusal: AppError | null = null;
    try {
      await this.batches.accept(userId, { ...input, contacts: valid }, null);
    } catch (error) {
      const reported = error instanceof AppError && ACCOUNT_REFUSALS.has(error.code);
      if (!reported) throw error;
      refusal = error;
    }
    // Checked by accept above (a bad window is this request's 400): read here, never refused.
    const window = readCallingWindow(options.callingWindow);
    const timezone = options.timezone ?? 'UTC';

    const { distinct, duplicates } = distinctContacts(valid);
    const consented = options.requireConsent ? distinct.filter((contact) => hasConsent(contact)) : distinct;
    const suppressedNumbers = await this.suppressedAmong(
      userId,
      consented.map((contact) => contact.phoneNumber),
    );
    const dialable = consented.filter((contact) => !suppressedNumbers.has(contact.phoneNumber));
    const outsideWindowNow = window ? await countOutsideWindow(dialable, window, timezone, now) : 0;

    const availableMinutes = (await store.users.availableMinutes(userId)) ?? 0;

    if (invalid.length > 0) {
      // The schema refuses before anything else is looked at, and so would POST.
      const first = invalid[0]?.reason ?? '';
      const more = invalid.length - 1;
      refusal = new AppError('INVALID_REQUEST', more > 0 ? `${first} (and ${more} more)` : first);
    } else if (valid.length === 0) {
      refusal = new AppError('INVALID_REQUEST', 'contacts must NOT have fewer than 1 items');
    }
    return {
      total: input.contacts.length,
      valid: valid.length,
      invalid,
      duplicates,
      suppressed: suppressedNumbers.size,
      outsideWindowNow,
      withoutConsent: distinct.length - consented.length,
      estimatedMinutes: estimateMinutes(distinct.length, config.estimatedMinutesPerCall),
      availableMinutes,
      wouldBeAccepted: refusal === null,
      refusal,
    };
  }

  /** Which of these numbers are on the user's suppression list. */
  private async suppressedAmong(userId: string, phones: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let start = 0; start < phones.length; start += SUPPRESSION_LOOKUP) {
      const slice = phones.slice(start, start + SUPPRESSION_LOOKUP);
      for (const phone of await suppressedAmong(this.deps.store, userId, slice)) found.add(phone);
      await nextTurn();
    }
    return found;
  }
}

/**
 * The rules of one contact that its schema cannot state, each from its owner, in the words a 400
 * uses: a consent obtained in the future (consent.ts), a time zone this runtime does not know
 * (calling-window.ts). A zone is looked up once: building an Intl.DateTimeFormat costs ~200 µs,
 * 20 s over 100,000 contacts, while a batch names a handful of zones.
 */
class ContactRules {
  private readonly zones = new Map<string, boolean>();
  constructor(
    private readonly now: Date,
    private readonly country: CountryCode,
  ) {}

  /**
   * What is wrong with the contact, and the contact with its number in E.164 (the one
   * phone-number rule, domain/phone.ts) when nothing is.
   */
  judge(contact: BatchContactInput): { problems: ContactProblem[]; contact: BatchContactInput } {
    const problems = this.problems(contact);
    const reading = normalizePhone(contact.phoneNumber, this.country);
    if (!reading.ok) problems.push({ field: 'phoneNumber', message: reading.reason });
    if (!reading.ok) return { problems, contact };
    const read =
      reading.number === contact.phoneNumber ? contact : { ...contact, phoneNumber: reading.number };
    return { problems, contact: markPhoneRead(read) };
  }

  private problems(contact: BatchContactInput): ContactProblem[] {
    const found: ContactProblem[] = [];
    if (contact.consent) {
      const problem = consentError(contact.consent, this.now);
      if (problem) found.push({ field: `consent.${problem.field}`, message: problem.message });
    }
    const zone = contact.timezone;
    if (zone !== undefined) {
      let known = this.zones.get(zone);
      if (known === undefined) {
        known = isContactZone(zone);
        this.zones.set(zone, known);
      }
      if (!known)
        found.push({ field: 'timezone', message: 'must be an IANA time zone such as America/Chicago' });
    }
    return found;
  }
}

function phoneOf(contact: unknown): string | null {
  if (typeof contact !== 'object' || contact === null) return null;
  const phone = (contact as { phoneNumber?: unknown }).phoneNumber;
  return typeof phone === 'string' ? phone.slice(0, 64) : null;
}

/**
 * Contacts whose calling window is closed at `now`, each read in its own zone. Whether a window is
 * open depends only on the zone, so each zone is computed once: 100,000 contacts over a few dozen
 * zones cost a few dozen luxon evaluations, not 100,000.
 */
async function countOutsideWindow(
  contacts: Array<BatchContactInput & { timezone?: string }>,
  window: CallingWindow,
  batchTimezone: string,
  now: Date,
): Promise<number> {
  const closedByZone = new Map<string, boolean>();
  let outside = 0;
  for (let start = 0; start < contacts.length; start += PREFLIGHT_CHUNK) {
    if (start > 0) await nextTurn();
    for (const contact of contacts.slice(start, start + PREFLIGHT_CHUNK)) {
      const zone = contactZone(contact.timezone ?? null, contact.phoneNumber, batchTimezone);
      let closed = closedByZone.get(zone);
      if (closed === undefined) {
        closed = nextCallableAt(window, zone, now).getTime() > now.getTime();
        closedByZone.set(zone, closed);
      }
      if (closed) outside++;
    }
  }
  return outside;
}
