import { type Dispatcher, request } from 'undici';
import { type AttemptResult, afterAttempt, signatureHeaders } from '../domain/webhooks.js';
import type { Deps } from '../services/deps.js';
import type { WebhookService } from '../services/webhooks.js';
import type { ClaimedDelivery, DeliveryOutcome } from '../store/webhook-deliveries.js';
import { assertDeliverableHost } from '../webhooks/address-guard.js';
import { describeHttpError } from '../webhooks/http-error.js';

export interface WebhookSenderOptions {
  deps: Deps;
  webhooks: WebhookService;
  /** The HTTP client: an undici Agent whose connect step refuses forbidden addresses. */
  http: Dispatcher;
  /** Deliveries in flight at once in this process. */
  concurrency: number;
  /** Milliseconds an attempt may take in all (connect, headers, body). */
  timeoutMs: number;
  userAgent: string;
}

/** A claim lasts the attempt's timeout plus this, then a row whose worker died falls due again. */
const LEASE_MARGIN_MS = 5_000;

/** How much of a receiver's answer is read (and kept, in part, as the error) before it is dropped. */
const MAX_ANSWER_BYTES = 64 * 1024;

/**
 * Sends queued webhooks. Each pass claims due rows with FOR UPDATE SKIP LOCKED and moves their due
 * time past the attempt's timeout: that is the lease, so any number of workers share the outbox and
 * a worker that dies mid-send leaves rows that fall due again. The result of each attempt is
 * written only if the row is still at the attempt it claimed.
 */
export class WebhookSender {
  private readonly inFlight = new Set<Promise<void>>();
  private readonly closing = new AbortController();
  private readonly outcomes: Array<{
    outcome: DeliveryOutcome;
    resolve: () => void;
    reject: (error: unknown) => void;
  }> = [];
  private writing = false;

  constructor(private readonly options: WebhookSenderOptions) {}

  /** One pass: waits for a free slot when all are busy, then claims and starts what is due. */
  async tick(): Promise<number> {
    const { concurrency } = this.options;
    if (this.inFlight.size >= concurrency) await Promise.race(this.inFlight);
    const free = concurrency - this.inFlight.size;
    if (free <= 0) return 0;
    const claimed = await this.claim(free);
    if (claimed.length === 0) return 0;
    const secrets = await this.options.webhooks.signingSecrets([
      ...new Set(claimed.map((row) => row.user_id)),
    ]);
    for (const row of claimed) {
      const work = this.deliver(row, secrets.get(row.user_id) ?? []).catch((error: unknown) =>
        this.options.deps.logger.error(
          { err: error, deliveryId: row.id },
          'could not record a webhook attempt',
        ),
      );
      this.inFlight.add(work);
      void work.finally(() => this.inFlight.delete(work));
    }
    return claimed.length;
  }

