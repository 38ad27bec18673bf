import { type BatchStatus, batchRatios, type PauseReason } from '../domain/batch.js';
import { isFinalBatch } from '../domain/batch-lifecycle.js';
import type { CallStatus } from '../domain/call.js';
import { AppError } from '../domain/errors.js';
import { type BatchThrottle, batchThrottle } from '../domain/throttle.js';
import type { LiveCallStatus } from '../ports.js';
import { callLoad } from './call-load.js';
import type { CallReads } from './calls/reads.js';
import type { Deps } from './deps.js';
import type { RecordingLinks } from './recording-links.js';

export interface BatchStatistics {
  batchId: string;
  name: string;
  status: BatchStatus;
  priority: number;
  statistics: {
    total: number;
    processed: number;
    succeeded: number;
    failed: number;
    pending: number;
    percentComplete: number;
    successRate: number;
    duplicates: number;
    cancelled: number;
    /** Contacts skipped (never dialed) for want of a consent record under requireConsent. */
    withoutConsent: number;
    /** Contacts never dialed because their number is on the user's suppression list (final). */
    suppressed: number;
    /** Queued contacts outside their calling window, waiting for it to open (issue 15). */
    waitingForWindow: number;
  };
  performance: {
    callsPerSecond: number;
    /** Calls started in the last EFFECTIVE_RATE_WINDOW_MS, per second: the rate the batch dials at now. */
    effectiveCallsPerSecond: number;
    estimatedTimeRemaining: number | null;
    elapsedTime: number;
  };
  /** Why the batch dials below its configured rate; null when nothing holds it (issue 24 §5). */
  throttle: BatchThrottle | null;
  /** Why a paused batch is paused: its operator, or a dependency (issue 24 §3); null when it is not paused. */
  pauseReason: PauseReason | null;
  /** With `dependency-unavailable`: the breaker key of the dependency (e.g. `llm:http://…/v1`). */
  pausedDependency: string | null;
  timestamps: {
    createdAt: string;
    startedAt: string | null;
    completedAt: string | null;
    scheduledStartTime: string | null;
  };
  recentCalls: Array<{
    id: string;
    callSid: string;
    status: CallStatus;
    duration: number | null;
    createdAt: string;
    phoneNumber: string;
    contactName: string;
  }>;
  webhooks: Record<string, string> | null;
  agentId: string;
  userId: string;
  tags: string[];
  error: { code: string | null; message: string } | null;
}

export interface BatchListItem {
  batchId: string;
  name: string;
  status: BatchStatus;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  percentComplete: number;
  createdAt: string;
  agentId: string;
  priority: number;
  tags: string[];
}

/** Window over which check-status reports the observed call rate. */
const RATE_WINDOW_MS = 60_000;
/**
 * Window of `effectiveCallsPerSecond`: 10 s, short enough to show a campaign held by its places
 * within seconds of it filling them (the 60 s figure takes a minute to fall), long enough to hold
 * 100 starts at the default 10 calls/s so one late timer moves it by 1%.
 */
const EFFECTIVE_RATE_WINDOW_MS = 10_000;
/**
 * A claimed call still unsent this long after its slot is held by its trunk: the dispatcher's own
 * start check delays a call by a second at most (its window guard), and a busy event loop adds less.
 */
const TRUNK_HELD_AFTER_MS = 2_000;

const round2 = (value: number) => Math.round(value * 100) / 100;

const snapshotKey = (userId: string, batchId: string, limit: number | null) =>
  `${userId}\u0000${batchId}\u0000${limit ?? 'all'}`;

/** How many of a batch's latest ended calls give the typical call length (about 2 s of reading at most). */
const CALL_LENGTH_SAMPLE = 100;

interface CallsUp {
  /** Calls of the batch still up (dialing, ringing or talking). */
  live: number;
  /** When the latest of them was dialed. */
  youngest: Date | null;
  /** Mean dial-to-end length of the batch's latest ended calls; null before any ended. */
  meanMs: number | null;
  /** Calls claimed past their slot and not sent: held by their SIP trunk's caps. */
  held: number;
}

