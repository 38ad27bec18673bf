import { dialVariables } from '../../domain/agent-call.js';
import { campaignAllowance, outOfMinutes } from '../../domain/allowance.js';
import { ACTIVE_BATCH_STATUSES, isActiveBatch } from '../../domain/batch-lifecycle.js';
import { failedDialEnd } from '../../domain/call.js';
import { nextCallableAt, windowFromRow } from '../../domain/calling-window.js';
import { newId } from '../../domain/ids.js';
import type { Admission, DialRequest, LoadGauge, Pace, RateLimiter } from '../../ports.js';
import { type BatchLifecycle, deferContacts } from '../../services/batch-lifecycle.js';
import type { BatchService } from '../../services/batches.js';
import type { Breakers } from '../../services/breakers.js';
import { callLoad } from '../../services/call-load.js';
import { agentForDial } from '../../services/calls/intake.js';
import type { CallLifecycle } from '../../services/calls/lifecycle.js';
import type { LiveView } from '../../services/calls/live-view.js';
import type { Deps } from '../../services/deps.js';
import type { DueContactRow } from '../../store/batch-contacts.js';
import type { ActiveBatchRow } from '../../store/batches.js';
import type { Repos } from '../../store/index.js';

export interface DispatcherOptions {
  deps: Deps;
  lifecycle: CallLifecycle;
  /** The batch's status changes (a batch whose contacts are all suppressed completes). */
  batchLifecycle: Pick<BatchLifecycle, 'suppressContacts' | 'claimContacts'>;
  live: LiveView;
  batches: BatchService;
  limiter: RateLimiter;
  /** Most calls this process keeps up at once (OUTDIAL_MAX_CONCURRENT_CALLS). */
  maxConcurrentCalls: number;
  /**
   * This process's load (voice/load.ts): while its event loop lags past its bound a pass claims
   * nothing, and calls of agents a conversation engine holds here are claimed only up to
   * OUTDIAL_MAX_AI_CALLS. Without it, neither bound applies.
   */
  load?: LoadGauge;
  /**
   * The dependencies' circuit breakers: a batch whose agent needs one that holds calls back is
   * paused (`dependency-unavailable`) instead of claimed; the breaker's recovery resumes it.
   * Without them, no batch is paused for a dependency.
   */
  breakers?: Pick<Breakers, 'blocking' | 'blockingNow' | 'dependenciesOf' | 'holdsCallsNow'>;
  /** How far ahead slots are reserved and rows claimed. */
  horizonMs?: number;
  /** Pause between passes. */
  tickMs?: number;
}

type ActiveBatch = ActiveBatchRow;

/** What a pass may still claim for one user, shared by the user's batches in that pass. */
interface Allowance {
  calls: number;
  outOfMinutes: boolean;
}

type ClaimedRow = Omit<DueContactRow, 'timezone' | 'suppressed'>;

/**
 * After a claimed slot time, how long a dialing row is left alone before recovery asks the
 * provider about its call. Recovery is always safe (it looks the call up before doing anything),
 * so this only sets how soon a dead worker's calls are picked up.
 */
export const DIAL_LEASE_MS = 60_000;
/**
 * The window the start check uses: one second and 10 ms, because the network sees a start a few
 * milliseconds after the limiter admitted it (a Redis reply, a busy event loop), and those delays
 * differ between workers. It costs 1% of the rate, inside the 2% the dispatcher promises.
 */
const WINDOW_GUARD_MS = 1010;
/** A batch's start log: the dispatcher admits its calls there, and the SIP provider again before the INVITE. */
function batchPace(batch: ActiveBatch): Pace {
  return { key: `batch:${batch.id}`, perSecond: batch.max_calls_per_second, windowMs: WINDOW_GUARD_MS };
}
/** This process's own check, in the provider's clock: a second and 1 ms for the clock read after ours. */
const LOCAL_WINDOW_MS = 1001;
/** A contact that already has a call up (another batch, a single dial) is tried again after this. */
const BUSY_CONTACT_DEFER_MS = 15_000;
/** Batches served at once in a pass (each on its own connection). */
const BATCHES_AT_ONCE = 8;
/** Claim-gate rounds per claim, rows read ahead per row wanted after gated rows, and the most read at once. */
const GATE_ROUNDS = 6;
const GATE_READ_AHEAD = 4;
const GATE_MAX_READ = 5_000;