  /**
   * Shutdown: lets the attempts in flight finish for up to `graceMs`, then aborts the rest. An
   * aborted attempt is recorded as failed and retried on schedule (at least once, never lost).
   */
  async close(graceMs = 5_000): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const grace = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, graceMs);
    });
    await Promise.race([Promise.all([...this.inFlight]), grace]);
    clearTimeout(timer);
    this.closing.abort(new Error('the process is stopping'));
    await Promise.all([...this.inFlight]);
  }

  private async claim(limit: number): Promise<ClaimedDelivery[]> {
    const { store, clock } = this.options.deps;
    const now = clock.now();
    const leaseUntil = new Date(now.getTime() + this.options.timeoutMs + LEASE_MARGIN_MS);
    return store.webhookDeliveries.claimDue(now, leaseUntil, limit);
  }

  private async deliver(row: ClaimedDelivery, secrets: string[]): Promise<void> {
    const { deps, timeoutMs } = this.options;
    const result = secrets.length === 0 ? noSecret() : await this.attempt(row, secrets);
    const step = afterAttempt(result, row.attempts, deps.config.webhookRetryDelaysMs);
    deps.metrics.webhookDeliveries.inc({
      result: step.state === 'succeeded' ? 'delivered' : step.state === 'retry' ? 'retry' : 'failed',
    });
    const now = deps.clock.now();
    const lastStatus = result.kind === 'error' ? null : result.status;
    const lastError =
      result.kind === 'error'
        ? result.error
        : result.kind === 'rejected'
          ? `the receiver answered ${result.status}`
          : null;
    await this.record({
      id: row.id,
      attempts: row.attempts,
      status: step.state === 'retry' ? 'pending' : step.state,
      nextAttemptAt: step.state === 'retry' ? new Date(now.getTime() + step.delayMs) : now,
      lastStatus,
      lastError:
        step.state === 'failed' && lastError !== step.reason
          ? joinReasons(lastError, step.reason)
          : lastError,
      deliveredAt: step.state === 'succeeded' ? now : null,
    });
    if (step.state === 'failed') {
      deps.logger.warn(
        { deliveryId: row.id, attempts: row.attempts, reason: step.reason, timeoutMs },
        'webhook delivery failed and was dropped',
      );
    }
  }

  /**
   * Queues an attempt's result for the next write. Results that finish together are written in one
   * statement (one round trip for many deliveries, which is what PGlite in particular needs); the
   * promise settles once this result is written.
   */
  private record(outcome: DeliveryOutcome): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.outcomes.push({ outcome, resolve, reject });
      if (!this.writing) void this.writeOutcomes();
    });
  }

  private async writeOutcomes(): Promise<void> {
    this.writing = true;
    try {
      while (this.outcomes.length > 0) {
        // One turn of the event loop lets the results that finish at the same moment join in.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const entries = this.outcomes.splice(0, 500);
        try {
          await this.writeBatch(entries.map((entry) => entry.outcome));
          for (const entry of entries) entry.resolve();
        } catch (error) {
          for (const entry of entries) entry.reject(error);
        }
      }
    } finally {
      this.writing = false;
    }
  }

  /** Writes results; a row only changes if it is still at the attempt this worker claimed. */
  private async writeBatch(outcomes: DeliveryOutcome[]): Promise<void> {
    const now = this.options.deps.clock.now();
    await this.options.deps.store.webhookDeliveries.recordOutcomes(outcomes, now);
  }

  private async attempt(row: ClaimedDelivery, secrets: string[]): Promise<AttemptResult> {
    const { deps, timeoutMs, http, userAgent } = this.options;
    let url: URL;
    try {
      url = new URL(row.url);
      assertDeliverableHost(url, deps.config.webhookAllowPrivate);
    } catch (error) {
      return { kind: 'error', error: describeHttpError(error), retryable: false };
    }
    const headers = {
      'content-type': 'application/json',
      'user-agent': userAgent,
      ...signatureHeaders({
        id: row.id,
        timestamp: Math.floor(deps.clock.now().getTime() / 1000),
        body: row.body,
        secrets,
      }),
    };
    try {
      const answer = await request(url, {
        method: 'POST',
        body: row.body,
        headers,
        dispatcher: http,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.any([AbortSignal.timeout(timeoutMs), this.closing.signal]),
      });
      await answer.body.dump({ limit: MAX_ANSWER_BYTES }).catch(() => undefined);
      if (answer.statusCode >= 200 && answer.statusCode < 300) {
        return { kind: 'delivered', status: answer.statusCode };
      }
      return { kind: 'rejected', status: answer.statusCode };
    } catch (error) {
      const forbidden = (error as { code?: unknown }).code === 'EWEBHOOKFORBIDDEN';
      return { kind: 'error', error: describeHttpError(error), retryable: !forbidden };
    }
  }
}

function noSecret(): AttemptResult {
  return { kind: 'error', error: 'the user has no webhook secret', retryable: false };
}

function joinReasons(first: string | null, second: string): string {
  return first ? `${first}; ${second}` : second;
}
