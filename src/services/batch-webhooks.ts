import { type BatchStatus, batchRatios } from '../domain/batch.js';
import type { BatchCancelledPayload, BatchCompletedPayload, BatchStatusPayload } from '../domain/webhooks.js';
import type { Repos } from '../store/index.js';
import type { BatchTransition, CompletedBatch, PauseCause, WebhookBatch } from './batch-lifecycle.js';
import { queueWebhook } from './webhooks.js';

/**
 * The webhook of a batch's status change, queued in the transaction that makes it (the
 * `batch-webhook` reaction, wired in src/wiring/subscribers.ts): batch.paused, .resumed and
 * .cancelled to onBatchEvent, else onBatchComplete; batch.failed to onBatchFailed; batch.completed
 * to onBatchComplete. The end of ingestion has none.
 */
export async function queueBatchWebhook(transition: BatchTransition): Promise<void> {
  const { tx, now } = transition;
  switch (transition.cause) {
    case 'ingested':
    case 'claim':
      return;
    case 'pause':
      return queueStatusWebhook(
        tx,
        transition.batch,
        now,
        statusPayload(transition.batch, 'batch.paused', transition.to, transition.pause, now),
      );
    case 'resume':
      return queueStatusWebhook(
        tx,
        transition.batch,
        now,
        statusPayload(transition.batch, 'batch.resumed', transition.to, transition.after, now),
      );
    case 'cancel': {
      const { batch } = transition;
      return queueStatusWebhook(tx, batch, now, {
        event: 'batch.cancelled',
        batchId: batch.id,
        agentId: batch.agent_id,
        userId: batch.user_id,
        status: 'cancelled',
        cancelledJobs: transition.cancelledJobs,
        timestamp: now.toISOString(),
      });
    }
    case 'fail':
      return queueFailedWebhook(tx, transition.batch, transition.failure, now);
    case 'finish':
      return queueCompletedWebhook(tx, transition.batch, now);
    default: {
      const unknown: never = transition;
      throw new Error(`no webhook rule for ${JSON.stringify(unknown)}`);
    }
  }
}

function statusPayload(
  batch: WebhookBatch,
  event: BatchStatusPayload['event'],
  status: BatchStatus,
  pause: PauseCause,
  now: Date,
): BatchStatusPayload {
  return {
    event,
    batchId: batch.id,
    agentId: batch.agent_id,
    userId: batch.user_id,
    status: status as BatchStatusPayload['status'],
    pauseReason: pause.reason,
    dependency: pause.dependency,
    timestamp: now.toISOString(),
  };
}

/** A change of the batch's state the user made: to onBatchEvent, else onBatchComplete. */
async function queueStatusWebhook(
  repos: Repos,
  batch: WebhookBatch,
  now: Date,
  payload: BatchStatusPayload | BatchCancelledPayload,
): Promise<void> {
  const url = batch.webhooks?.onBatchEvent ?? batch.webhooks?.onBatchComplete;
  if (!url) return;
  await queueWebhook(repos, { userId: batch.user_id, url, payload, batchId: batch.id, now });
}

/** A batch that failed: batch.failed to onBatchFailed. */
async function queueFailedWebhook(
  repos: Repos,
  batch: WebhookBatch,
  failure: { code: string; error: string },
  now: Date,
): Promise<void> {
  const url = batch.webhooks?.onBatchFailed;
  if (!url) return;
  await queueWebhook(repos, {
    userId: batch.user_id,
    url,
    payload: {
      event: 'batch.failed',
      batchId: batch.id,
      agentId: batch.agent_id,
      error: failure.error,
      code: failure.code,
      timestamp: now.toISOString(),
    },
    batchId: batch.id,
    now,
  });
}

/** The batch whose last contact finished: batch.completed, with its statistics, to onBatchComplete. */
async function queueCompletedWebhook(repos: Repos, batch: CompletedBatch, now: Date): Promise<void> {
  const url = batch.webhooks?.onBatchComplete;
  if (!url) return;
  await queueWebhook(repos, {
    userId: batch.user_id,
    url,
    payload: completedPayload(batch, now),
    batchId: batch.id,
    now,
  });
}

/** The columns batch.completed reports. */

function completedPayload(batch: CompletedBatch, now: Date): BatchCompletedPayload {
  return {
    event: 'batch.completed',
    batchId: batch.id,
    agentId: batch.agent_id,
    userId: batch.user_id,
    statistics: {
      total: batch.total,
      processed: batch.processed,
      succeeded: batch.succeeded,
      failed: batch.failed,
      ...batchRatios(batch),
    },
    timestamps: {
      createdAt: batch.created_at.toISOString(),
      startedAt: batch.started_at?.toISOString() ?? null,
      completedAt: now.toISOString(),
    },
  };
}