/**
 * Claims due batch contacts and dials them, batch by batch in priority order, each at the pace its
 * limiter grants. A batch that has no slot or no due contact now costs nothing and its capacity
 * goes to the next one (work-conserving). The dial intent (the call row, ONGOING) is committed with
 * the claim, before the provider is asked, so a crash can never dial an attempt twice.
 */
export class Dispatcher {
  private readonly inFlight = new Set<string>();
  /** Calls claimed by this process whose slot has not come yet: call id -> timer and row. */
  private readonly pending = new Map<string, { timer: NodeJS.Timeout; batchId: string; seq: number }>();
  private readonly horizonMs: number;
  private readonly agents = new Map<string, { agent: DialRequest['agent']; at: number }>();
  /** Per batch: this process's last slot (fractional ms) and its most recent real starts (ms). */
  private readonly lastSlot = new Map<string, number>();
  private readonly recentStarts = new Map<string, number[]>();

  constructor(private readonly options: DispatcherOptions) {
    this.horizonMs = options.horizonMs ?? 1000;
  }

  get activeCalls(): number {
    return this.inFlight.size;
  }

  /** Calls claimed by this process that wait for their slot. */
  get waitingCalls(): number {
    return this.pending.size;
  }

  /** The provider reported the end of a call this process dialed. */
  released(callId: string): void {
    this.forget(callId);
  }

  private forget(callId: string): void {
    this.inFlight.delete(callId);
    this.options.load?.release(callId);
  }

  /** One pass: returns how many calls it scheduled. */
  async tick(): Promise<number> {
    const { deps } = this.options;
    let capacity = this.options.maxConcurrentCalls - this.inFlight.size;
    if (capacity <= 0) return 0;
    // An event loop past its bound serves its calls late already: nothing more is claimed here,
    // and the contacts stay queued for the other processes (no attempt used, nothing charged).
    const load = this.options.load;
    if (load?.lagging) return 0;
    // The AI calls left: those in progress here (any source: batch, single, browser) and the calls
    // placed here not answered yet (this dispatcher's claims, single dials) count against the bound.
    let aiRoom = load ? load.aiRoom : Number.POSITIVE_INFINITY;
    const now = deps.clock.now();
    const batches = await deps.store.batches.startedIn(ACTIVE_BATCH_STATUSES, now, 200);
    await this.withdrawStopped(batches);
    // Batches are served in priority order, a few at a time: each one costs a few round trips
    // (credit, limiter, claim), and serving them one by one would make a pass over many batches
    // longer than the horizon it plans for. A group's unused capacity goes to the next group.
    let scheduled = 0;
    const allowances = new Map<string, Promise<Allowance>>();
    for (let i = 0; i < batches.length && capacity > 0; i += BATCHES_AT_ONCE) {
      const group: Array<{ batch: ActiveBatch; wanted: number; ai: boolean }> = [];
      let left = capacity;
      for (const batch of batches.slice(i, i + BATCHES_AT_ONCE)) {
        if (left <= 0) break;
        const agent = await this.agent(batch.agent_id);
        // No new call into a known outage: the batch pauses, and resumes when its dependency does.
        if (await this.pausedForDependency(batch, agent)) continue;
        let wanted = Math.min(left, Math.ceil((batch.max_calls_per_second * this.horizonMs) / 1000));
        // A batch whose calls an engine holds here takes no more than the AI calls left.
        const ai = load !== undefined && this.holdsConversations(agent);
        if (ai) wanted = Math.min(wanted, aiRoom);
        if (wanted <= 0) continue;
        if (ai) aiRoom -= wanted;
        group.push({ batch, wanted, ai });
        left -= wanted;
      }
      const counts = await Promise.all(
        group.map(({ batch, wanted }) => this.serve(batch, wanted, allowances)),
      );
      for (const [k, count] of counts.entries()) {
        capacity -= count;
        scheduled += count;
        const served = group[k];
        if (served?.ai) aiRoom += served.wanted - count;
      }
    }
    return scheduled;
  }