/** A batch's queued contacts whose next attempt (a retry) is due later, and the last one's due time. */
interface RetriesWaiting {
  count: number;
  lastDueAt: Date | null;
}

/**
 * The time left of a running batch, in ms, the longest of: the contacts due to be dialed at the
 * observed rate plus one call's length; the last retry's due time plus its dial and one call's
 * length (a batch whose contacts all wait on a one-hour retry read "32 s" before, issue 24); and
 * while calls are up, until the latest of them is expected to end. Contacts whose call is still up
 * count as processed only when it ends, so without the calls' length a batch whose last calls talk
 * for minutes read "0 s" that long. Never 0 while a call is up (at least 1 s), null when nothing is
 * left, waiting or up.
 */
export function timeLeft(
  remaining: number,
  rate: number,
  calls: CallsUp | null,
  retries: RetriesWaiting,
  now: Date,
  config: Pick<Deps['config'], 'estimatedMinutesPerCall'>,
): number | null {
  const live = calls?.live ?? 0;
  const callMs = calls?.meanMs ?? config.estimatedMinutesPerCall * 60_000;
  const toDial = Math.max(remaining - live - retries.count, 0);
  let left = toDial > 0 ? (toDial / rate) * 1000 + callMs : 0;
  if (retries.count > 0 && retries.lastDueAt) {
    left = Math.max(left, retries.lastDueAt.getTime() - now.getTime() + 1000 / rate + callMs);
  }
  if (live > 0) {
    const age = calls?.youngest ? now.getTime() - calls.youngest.getTime() : 0;
    left = Math.max(left, callMs - age, 1000);
  }
  return left > 0 ? Math.round(left) : null;
}

/** How old a check-status snapshot may be. */
const STATS_FRESH_MS = 250;

export class BatchReads {
  private readonly snapshots = new Map<
    string,
    { at: number; batchId: string; value: Promise<BatchStatistics>; json: string | null }
  >();
  constructor(
    private readonly deps: Deps,
    private readonly calls: Pick<CallReads, 'liveCallsOfBatch'>,
    private readonly links: RecordingLinks,
  ) {}

  /** The persistent view (`GET /api/v1/batch/check-status` and `links.status`). `limit` null = all calls. */
  /**
   * check-status, answered from a snapshot at most STATS_FRESH_MS old: a campaign's counters move
   * every few milliseconds, so a dashboard or a client polling it loses nothing, and requests that
   * arrive together share one read instead of each running three queries. A status change made in
   * this process forgets the snapshot once it commits (`batch-status-snapshot`, wiring/subscribers.ts).
   */
  checkStatus(userId: string, batchId: string, limit: number | null): Promise<BatchStatistics> {
    const key = snapshotKey(userId, batchId, limit);
    const now = Date.now();
    const cached = this.snapshots.get(key);
    if (cached && now - cached.at < STATS_FRESH_MS) return cached.value;
    if (this.snapshots.size > 2000) {
      for (const [k, entry] of this.snapshots) if (now - entry.at >= STATS_FRESH_MS) this.snapshots.delete(k);
    }
    const value = this.readStatus(userId, batchId, limit);
    this.snapshots.set(key, { at: now, batchId, value, json: null });
    value.catch(() => this.snapshots.delete(key));
    return value;
  }

  /** check-status as the JSON text of the reply, serialised once per snapshot. */
  async checkStatusJson(userId: string, batchId: string, limit: number | null): Promise<string> {
    const pending = this.checkStatus(userId, batchId, limit);
    const statistics = await pending;
    const snapshot = this.snapshots.get(snapshotKey(userId, batchId, limit));
    // Only the snapshot this answer came from keeps the text (a newer one may have replaced it).
    if (snapshot?.value !== pending) return JSON.stringify(statistics);
    snapshot.json ??= JSON.stringify(statistics);
    return snapshot.json;
  }

