import { sql } from 'kysely';
import { type Db, json } from '../adapters/postgres/database.js';
import {
  type BatchStatus,
  CANCELLABLE_BATCH_STATUSES,
  DEFAULT_RETRY,
  estimateMinutes,
  isCancellable,
  isValidTimeZone,
  parseScheduledStart,
} from '../domain/batch.js';
import { type BatchContactInput, distinctContacts } from '../domain/contacts.js';
import { AppError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { representableInstant } from '../domain/input.js';
import type { Deps } from './deps.js';
import { assertWebhookUrls, queueWebhook } from './webhooks.js';

export interface BatchOptionsInput {
  priority?: number;
  scheduledStartTime?: string;
  timezone?: string;
  maxCallsPerSecond?: number;
  retryStrategy?: { maxAttempts?: number; noAnswerDelay?: number; busyDelay?: number };
  webhooks?: { onBatchComplete?: string; onCallComplete?: string; onBatchFailed?: string };
  tags?: string[];
}

export interface BatchCreateInput {
  agentId: string;
  userId: string;
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

/**
 * How long an ingesting process holds a batch before another may take the ingestion over. It is
 * renewed by every chunk (a chunk takes well under a second), and a takeover while the holder is
 * merely slow is harmless because every write is idempotent.
 */
export const INGEST_LEASE_MS = 10_000;
/** Contacts written per transaction: big enough for throughput, small enough to resume cheaply. */
export const INGEST_CHUNK = 5_000;

export type IngestStarter = (batchId: string, contacts: BatchContactInput[]) => void;

export class BatchService {
  private ingestStarter: IngestStarter | null = null;

  constructor(private readonly deps: Deps) {}

  /** The in-process ingester that picks a batch up right after its 202. */
  onAccepted(starter: IngestStarter): void {
    this.ingestStarter = starter;
  }

  /**
   * Accepts a batch: checks everything that can be refused, then records the batch and the
   * request body in one transaction, and only then answers. Ingestion runs in the background.
   */
  async accept(userId: string, input: BatchCreateInput, rawBody: string): Promise<BatchAccepted> {
    const { db, config, clock } = this.deps;
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

    const agent = await db
      .selectFrom('agents')
      .select(['id', 'is_active'])
      .where('id', '=', input.agentId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    if (!agent?.is_active) {
      throw new AppError(
        'AGENT_NOT_FOUND',
        `Agent ${input.agentId} does not exist, is inactive or is not yours`,
      );
    }

    const { distinct, duplicates } = distinctContacts(input.contacts);
    const needed = estimateMinutes(distinct.length, config.estimatedMinutesPerCall);
    const user = await db
      .selectFrom('users')
      .select('available_minutes')
      .where('id', '=', userId)
      .executeTakeFirst();
    const available = user?.available_minutes ?? 0;
    if (needed > available) {
      throw new AppError(
        'INSUFFICIENT_CREDITS',
        `This batch needs an estimated ${needed} minutes; ${available} available`,
        { estimatedMinutesRequired: needed, availableMinutes: available },
      );
    }

    const retry = options.retryStrategy ?? {};
    const batchId = newId('bat', now.getTime());
    await db.transaction().execute(async (trx) => {
      await trx
        .insertInto('batches')
        .values({
          id: batchId,
          user_id: userId,
          agent_id: agent.id,
          name: input.name ?? 'Unknown',
          status: 'ingesting',
          priority: options.priority ?? 5,
          max_calls_per_second: options.maxCallsPerSecond ?? 10,
          max_attempts: retry.maxAttempts ?? DEFAULT_RETRY.maxAttempts,
          no_answer_delay_ms: retry.noAnswerDelay ?? DEFAULT_RETRY.noAnswerDelayMs,
          busy_delay_ms: retry.busyDelay ?? DEFAULT_RETRY.busyDelayMs,
          timezone,
          scheduled_start_at: scheduledStart,
          tags: options.tags ?? [],
          webhooks: json(options.webhooks ?? null),
          submitted: input.contacts.length,
          total: distinct.length,
          duplicates,
          ingest_lease_until: new Date(now.getTime() + INGEST_LEASE_MS),
          ingest_passes: 1,
          created_at: now,
          updated_at: now,
        })
        .execute();
      await trx.insertInto('batch_payloads').values({ batch_id: batchId, body: rawBody }).execute();
    });

    this.ingestStarter?.(batchId, distinct);
    const duplicateNote =
      duplicates > 0
        ? `; ${duplicates} duplicate phone number${duplicates === 1 ? '' : 's'} will be dialed once`
        : '';
    const when = scheduledStart ? ` and dialed from ${scheduledStart.toISOString()}` : '';
    return {
      success: true,
      batchId,
      status: 'ingesting',
      message: `Batch accepted: ${distinct.length} contact${distinct.length === 1 ? '' : 's'} will be ingested in the background${when}${duplicateNote}`,
      links: {
        status: `${config.publicUrl}/api/v1/batch/${batchId}/status`,
        dashboard: `${config.publicUrl}/dashboard/batches/${batchId}`,
      },
    };
  }

  /**
   * Cancels a batch that has not finished: queued contacts leave the queue (and contacts not yet
   * ingested are never queued); calls already up finish and are recorded.
   */
  async cancel(userId: string, batchId: string) {
    const { db, clock } = this.deps;
    return db.transaction().execute(async (trx) => {
      const batch = await trx
        .selectFrom('batches')
        .select(['id', 'status', 'total', 'ingested'])
        .where('id', '=', batchId)
        .where('user_id', '=', userId)
        .forUpdate()
        .executeTakeFirst();
      if (!batch) throw new AppError('NOT_FOUND');
      if (!isCancellable(batch.status)) {
        throw new AppError(
          'BATCH_NOT_CANCELLABLE',
          `Batch ${batchId} is ${batch.status} and cannot be cancelled`,
        );
      }
      const removed = await trx
        .updateTable('batch_contacts')
        .set({ state: 'cancelled', lease_until: null })
        .where('batch_id', '=', batchId)
        .where('state', '=', 'queued')
        .executeTakeFirst();
      const notIngested = batch.status === 'ingesting' ? batch.total - batch.ingested : 0;
      const cancelledJobs = Number(removed.numUpdatedRows) + notIngested;
      const now = clock.now();
      await trx
        .updateTable('batches')
        .set({ status: 'cancelled', cancelled_jobs: cancelledJobs, completed_at: now, updated_at: now })
        .where('id', '=', batchId)
        .execute();
      await trx.deleteFrom('batch_payloads').where('batch_id', '=', batchId).execute();
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
   * Marks a batch failed (the user's minutes ran out, or its contacts could not be ingested):
   * nothing queued is dialed any more, and contacts not yet ingested never will be.
   */
  async fail(
    batchId: string,
    code: string,
    error: string,
    /** Checked first, in the failing transaction: the batch fails only when it holds. */
    stillHolds?: (trx: Db) => Promise<boolean>,
  ): Promise<boolean> {
    const { db, clock } = this.deps;
    return db.transaction().execute(async (trx) => {
      if (stillHolds && !(await stillHolds(trx))) return false;
      const now = clock.now();
      const updated = await trx
        .updateTable('batches')
        .set({
          status: 'failed',
          error_code: code,
          error,
          completed_at: now,
          updated_at: now,
          ingest_lease_until: null,
        })
        .where('id', '=', batchId)
        .where('status', 'in', CANCELLABLE_BATCH_STATUSES)
        .returning(['user_id', 'agent_id', 'webhooks', 'total', 'ingested'])
        .executeTakeFirst();
      if (!updated) return false;
      const url = updated.webhooks?.onBatchFailed;
      if (url) {
        await queueWebhook(trx, {
          userId: updated.user_id,
          url,
          payload: {
            event: 'batch.failed',
            batchId,
            agentId: updated.agent_id,
            error,
            code,
            timestamp: now.toISOString(),
          },
          batchId,
          now,
        });
      }
      const removed = await trx
        .updateTable('batch_contacts')
        .set({ state: 'cancelled', lease_until: null })
        .where('batch_id', '=', batchId)
        .where('state', '=', 'queued')
        .executeTakeFirst();
      // Once ingested, `ingested` equals `total`; before, the rest were never queued.
      const neverQueued = updated.total - updated.ingested;
      await trx
        .updateTable('batches')
        .set({ cancelled_jobs: sql`cancelled_jobs + ${Number(removed.numUpdatedRows) + neverQueued}` })
        .where('id', '=', batchId)
        .execute();
      await trx.deleteFrom('batch_payloads').where('batch_id', '=', batchId).execute();
      return true;
    });
  }
}