  /**
   * Pauses the batch when a dependency of its agent (its trunk; the engine's models, when the
   * engine holds its calls here) has an open breaker. The pause is `BatchService`'s; the calls
   * this process already claimed for the batch go back to the queue at the next pass
   * (`withdrawStopped`), and another process's at its own.
   */
  private async pausedForDependency(batch: ActiveBatch, agent: DialRequest['agent']): Promise<boolean> {
    const breakers = this.options.breakers;
    if (!breakers) return false;
    const blocked = await breakers.blocking(this.dependenciesOf(agent));
    if (!blocked) return false;
    const paused = await this.options.batches.pauseForDependency(batch.id, blocked.key);
    if (paused) {
      this.options.deps.logger.warn(
        { batchId: batch.id, dependency: blocked.key },
        `batch paused: ${blocked.name} is unavailable`,
      );
      // The snapshot may be a second old, and the probe that closes the breaker resumes only the
      // batches paused by then: a pause written after that resume would stay for good. So the
      // breaker is read again once the pause is written: closed meanwhile, the batch is resumed
      // here; closed after this read, the probe's own resume finds the pause.
      if (!(await breakers.holdsCallsNow(blocked.key))) {
        const resumed = await this.options.batches.resumeForDependency(blocked.key);
        if (resumed.length > 0) {
          this.options.deps.logger.info(
            { batches: resumed, dependency: blocked.key },
            'batch resumed: the breaker closed as it was paused',
          );
        }
      }
    }
    return true;
  }

  /**
   * Reserves up to `wanted` slots of one batch, no more than its user's free places and unreserved
   * minutes allow, and claims that many due rows for them. A batch whose user has no place or
   * minute free waits (nothing is charged); one whose balance is spent fails, but only while it
   * still has contacts to dial.
   */
  private async serve(
    batch: ActiveBatch,
    wanted: number,
    allowances: Map<string, Promise<Allowance>>,
  ): Promise<number> {
    const { limiter } = this.options;
    // One read per user and pass, however many of the user's batches are running; the batches of
    // a pass share what it allows (the claim checks again under the user's lock).
    let pending = allowances.get(batch.user_id);
    if (!pending) {
      pending = this.allowance(batch.user_id);
      allowances.set(batch.user_id, pending);
    }
    const allowance = await pending;
    if (allowance.outOfMinutes) {
      await this.failForCredit(batch);
      return 0;
    }
    const asked = Math.min(wanted, allowance.calls);
    if (asked <= 0) return 0;
    allowance.calls -= asked;
    let claimed = 0;
    try {
      const delays = await limiter.reserve(
        `batch:${batch.id}`,
        batch.max_calls_per_second,
        asked,
        this.horizonMs,
      );
      if (delays.length === 0) return 0;
      claimed = await this.claim(batch, delays);
      if (claimed < delays.length)
        await limiter.release(`batch:${batch.id}`, batch.max_calls_per_second, delays.length - claimed);
      return claimed;
    } finally {
      allowance.calls += asked - claimed;
    }
  }

  /**
   * Stops dialing. Calls claimed but not yet dialed go back to the queue (their intent row is
   * removed), so a graceful stop costs nothing; after a crash another process's sweep does the
   * same once this process's lease has run out (their dial records are still waiting).
   */
  async close(): Promise<void> {
    const unstarted = [...this.pending.entries()];
    for (const [, entry] of unstarted) clearTimeout(entry.timer);
    this.pending.clear();
    for (const [callId, entry] of unstarted) {
      this.forget(callId);
      await this.options.lifecycle
        .returnToQueue({ callId, batchId: entry.batchId, seq: entry.seq }, this.options.deps.dials.owner)
        .catch((error: unknown) =>
          this.options.deps.logger.warn(
            { err: error, callId },
            'could not return an undialed call to the queue',
          ),
        );
    }
  }

  /**
   * Calls this process claimed (up to a horizon ahead) whose batch has since been paused go back to
   * the queue before their slot: a pause means no new call starts, and the resume dials them. (A
   * cancelled or failed batch's claimed calls still go out and are recorded, as they always did.)
   * Costs a query only when a waiting call's batch is missing from this pass's active batches.
   */
  private async withdrawStopped(active: ActiveBatch[]): Promise<void> {
    if (this.pending.size === 0) return;
    const serving = new Set(active.map((batch) => batch.id));
    const missing = [...new Set([...this.pending.values()].map((entry) => entry.batchId))].filter(
      (id) => !serving.has(id),
    );
    if (missing.length === 0) return;
    const rows = await this.options.deps.store.batches.statuses(missing);
    const stopped = new Set(rows.filter((row) => row.status === 'paused').map((row) => row.id));
    if (stopped.size === 0) return;
    for (const [callId, entry] of [...this.pending.entries()]) {
      if (stopped.has(entry.batchId)) await this.withdraw(callId);
    }
  }