  /** Drops the snapshots of a batch (after a change its user expects to see at once). */
  forget(batchId: string): void {
    for (const [key, entry] of this.snapshots) if (entry.batchId === batchId) this.snapshots.delete(key);
  }

  /** The batch's calls still up, and how long its latest calls lasted (dial to end), for the time left. */
  private async callsUp(batchId: string, now: Date): Promise<CallsUp> {
    const slotBefore = new Date(now.getTime() - TRUNK_HELD_AFTER_MS);
    const row = await this.deps.store.calls.callsUp(batchId, CALL_LENGTH_SAMPLE, slotBefore);
    return {
      live: row?.live ?? 0,
      held: row?.held ?? 0,
      youngest: row?.youngest ? new Date(row.youngest) : null,
      meanMs: row?.mean_ms === null || row?.mean_ms === undefined ? null : Number(row.mean_ms),
    };
  }

  private async readStatus(userId: string, batchId: string, limit: number | null): Promise<BatchStatistics> {
    const { store, clock } = this.deps;
    const batch = await store.batches.getForUser(userId, batchId);
    if (!batch) throw new AppError('NOT_FOUND');
    const now = clock.now();
    const finished = isFinalBatch(batch.status);
    const dialing = batch.status === 'processing' || batch.status === 'pending';
    const [recent, started, waits, calls, load] = await Promise.all([
      store.calls.recentOfBatch(batchId, limit),
      store.calls.startedSince(
        batchId,
        new Date(now.getTime() - RATE_WINDOW_MS),
        new Date(now.getTime() - EFFECTIVE_RATE_WINDOW_MS),
        now,
      ),
      finished ? null : store.batchContacts.queueWaits(batchId, now),
      finished ? null : this.callsUp(batchId, now),
      // The user's places, for the throttle: one statement, only while the batch dials.
      dialing ? callLoad(store, batch.user_id, { lock: false }) : null,
    ]);
    const pending = Math.max(
      batch.total -
        batch.processed -
        batch.skipped -
        (batch.status === 'cancelled' || batch.status === 'failed' ? batch.cancelled_jobs : 0) -
        batch.suppressed,
      0,
    );
    const startedAt = batch.started_at;
    const endAt = batch.completed_at ?? now;
    const elapsed = startedAt ? Math.max(endAt.getTime() - startedAt.getTime(), 0) : 0;
    // Observed over the last 60 s, or since the start when the batch has run for less than that.
    const windowMs = startedAt
      ? Math.min(RATE_WINDOW_MS, Math.max(now.getTime() - startedAt.getTime(), 1000))
      : RATE_WINDOW_MS;
    const callsPerSecond = round2(started.all / (windowMs / 1000));
    const effectiveMs = Math.min(windowMs, EFFECTIVE_RATE_WINDOW_MS);
    const effectiveCallsPerSecond = round2(started.recent / (effectiveMs / 1000));
    const remaining = batch.total - batch.processed;
    const rate = callsPerSecond > 0 ? callsPerSecond : batch.max_calls_per_second;
    return {
      batchId: batch.id,
      name: batch.name,
      status: batch.status,
      priority: batch.priority,
      statistics: {
        total: batch.total,
        processed: batch.processed,
        succeeded: batch.succeeded,
        failed: batch.failed,
        pending,
        ...batchRatios(batch),
        duplicates: batch.duplicates,
        cancelled: batch.cancelled_jobs,
        withoutConsent: batch.skipped,
        suppressed: batch.suppressed,
        waitingForWindow: waits?.waiting_for_window ?? 0,
      },
      performance: {
        callsPerSecond,
        effectiveCallsPerSecond,
        estimatedTimeRemaining: finished
          ? 0
          : timeLeft(
              remaining,
              rate,
              calls,
              { count: waits?.retrying ?? 0, lastDueAt: waits?.last_retry_at ?? null },
              now,
              this.deps.config,
            ),
        elapsedTime: elapsed,
      },
      throttle: batchThrottle({
        status: batch.status,
        pauseReason: batch.pause_reason,
        pausedDependency: batch.paused_dependency,
        dueNow: waits?.due_now ?? false,
        load,
        waitingForTrunk: calls?.held ?? 0,
        waitingForWindow: waits?.waiting_for_window ?? 0,
        nextOpening: waits?.next_opening ?? null,
      }),
      pauseReason: batch.status === 'paused' ? (batch.pause_reason ?? 'operator') : null,
      pausedDependency: batch.status === 'paused' ? batch.paused_dependency : null,
      timestamps: {
        createdAt: batch.created_at.toISOString(),
        startedAt: startedAt?.toISOString() ?? null,
        completedAt: batch.completed_at?.toISOString() ?? null,
        scheduledStartTime: batch.scheduled_start_at?.toISOString() ?? null,
      },
      recentCalls: recent.map((call) => ({
        id: call.id,
        callSid: call.id,
        status: call.status,
        duration: call.duration,
        createdAt: call.created_at.toISOString(),
        phoneNumber: call.phone_number,
        contactName: call.contact_name,
      })),
      webhooks: batch.webhooks,
      agentId: batch.agent_id,
      userId: batch.user_id,
      tags: batch.tags,
      error:
        batch.status === 'failed' ? { code: batch.error_code, message: batch.error ?? 'Batch failed' } : null,
    };
  }

