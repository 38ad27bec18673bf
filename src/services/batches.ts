import { setImmediate as nextTurn } from 'node:timers/promises';
import type { CallingWindow, PauseReason } from '../domain/batch.js';
import {
  type BatchStatus,
  DEFAULT_RETRY,
  estimateMinutes,
  isValidTimeZone,
  parseScheduledStart,
} from '../domain/batch.js';
import { canBatch, isActiveBatch } from '../domain/batch-lifecycle.js';
import { isContactZone, parseCallingWindow, windowToRow } from '../domain/calling-window.js';
import { consentError } from '../domain/consent.js';
import { type BatchContactInput, distinctContacts } from '../domain/contacts.js';
import { AppError, fieldError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { representableInstant } from '../domain/input.js';
import { type CountryCode, normalizePhone } from '../domain/phone.js';
import type { Repos } from '../store/index.js';
import { type BatchLifecycle, OPERATOR_PAUSE, type PauseCause } from './batch-lifecycle.js';
import type { Deps } from './deps.js';
import { defaultCountryOf, phoneWasRead } from './phone-numbers.js';
import { assertWebhookUrls } from './webhooks.js';

export interface BatchOptionsInput {
  priority?: number;
  scheduledStartTime?: string;
  timezone?: string;
  maxCallsPerSecond?: number;
  retryStrategy?: {
    maxAttempts?: number;
    noAnswerDelay?: number;
    busyDelay?: number;
    /** Call a contact again after a VOICEMAIL outcome (issue 24); default false. */
    retryOnVoicemail?: boolean;
  };
  webhooks?: {
    onBatchComplete?: string;
    onCallComplete?: string;
    onBatchFailed?: string;
    onBatchEvent?: string;
    /** call.started and call.answered of the batch's calls. */
    onCallEvent?: string;
  };
  tags?: string[];
  requireConsent?: boolean;
  callingWindow?: unknown;
}

export interface BatchCreateInput {
  agentId: string;
  /** Optional: the API key names the user; the route refuses any other user before this is called. */
  userId?: string;
  name?: string;
  contacts: BatchContactInput[];
  options?: BatchOptionsInput;
}

export interface BatchAccepted {
  success: true;
  batchId: string;
  status: BatchStatus;
  message: string;
  links: { status: string; dashboard: string };
}

/** Contacts read between two turns of the event loop: about 25 ms of libphonenumber. */
const PHONE_CHUNK = 2000;

/**
 * Every contact's number read by the one phone-number rule (domain/phone.ts) in `country`: the
 * contacts with their numbers in E.164 (`changed` when one was written otherwise), or a 400 naming
 * each bad row with its sentence ("contacts.12.phoneNumber: row 12: 555-0123 is not a valid number
 * for US"). 100,000 numbers take about a second, so the event loop gets a turn between chunks.
 */
export async function contactsWithPhones(
  contacts: BatchContactInput[],
  country: CountryCode | null,
): Promise<{ contacts: BatchContactInput[]; changed: boolean }> {
  const fieldErrors: Record<string, string[]> = {};
  let first: string | null = null;
  let changed = false;
  const read: BatchContactInput[] = [];
  for (let index = 0; index < contacts.length; index++) {
    if (index > 0 && index % PHONE_CHUNK === 0) await nextTurn();
    const contact = contacts[index] as BatchContactInput;
    if (phoneWasRead(contact)) {
      read.push(contact);
      continue;
    }
    const reading = normalizePhone(contact.phoneNumber, country);
    if (!reading.ok) {
      const field = `contacts.${index}.phoneNumber`;
      fieldErrors[field] = [`row ${index}: ${reading.reason}`];
      first ??= `${field}: row ${index}: ${reading.reason}`;
      read.push(contact);
    } else if (reading.number !== contact.phoneNumber) {
      changed = true;
      read.push({ ...contact, phoneNumber: reading.number });
    } else {
      read.push(contact);
    }
  }
  if (first !== null) {
    const more = Object.keys(fieldErrors).length - 1;
    throw new AppError('INVALID_REQUEST', more > 0 ? `${first} (and ${more} more)` : first, { fieldErrors });
  }
  return { contacts: read, changed };
}

/** Contacts' consent records the schema cannot judge (an obtainedAt in the future): a 400 naming each. */
function assertConsents(contacts: BatchContactInput[], now: Date): void {
  const fieldErrors: Record<string, string[]> = {};
  let first: string | null = null;
  contacts.forEach((contact, index) => {
    if (!contact.consent) return;
    const problem = consentError(contact.consent, now);
    if (!problem) return;
    const field = `contacts.${index}.consent.${problem.field}`;
    fieldErrors[field] = [problem.message];
    first ??= `${field} ${problem.message}`;
  });
  if (first === null) return;
  const more = Object.keys(fieldErrors).length - 1;
  throw new AppError('INVALID_REQUEST', more > 0 ? `${first} (and ${more} more)` : first, { fieldErrors });
}

/**
 * The batch's `options.callingWindow`, or null when it has none; a 400 naming each bad field
 * (the times' shape is also in the body schema; this owns "end after start" and the days).
 */
export function readCallingWindow(value: unknown): CallingWindow | null {
  if (value === undefined || value === null) return null;
  const parsed = parseCallingWindow(value);
  if ('window' in parsed) return parsed.window;
  const fieldErrors: Record<string, string[]> = {};
  for (const error of parsed.errors) {
    const field = `options.${error.split(/[ :]/, 1)[0]}`;
    fieldErrors[field] = [...(fieldErrors[field] ?? []), error.slice(error.indexOf(' ') + 1)];
  }
  throw new AppError('INVALID_REQUEST', `options.${parsed.errors[0]}`, { fieldErrors });
}

/** Contacts' own `timezone`s: each must be an IANA zone, else a 400 naming `contacts.<i>.timezone`. */
export function assertContactZones(contacts: BatchContactInput[]): void {
  // A 100,000-contact batch names a handful of zones: each is checked once.
  const known = new Map<string, boolean>();
  const fieldErrors: Record<string, string[]> = {};
  let first: string | null = null;
  contacts.forEach((contact, index) => {
    const zone = contact.timezone;
    if (zone === undefined) return;
    let ok = known.get(zone);
    if (ok === undefined) {
      ok = isContactZone(zone);
      known.set(zone, ok);
    }
    if (ok) return;
    const field = `contacts.${index}.timezone`;
    fieldErrors[field] = ['must be an IANA time zone such as America/Chicago'];
    first ??= `${field}: unknown time zone ${JSON.stringify(zone)}`;
  });
  if (first === null) return;
  const more = Object.keys(fieldErrors).length - 1;
  throw new AppError('INVALID_REQUEST', more > 0 ? `${first} (and ${more} more)` : first, { fieldErrors });
}

/**
 * How long an ingesting process holds a batch before another may take the ingestion over. It is
 * renewed by every chunk (a chunk takes well under a second), and a takeover while the holder is
 * merely slow is harmless because every write is idempotent.
 */
export const INGEST_LEASE_MS = 10_000;
/** Contacts written per transaction: big enough for throughput, small enough to resume cheaply. */
export const INGEST_CHUNK = 5_000;

/** The answer of a pause or a resume. */
export interface BatchStateChange {
  success: true;
  batchId: string;
  status: 'paused' | 'scheduled' | 'pending' | 'processing';
  message: string;
}

export type IngestStarter = (batchId: string, contacts: BatchContactInput[]) => void;

/**
 * The campaign's name as the dashboard and every read show it: trimmed, and 'Unknown' only when
 * none was given. A name of spaces alone would show as a blank link on the dashboard, so it is
 * refused like an empty one (the schema's minLength) instead of being stored.
 */
function batchName(given: string | undefined): string {
  if (given === undefined) return 'Unknown';
  const name = given.trim();
  if (name === '') throw fieldError('name', 'must not be blank');
  return name;
}

export class BatchService {
  private ingestStarter: IngestStarter | null = null;

  constructor(
    private readonly deps: Deps,
    private readonly lifecycle: Pick<
      BatchLifecycle,
      'cancelBatch' | 'pauseBatch' | 'resumeBatch' | 'failBatch' | 'holdForOperator'
    >,
  ) {}

  /** The in-process ingester that picks a batch up right after its 202. */
  onAccepted(starter: IngestStarter): void {
    this.ingestStarter = starter;
  }

  /**
   * Accepts a batch: checks everything that can be refused, then records the batch and the
   * request body in one transaction, and only then answers. Ingestion runs in the background.
   * With `rawBody` null it only checks (the preflight): every refusal is thrown just as a POST
   * would get it, nothing is written, and it returns null.
   */
  async accept(
    userId: string,
    input: BatchCreateInput,
    rawBody: string,
    /** Runs in the transaction that records the batch (the Idempotency-Key's record). */
    onCommit?: (repos: Repos, accepted: BatchAccepted) => Promise<void>,
  ): Promise<BatchAccepted>;
  async accept(userId: string, input: BatchCreateInput, rawBody: null): Promise<null>;
  async accept(
    userId: string,
    input: BatchCreateInput,
    rawBody: string | null,
    onCommit?: (repos: Repos, accepted: BatchAccepted) => Promise<void>,
  ): Promise<BatchAccepted | null> {
    const { store, config, clock } = this.deps;
    const name = batchName(input.name);
    const options = input.options ?? {};
    const timezone = options.timezone ?? 'UTC';
    if (!isValidTimeZone(timezone)) {
      throw new AppError('INVALID_REQUEST', `options.timezone: unknown time zone "${timezone}"`, {
        fieldErrors: { 'options.timezone': ['must be an IANA time zone such as UTC or America/New_York'] },
      });
    }
    const hooks = options.webhooks ?? {};
    assertWebhookUrls(
      {
        'options.webhooks.onBatchComplete': hooks.onBatchComplete,
        'options.webhooks.onCallComplete': hooks.onCallComplete,
        'options.webhooks.onBatchFailed': hooks.onBatchFailed,
        'options.webhooks.onBatchEvent': hooks.onBatchEvent,
        'options.webhooks.onCallEvent': hooks.onCallEvent,
      },
      config.webhookAllowPrivate,
    );
    const now = clock.now();
    let scheduledStart: Date | null = null;
    if (options.scheduledStartTime !== undefined) {
      scheduledStart = parseScheduledStart(options.scheduledStartTime, timezone);
      if (!scheduledStart || !representableInstant(scheduledStart)) {
        throw new AppError('INVALID_REQUEST', 'options.scheduledStartTime is not a date-time', {
          fieldErrors: {
            'options.scheduledStartTime': ['must be an ISO 8601 date-time between the years 1970 and 9999'],
          },
        });
      }
      if (scheduledStart.getTime() <= now.getTime()) throw new AppError('SCHEDULE_IN_PAST');
    }
    const { contacts, changed } = await contactsWithPhones(
      input.contacts,
      await defaultCountryOf(this.deps, userId),
    );
    assertConsents(contacts, now);
    const callingWindow = readCallingWindow(options.callingWindow);
    assertContactZones(contacts);

    const agent = await store.agents.activeForUser(userId, input.agentId);
    if (!agent?.is_active) {
      throw new AppError(
        'AGENT_NOT_FOUND',
        `Agent ${input.agentId} does not exist, is inactive or is not yours`,
      );
    }

    const { distinct, duplicates } = distinctContacts(contacts);
    const needed = estimateMinutes(distinct.length, config.estimatedMinutesPerCall);
    const available = (await store.users.availableMinutes(userId)) ?? 0;
    if (needed > available) {
      throw new AppError(
        'INSUFFICIENT_CREDITS',
        `This batch needs an estimated ${needed} minutes; ${available} available`,
        { estimatedMinutesRequired: needed, availableMinutes: available },
      );
    }
    if (rawBody === null) return null;

    const retry = options.retryStrategy ?? {};
    const batchId = newId('bat', now.getTime());
    const duplicateNote =
      duplicates > 0
        ? `; ${duplicates} duplicate phone number${duplicates === 1 ? '' : 's'} will be dialed once`
        : '';
    const when = scheduledStart ? ` and dialed from ${scheduledStart.toISOString()}` : '';
    const accepted: BatchAccepted = {
      success: true,
      batchId,
      status: 'ingesting',
      message: `Batch accepted: ${distinct.length} contact${distinct.length === 1 ? '' : 's'} will be ingested in the background${when}${duplicateNote}`,
      links: {
        status: `${config.publicUrl}/api/v1/batch/${batchId}/status`,
        dashboard: `${config.publicUrl}/dashboard/batches/${batchId}`,
      },
    };
    await store.tx(async (repos) => {
      await repos.batches.insert({
        id: batchId,
        user_id: userId,
        agent_id: agent.id,
        name,
        status: 'ingesting',
        priority: options.priority ?? 5,
        max_calls_per_second: options.maxCallsPerSecond ?? 10,
        max_attempts: retry.maxAttempts ?? DEFAULT_RETRY.maxAttempts,
        no_answer_delay_ms: retry.noAnswerDelay ?? DEFAULT_RETRY.noAnswerDelayMs,
        busy_delay_ms: retry.busyDelay ?? DEFAULT_RETRY.busyDelayMs,
        retry_on_voicemail: retry.retryOnVoicemail ?? DEFAULT_RETRY.retryOnVoicemail,
        timezone,
        scheduled_start_at: scheduledStart,
        tags: options.tags ?? [],
        require_consent: options.requireConsent ?? false,
        calling_window: windowToRow(callingWindow),
        webhooks: options.webhooks ?? null,
        submitted: input.contacts.length,
        total: distinct.length,
        duplicates,
        ingest_lease_until: new Date(now.getTime() + INGEST_LEASE_MS),
        ingest_passes: 1,
        created_at: now,
        updated_at: now,
      });
      // Ingestion (and its recovery after a crash) reads the contacts from this body: when a number
      // was normalised, the stored body carries the E.164 form.
      await repos.batchPayloads.insert(batchId, changed ? JSON.stringify({ ...input, contacts }) : rawBody);
      await onCommit?.(repos, accepted);
    });

    this.ingestStarter?.(batchId, distinct);
    return accepted;
  }

  /**
   * Cancels a batch that has not finished: queued contacts leave the queue (and contacts not yet
   * ingested are never queued); calls already up finish and are recorded.
   */
  async cancel(userId: string, batchId: string) {
    const { store, clock } = this.deps;
    return store.tx(async (repos) => {
      const batch = await repos.batches.lockForUser(userId, batchId);
      if (!batch) throw new AppError('NOT_FOUND');
      if (!canBatch(batch.status, 'cancel')) {
        throw new AppError(
          'BATCH_NOT_CANCELLABLE',
          `Batch ${batchId} is ${batch.status} and cannot be cancelled`,
        );
      }
      const cancelledJobs = await this.lifecycle.cancelBatch(repos, batch, clock.now());
      await repos.batchPayloads.delete(batchId);
      return {
        success: true as const,
        batchId,
        status: 'cancelled' as const,
        cancelledJobs,
        message: `Batch cancelled: ${cancelledJobs} pending call${cancelledJobs === 1 ? '' : 's'} removed from the queue`,
      };
    });
  }

  /**
   * Pauses a batch that may still dial: no new call starts; calls already up finish and are
   * recorded (a retry they need is queued for after the resume). batch.paused goes to onBatchEvent,
   * else onBatchComplete.
   */
  async pause(userId: string, batchId: string): Promise<BatchStateChange> {
    return this.changeState(userId, batchId, 'pause');
  }

  /** Resumes a paused batch where it stopped; batch.resumed goes to onBatchEvent, else onBatchComplete. */
  async resume(userId: string, batchId: string): Promise<BatchStateChange> {
    return this.changeState(userId, batchId, 'resume');
  }

  private async changeState(
    userId: string,
    batchId: string,
    event: 'pause' | 'resume',
  ): Promise<BatchStateChange> {
    const { store, clock } = this.deps;
    return store.tx(async (repos): Promise<BatchStateChange> => {
      const batch = await repos.batches.lockForUser(userId, batchId);
      if (!batch) throw new AppError('NOT_FOUND');
      const now = clock.now();
      // A batch a dependency paused, paused again by its operator: it stays paused, now for the
      // operator, and the dependency's recovery no longer resumes it.
      if (event === 'pause' && batch.status === 'paused' && batch.pause_reason === 'dependency-unavailable') {
        await this.lifecycle.holdForOperator(repos, batch, now);
        return {
          success: true as const,
          batchId,
          status: 'paused',
          message:
            'Batch paused by its operator: it no longer resumes on its own when its dependency recovers',
        };
      }
      if (!canBatch(batch.status, event)) {
        throw event === 'pause'
          ? new AppError(
              'BATCH_NOT_PAUSABLE',
              batch.status === 'ingesting'
                ? `Batch ${batchId} is still ingesting its contacts; pause it once it is scheduled, pending or processing`
                : `Batch ${batchId} is ${batch.status} and cannot be paused`,
            )
          : new AppError('BATCH_NOT_PAUSED', `Batch ${batchId} is ${batch.status}, not paused`);
      }
      const status = (
        event === 'pause'
          ? await this.lifecycle.pauseBatch(repos, batch, now)
          : await this.lifecycle.resumeBatch(repos, batch, now, pauseOf(batch))
      ) as BatchStateChange['status'];
      return {
        success: true as const,
        batchId,
        status,
        message:
          event === 'pause'
            ? 'Batch paused: no new call starts; calls already up finish'
            : `Batch resumed: ${status}`,
      };
    });
  }

  /**
   * Pauses a batch that may still dial because a dependency its agent needs is unavailable (an
   * open breaker, services/breakers.ts): `batch.paused` with pauseReason dependency-unavailable.
   * False when the batch is no longer active (paused, cancelled or finished meanwhile).
   */
  async pauseForDependency(batchId: string, dependency: string): Promise<boolean> {
    const { store, clock } = this.deps;
    return store.tx(async (repos) => {
      const batch = await repos.batches.lock(batchId);
      if (!batch || !isActiveBatch(batch.status) || !canBatch(batch.status, 'pause')) return false;
      await this.lifecycle.pauseBatch(repos, batch, clock.now(), {
        reason: 'dependency-unavailable',
        dependency,
      });
      return true;
    });
  }

  /**
   * Resumes every batch the dependency `key` paused (its breaker closed after a probe answered):
   * `batch.resumed`, each where it stopped. A batch its operator paused meanwhile stays paused.
   * Returns the batches resumed.
   */
  async resumeForDependency(key: string): Promise<string[]> {
    const { store, clock } = this.deps;
    const resumed: string[] = [];
    for (const batchId of await store.batches.pausedFor(key)) {
      const done = await store.tx(async (repos) => {
        const batch = await repos.batches.lock(batchId);
        const stillOurs =
          batch?.status === 'paused' &&
          batch.pause_reason === 'dependency-unavailable' &&
          batch.paused_dependency === key;
        if (!batch || !stillOurs) return false;
        await this.lifecycle.resumeBatch(repos, batch, clock.now(), pauseOf(batch));
        return true;
      });
      if (done) resumed.push(batchId);
    }
    return resumed;
  }

  /**
   * Marks a batch failed (the user's minutes ran out, or its contacts could not be ingested):
   * nothing queued is dialed any more, and contacts not yet ingested never will be.
   */
  async fail(
    batchId: string,
    code: string,
    error: string,
    /** Checked first, in the failing transaction: the batch fails only when it holds. */
    stillHolds?: (repos: Repos) => Promise<boolean>,
  ): Promise<boolean> {
    const { store, clock } = this.deps;
    return store.tx(async (repos) => {
      if (stillHolds && !(await stillHolds(repos))) return false;
      if (!(await this.lifecycle.failBatch(repos, batchId, { code, error }, clock.now()))) return false;
      await repos.batchPayloads.delete(batchId);
      return true;
    });
  }
}

/** The pause a resume ends, as the batch row keeps it. */
function pauseOf(batch: { pause_reason: PauseReason | null; paused_dependency: string | null }): PauseCause {
  return batch.pause_reason === 'dependency-unavailable'
    ? { reason: 'dependency-unavailable', dependency: batch.paused_dependency }
    : OPERATOR_PAUSE;
}