  /** A claimed call that must not go out now goes back to the queue: no attempt used, nothing charged. */
  private async withdraw(callId: string): Promise<void> {
    const entry = this.pending.get(callId);
    if (!entry) return;
    clearTimeout(entry.timer);
    this.pending.delete(callId);
    this.forget(callId);
    await this.options.lifecycle
      .returnToQueue({ callId, batchId: entry.batchId, seq: entry.seq }, this.options.deps.dials.owner)
      .catch((error: unknown) =>
        this.options.deps.logger.warn({ err: error, callId }, 'could not withdraw a claimed call'),
      );
  }

  /** What a call of `agent` needs up: its trunk, and the engine's models when they hold it here. */
  private dependenciesOf(agent: DialRequest['agent']) {
    return this.options.breakers?.dependenciesOf(agent, this.holdsConversations(agent)) ?? [];
  }

  private async allowance(userId: string): Promise<Allowance> {
    const load = await callLoad(this.options.deps.store, userId, { lock: false });
    if (!load) return { calls: 0, outOfMinutes: false };
    return { calls: campaignAllowance(load).calls, outOfMinutes: outOfMinutes(load) };
  }

  /**
   * Fails a batch whose user's balance is spent, if it still has contacts to dial: one whose
   * contacts have all been dialed completes as its calls end, whatever the balance. Both are
   * checked again in the failing transaction, under the batch's and then the user's lock, so a
   * top-up or the last claim that committed meanwhile is seen.
   */
  private async failForCredit(batch: ActiveBatch): Promise<void> {
    const failed = await this.options.batches.fail(
      batch.id,
      'INSUFFICIENT_CREDITS',
      'The account ran out of call minutes; the remaining contacts were not dialed',
      async (repos) => {
        await repos.locks.lockBatch([batch.id]);
        const load = await callLoad(repos, batch.user_id, { lock: true });
        if (!load || !outOfMinutes(load)) return false;
        return repos.batchContacts.anyQueued(batch.id);
      },
    );
    if (failed) this.options.deps.logger.warn({ batchId: batch.id }, 'batch failed: out of call minutes');
  }

  /**
   * Claims up to `delays.length` due rows of one batch and records one call per row (the dial
   * intent), all in one transaction; then starts each call at its slot.
   */
  private async claim(batch: ActiveBatch, delays: number[]): Promise<number> {
    const { deps } = this.options;
    const now = deps.clock.now();
    const agent = await this.agent(batch.agent_id);
    const provider = deps.provider.nameFor(agent);
    const keys = this.dependenciesOf(agent).map((dependency) => dependency.key);
    const claimed = await deps.store.tx(async (repos) => {
      // LOCK_ORDER: the batch row first, then its user, then its contacts, then calls.
      // Holding the batch row also means a cancel or a failure that committed before us is seen here.
      const current = await repos.batches.lockStatus(batch.id);
      if (!current || !isActiveBatch(current)) return [];
      // No claim into an outage that committed before us, whatever this process's snapshot says;
      // the next pass pauses the batch once the snapshot has it.
      if (keys.length > 0 && (await repos.breakers.holding(keys)) !== null) return [];
      // Then the user's row: what their free places and unreserved minutes allow, counted with
      // every claim and single dial committed before, here or in another process; one place stays
      // free for the user's single calls (campaignAllowance).
      const load = await callLoad(repos, batch.user_id, { lock: true });
      const limit = load ? Math.min(delays.length, campaignAllowance(load).calls) : 0;
      if (limit <= 0) return [];
      const rows = await this.gate(repos, batch, limit, now);
      if (rows.length === 0) return [];
      const planned = rows.map((row, i) => ({
        row,
        callId: newId('call', now.getTime()),
        startAt: new Date(Math.ceil(this.nextSlot(batch, now.getTime() + (delays[i] ?? 0)))),
      }));
      const placed = await this.options.lifecycle.openBatchCalls(
        repos,
        { id: batch.id, userId: batch.user_id, agentId: batch.agent_id },
        planned.map((p) => ({
          callId: p.callId,
          contactId: p.row.contact_id,
          phoneNumber: p.row.phone_number,
          earlierAttempts: p.row.attempts,
          seq: p.row.seq,
          startAt: p.startAt,
        })),
        provider,
        now,
      );
      const go = planned.flatMap((p) => {
        const attempt = placed.get(p.callId);
        return attempt === undefined ? [] : [{ ...p, attempt }];
      });
      const wait = planned.filter((p) => !placed.has(p.callId));
      await this.options.batchLifecycle.claimContacts(
        repos,
        { id: batch.id, user_id: batch.user_id },
        go.map((p) => ({
          seq: p.row.seq,
          callId: p.callId,
          leaseUntil: new Date(p.startAt.getTime() + DIAL_LEASE_MS),
        })),
        now,
      );
      await deferContacts(
        repos,
        batch.id,
        wait.map((p) => ({
          seq: p.row.seq,
          at: new Date(now.getTime() + BUSY_CONTACT_DEFER_MS),
          windowWait: false,
        })),
      );
      return go;
    });

    const ai = this.holdsConversations(agent);
    for (const { row, callId, startAt, attempt } of claimed) {
      this.inFlight.add(callId);
      // Its place is taken while it waits and rings; its end (or a return to the queue) frees it.
      if (ai) this.options.load?.reserve(callId);
      const request: DialRequest = {
        callId,
        to: row.phone_number,
        attempt,
        agent,
        contact: { id: row.contact_id, name: row.contact_name },
        variables: dialVariables(
          { name: row.contact_name, phoneNumber: row.phone_number, company: row.company },
          row.metadata,
          null,
        ),
        pace: batchPace(batch),
        progressEvents: batch.call_events,
      };
      this.startAt(callId, batch, request, startAt.getTime(), row.seq);
    }
    return claimed.length;
  }