  /**
   * The live view (`GET /api/v1/status/batch`): every call of the batch, from the cache, and from
   * the database for the calls the cache no longer holds (a restart on the memory cache, an
   * expired or flushed entry), as the live view of one call does.
   */
  async liveStatus(
    userId: string,
    batchId: string,
  ): Promise<{ batchId: string; calls: Omit<LiveCallStatus, 'contactId' | 'batchId'>[] }> {
    const batch = await this.deps.store.batches.nameForUser(userId, batchId);
    if (!batch) throw new AppError('NOT_FOUND');
    const entries = await this.calls.liveCallsOfBatch(userId, batchId);
    const calls = entries
      .sort((a, b) => (a.startTime < b.startTime ? 1 : a.startTime > b.startTime ? -1 : 0))
      .map((entry) => ({
        callId: entry.callId,
        status: entry.status,
        startTime: entry.startTime,
        phoneNumber: entry.phoneNumber,
        error: entry.error,
        duration: entry.duration,
        // The cached link was issued when the call ended: issue a fresh one.
        recordingUrl: this.links.url(entry.callId, entry.status, entry.duration),
      }));
    return { batchId, calls };
  }

  /**
   * The user's batches, newest first. `cursor` is the batchId of the last item of the previous
   * page (ids sort by creation time); `nextCursor` is null on the last page.
   */
  async list(
    userId: string,
    filters: { status?: BatchStatus; tag?: string; cursor?: string; limit: number },
  ): Promise<{ items: BatchListItem[]; nextCursor: string | null }> {
    let anchor: { id: string; created_at: Date } | null = null;
    if (filters.cursor) {
      anchor = (await this.deps.store.batches.position(userId, filters.cursor)) ?? null;
      if (!anchor) {
        throw new AppError('INVALID_REQUEST', 'cursor does not name one of your batches', {
          fieldErrors: { cursor: ['is not a batchId from a previous page'] },
        });
      }
    }
    const rows = await this.deps.store.batches.list(
      userId,
      {
        ...(filters.status ? { status: filters.status } : {}),
        ...(filters.tag ? { tag: filters.tag } : {}),
      },
      anchor,
      filters.limit + 1,
    );
    const page = rows.slice(0, filters.limit);
    return {
      items: page.map((row) => ({
        batchId: row.id,
        name: row.name,
        status: row.status,
        total: row.total,
        processed: row.processed,
        succeeded: row.succeeded,
        failed: row.failed,
        percentComplete: batchRatios(row).percentComplete,
        createdAt: row.created_at.toISOString(),
        agentId: row.agent_id,
        priority: row.priority,
        tags: row.tags,
      })),
      nextCursor: rows.length > filters.limit ? (page.at(-1)?.id ?? null) : null,
    };
  }
}