  /**
   * The claim gate: up to `limit` due queued rows of the batch that may be dialed now, locked for
   * the claim. Rows whose number is on the user's suppression list become suppressed (never
   * dialed); rows outside their calling window (read in the row's zone) stay queued until its next
   * opening, marked waiting for the window. Set-based: a few statements per round, and rounds go on
   * only while gated rows left room (the first pass over a batch with many closed zones).
   */
  private async gate(repos: Repos, batch: ActiveBatch, limit: number, now: Date): Promise<ClaimedRow[]> {
    const window = windowFromRow(batch.calling_window);
    const callable: ClaimedRow[] = [];
    let gated = false;
    for (let round = 0; round < GATE_ROUNDS && callable.length < limit; round++) {
      const remaining = limit - callable.length;
      // After a round that gated rows, read ahead: the rest of the due rows are likely gated too.
      const fetch = gated ? Math.min(remaining * GATE_READ_AHEAD, GATE_MAX_READ) : remaining;
      const taken = callable.map((row) => row.seq);
      const due = await repos.batchContacts.lockDue(
        { id: batch.id, userId: batch.user_id },
        now,
        taken,
        fetch,
      );
      const suppressed: number[] = [];
      const waits: Array<{ seq: number; at: Date; windowWait: boolean }> = [];
      for (const row of due) {
        if (row.suppressed) {
          suppressed.push(row.seq);
          continue;
        }
        const opening = nextCallableAt(window, row.timezone ?? batch.timezone, now);
        if (opening.getTime() > now.getTime()) waits.push({ seq: row.seq, at: opening, windowWait: true });
        else if (callable.length < limit) {
          const { timezone: _zone, suppressed: _suppressed, ...claimed } = row;
          callable.push(claimed);
        }
      }
      await this.options.batchLifecycle.suppressContacts(repos, batch.id, suppressed, now);
      await deferContacts(repos, batch.id, waits);
      if (due.length < fetch || (suppressed.length === 0 && waits.length === 0)) break;
      gated = true;
    }
    return callable;
  }

  /**
   * The slot a claimed call is recorded with: the limiter's, but never closer than one interval
   * to this process's previous slot for the batch. Kept in fractional milliseconds so rounding
   * never adds up (at 30/s the interval is 33.3 ms).
   */
  private nextSlot(batch: ActiveBatch, granted: number): number {
    const interval = 1000 / batch.max_calls_per_second;
    const slot = Math.max(granted, (this.lastSlot.get(batch.id) ?? Number.NEGATIVE_INFINITY) + interval);
    this.lastSlot.set(batch.id, slot);
    return slot;
  }

  /**
   * Starts a claimed call at its slot, once the limiter admits the start: timers fire late when
   * the event loop is busy (and late timers fire together, here or in another worker), so the
   * one-second-window rule is checked again on the moments calls really start: in the shared
   * limiter (all workers), and then synchronously in this process right before the dial, in the
   * clock the provider reads, because the limiter's answer itself arrives a moment later.
   */
  private startAt(callId: string, batch: ActiveBatch, request: DialRequest, at: number, seq: number): void {
    const pace = batchPace(batch);
    const rate = pace.perSecond;
    const retryIn = (ms: number) =>
      this.pending.set(callId, { timer: setTimeout(() => void fire(), ms), batchId: batch.id, seq });
    const localWait = () => {
      const now = this.options.deps.clock.now().getTime();
      const history = this.recentStarts.get(batch.id) ?? [];
      const blocker = history.length >= rate ? history[history.length - rate] : undefined;
      return blocker !== undefined && now < blocker + LOCAL_WINDOW_MS ? blocker + LOCAL_WINDOW_MS - now : 0;
    };
    const dependencies = this.dependenciesOf(request.agent);
    const fire = async () => {
      // A breaker that opened since the claim (this process's view of it): the call is not sent,
      // and the next pass pauses its batch.
      if (dependencies.length > 0 && this.options.breakers?.blockingNow(dependencies)) {
        await this.withdraw(callId);
        return;
      }
      const early = localWait();
      if (early > 0) return retryIn(early);
      let admission: Admission;
      try {
        admission = await this.options.limiter.admit(pace.key, rate, pace.windowMs, callId);
      } catch (error) {
        this.options.deps.logger.warn({ err: error, callId }, 'rate limiter unavailable; retrying the start');
        admission = { waitMs: 200, at: null };
      }
      if (!this.pending.has(callId)) return; // closed meanwhile: the call went back to the queue
      if (admission.at === null) return retryIn(admission.waitMs);
      const late = localWait();
      if (late > 0) return retryIn(late);
      const now = this.options.deps.clock.now().getTime();
      const history = this.recentStarts.get(batch.id) ?? [];
      history.push(now);
      if (history.length > rate) history.splice(0, history.length - rate);
      this.recentStarts.set(batch.id, history);
      this.pending.delete(callId);
      // The start is the admitted moment, in the start log's one clock: the recorded starts of
      // every worker then keep the window rule, whatever each one's delay in hearing the answer.
      void this.dial(batch, { ...request, startAt: admission.at }, admission.at);
    };
    retryIn(Math.max(at - this.options.deps.clock.now().getTime(), 0));
  }

  private async dial(batch: ActiveBatch, request: DialRequest, startAt: Date): Promise<void> {
    const { deps, lifecycle, live } = this.options;
    try {
      // The provider is asked first, in this same tick, so the call starts when the pacer said;
      // the live entry is written right after, long before any end report can overwrite it.
      const dialing = deps.provider.dial(request);
      deps.metrics.callsDialed.inc({ kind: 'batch' });
      const announced = live.announce({
        callId: request.callId,
        userId: batch.user_id,
        status: 'ONGOING',
        startTime: startAt.toISOString(),
        phoneNumber: request.to,
        contactId: request.contact.id,
        batchId: batch.id,
        error: null,
        duration: null,
        recordingUrl: null,
      });
      await Promise.all([dialing, announced]);
    } catch (error) {
      deps.logger.error({ err: error, callId: request.callId }, 'provider refused a batch dial');
      this.forget(request.callId);
      await lifecycle
        .finish(failedDialEnd(request.callId, deps.clock.now()))
        .catch((finishError: unknown) =>
          deps.logger.error({ err: finishError }, 'could not record a failed dial'),
        );
    }
  }

  private holdsConversations(agent: DialRequest['agent']): boolean {
    return this.options.deps.provider.holdsConversations?.(agent) ?? false;
  }

  private async agent(agentId: string): Promise<DialRequest['agent']> {
    const cached = this.agents.get(agentId);
    const now = Date.now();
    if (cached && now - cached.at < 30_000) return cached.agent;
    const row = await this.options.deps.store.agents.get(agentId);
    if (!row) throw new Error(`Agent ${agentId} not found`);
    const agent = agentForDial(row);
    this.agents.set(agentId, { agent, at: now });
    return agent;
  }
}
