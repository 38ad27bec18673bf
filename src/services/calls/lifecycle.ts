import type { Logger } from 'pino';
import { minutesToCharge } from '../../domain/billing.js';
import { type CallChannel, nextAttempt } from '../../domain/call.js';
import { failureSourceOf } from '../../domain/failure.js';
import type { CallEvent } from '../../domain/webhooks.js';
import type { CallEndedEvent, DialRecord, DialRecords } from '../../ports.js';
import type { EndingBatchRow } from '../../store/batches.js';
import type { EndedCallRow, NewBatchCallRow } from '../../store/calls.js';
import type { CallProgress, CallProgressSink, Repos, Store } from '../../store/index.js';
import { returnContact } from '../batch-lifecycle.js';
import type { Deps } from '../deps.js';
import type { DomainEventBus, TransactionBus } from '../events.js';
import { OwnerLease } from './owner-lease.js';

/** A single or web call to open: every call outside a batch starts in this shape. */
export interface NewCall {
  callId: string;
  userId: string;
  agentId: string;
  contact: { id: string; phone_number: string };
  provider: string;
  channel: CallChannel;
  now: Date;
  answeredAt: Date | null;
  statusCallBackUrl: string | null;
  statusCallBackEvents: CallEvent[] | null;
  variables: Record<string, string> | null;
}

/** A batch contact's claimed call to open (the dispatcher's claim), after `earlierAttempts` in its batch. */
export type NewBatchCall = Omit<NewBatchCallRow, 'attempt'> & { earlierAttempts: number };

export type { EndedCallRow };

/** A batch of calls ending together, locked, with what its contacts' next step depends on. */
export type EndingCallsBatch = EndingBatchRow;

/** Calls' ends applied in one transaction, for the reactions that are part of it. */
export interface EndingCalls {
  /** The repositories of the transaction applying the ends: the reactions write in it. */
  tx: Repos;
  /** The calls these ends changed, as they are now. */
  rows: EndedCallRow[];
  events: Map<string, CallEndedEvent>;
  /** The batches of those calls, locked by this transaction. */
  batches: EndingCallsBatch[];
  now: Date;
}

/** What the call's lifecycle and dial steps announce inside their transactions (`TransactionBus`). */
export interface CallTransactionEvents {
  'calls.ending': EndingCalls;
  /** Calls went out (`started`) or were first answered (`answered`), in the step's transaction. */
  'calls.progressing': { tx: Repos; progress: CallProgress[] };
}

/** Most call ends applied in one transaction. */
const ENDINGS_PER_GROUP = 200;

/**
 * The call's lifecycle: the one writer of `calls` rows and of the dial records they open with,
 * from the dial intent (`open`, `openBatchCalls`) to the end (`finish`) or the way back to the
 * queue (`returnToQueue`). The records' steps in between are `DialSteps`', below.
 */
export class CallLifecycle {
  private readonly endings: Array<{
    event: CallEndedEvent;
    resolve: (call: EndedCallRow | null) => void;
    reject: (error: unknown) => void;
  }> = [];
  private applyingEndings = false;

  constructor(
    private readonly deps: Pick<Deps, 'store' | 'clock' | 'dials' | 'logger' | 'metrics'>,
    private readonly events: DomainEventBus,
    private readonly reactions: TransactionBus<CallTransactionEvents>,
  ) {}

  /**
   * Opens a single or web call in the caller's transaction (the one that records the dial
   * intent): its row, ONGOING, and its dial record, naming this process. A dial's record waits for
   * the provider; a web call's is sent and answered at once, as its browser is on the line already.
   * Returns the call's attempt number.
   */
  async open(repos: Repos, call: NewCall): Promise<number> {
    const attempt = await this.insertCall(repos, call);
    const record = { callId: call.callId, provider: call.provider };
    if (call.answeredAt) await repos.dials.openAnswered(this.deps.dials.owner, record, call.now);
    else await repos.dials.open(this.deps.dials.owner, [record], call.now);
    return attempt;
  }

  /**
   * Opens a batch's claimed calls in the claim's transaction: their rows, ONGOING from their
   * slots, and their waiting dial records. A contact with a call up already (another batch, a
   * single dial) gets none: the calls opened are returned, each with its attempt.
   */
  async openBatchCalls(
    repos: Repos,
    batch: { id: string; userId: string; agentId: string },
    calls: NewBatchCall[],
    provider: string,
    now: Date,
  ): Promise<Map<string, number>> {
    const rows = calls.map(({ earlierAttempts, ...call }) => ({
      ...call,
      attempt: nextAttempt(earlierAttempts),
    }));
    const ids = new Set(await repos.calls.insertBatchCalls(batch, rows, provider, now));
    const opened = new Map(rows.filter((row) => ids.has(row.callId)).map((row) => [row.callId, row.attempt]));
    await repos.dials.open(
      this.deps.dials.owner,
      calls.filter((call) => opened.has(call.callId)).map((call) => ({ callId: call.callId, provider })),
      now,
    );
    return opened;
  }

  /**
   * Writes a new call row (status ONGOING) in the caller's transaction, the one shape every call
   * starts in (a dial, a web call); returns its attempt number: the contact's single dials are one
   * series, counted apart from its batches' (1 for its first call outside a batch).
   */
  private async insertCall(repos: Repos, call: NewCall): Promise<number> {
    const attempt = nextAttempt(await repos.calls.singleCallsOfContact(call.contact.id));
    await repos.calls.insert({
      id: call.callId,
      user_id: call.userId,
      agent_id: call.agentId,
      contact_id: call.contact.id,
      phone_number: call.contact.phone_number,
      attempt,
      provider: call.provider,
      channel: call.channel,
      status_callback_url: call.statusCallBackUrl,
      status_callback_events: call.statusCallBackEvents,
      variables: call.variables,
      created_at: call.now,
      answered_at: call.answeredAt,
    });
    return attempt;
  }

  /**
   * Applies a provider's end-of-call report once: the update only matches an ONGOING row, so a
   * repeated report (provider retry, reconciliation racing the live event) changes nothing. For a
   * batch call the same transaction moves the batch contact on (done, or queued for a retry) and
   * the batch's counters, and completes the batch with its last contact. Every end comes here,
   * whatever its source, and is announced as `call.ended` once applied (or once its write failed).
   */
  async finish(event: CallEndedEvent): Promise<boolean> {
    let call: EndedCallRow | null;
    try {
      call = await new Promise<EndedCallRow | null>((resolve, reject) => {
        this.endings.push({ event, resolve, reject });
        if (!this.applyingEndings) void this.applyEndings();
      });
    } catch (error) {
      await this.events.emit('call.ended', { event, recorded: false, call: null });
      throw error;
    }
    await this.events.emit('call.ended', { event, recorded: true, call });
    return call !== null;
  }

  /**
   * Call ends that arrive together (a campaign ends hundreds a second) are applied in one
   * transaction: the same effects as one by one, in a few statements instead of a few per call.
   * A group that fails is applied again call by call, so one bad call cannot hold up the others.
   */
  private async applyEndings(): Promise<void> {
    this.applyingEndings = true;
    try {
      while (this.endings.length > 0) {
        // One turn of the event loop lets the ends reported at the same moment join the group.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const group = this.endings.splice(0, ENDINGS_PER_GROUP);
        try {
          const results = await this.finishGroup(group.map((entry) => entry.event));
          group.forEach((entry, index) => {
            entry.resolve(results[index] ?? null);
          });
        } catch (error) {
          if (group.length === 1) {
            group[0]?.reject(error);
            continue;
          }
          this.deps.logger.warn(
            { err: error, calls: group.length },
            'a group of call ends failed; applying them one by one',
          );
          for (const entry of group) {
            await this.finishGroup([entry.event]).then(([call]) => entry.resolve(call ?? null), entry.reject);
          }
        }
      }
    } finally {
      this.applyingEndings = false;
    }
  }

  /** Several calls' ends in one transaction; returns, per event, the call it ended (null: none). */
  private async finishGroup(events: CallEndedEvent[]): Promise<Array<EndedCallRow | null>> {
    const { store, clock } = this.deps;
    const first = new Map<string, number>();
    events.forEach((event, index) => {
      if (!first.has(event.callId)) first.set(event.callId, index);
    });
    const unique = [...first.values()].map((index) => events[index] as CallEndedEvent);
    const ids = unique.map((event) => event.callId);
    const done = await store.tx(async (repos) => {
      // The same lock order as a single end (LOCK_ORDER): the batch rows first (in id order, so two
      // groups never wait on each other in a circle), then the users whose minutes change, then the calls.
      const batches = await repos.batches.lockOfCalls(ids);
      await repos.users.lockOfCalls(ids);
      const now = clock.now();
      const rows = await repos.calls.end(
        unique.map((e) => {
          const source = failureSourceOf(e);
          return {
            id: e.callId,
            status: e.status,
            duration: e.duration,
            answeredAt: e.answeredAt,
            endedAt: e.endedAt,
            error: e.error,
            transcription: JSON.stringify(e.transcription),
            charge: minutesToCharge(e.status, e.duration, source),
            sipCode: e.sipCode ?? null,
            endedReason: e.endedReason ?? null,
            failureSource: source,
            turns: e.turns ? JSON.stringify(e.turns) : null,
            toolCalls: e.toolCalls ? JSON.stringify(e.toolCalls) : null,
          };
        }),
        now,
      );
      if (rows.length === 0) return rows;
      const charges = new Map<string, number>();
      for (const row of rows) charges.set(row.user_id, (charges.get(row.user_id) ?? 0) + row.minutes_charged);
      const charged = [...charges].filter(([, minutes]) => minutes > 0);
      if (charged.length > 0)
        await repos.users.charge(charged.map(([userId, minutes]) => ({ userId, minutes })));
      // The reactions that are part of the end (wiring/subscribers.ts): the outbox's
      // call.completed, the batch contacts and the batch's completion, in this transaction.
      await this.reactions.run('calls.ending', {
        tx: repos,
        rows,
        events: new Map(unique.map((event) => [event.callId, event])),
        batches,
        now,
      });
      return rows;
    });
    const ended = new Map(done.map((row) => [row.id, row]));
    return events.map((event, index) =>
      first.get(event.callId) === index ? (ended.get(event.callId) ?? null) : null,
    );
  }

  /**
   * Puts a batch call that never reached the network back in the queue, as if it had not been
   * claimed: its call row goes, its dial record says returned, and its contact is queued again with
   * the attempt given back. `owner`, when given, must still hold the waiting record (otherwise the
   * call went out or was taken, and nothing changes). Used by a graceful stop and after a crash.
   */
  async returnToQueue(
    call: { callId: string; batchId: string; seq: number },
    owner: string | null,
  ): Promise<boolean> {
    return this.deps.store
      .tx(async (repos) => {
        // LOCK_ORDER: the batch row first, then its contacts, then calls.
        await repos.locks.lockBatch([call.batchId]);
        if (!(await repos.calls.deleteOngoing(call.callId))) return false;
        // The call row goes only with a record still waiting; otherwise the delete is undone.
        if (!(await repos.dials.returnDial(call.callId, owner))) throw new NotReturned();
        await returnContact(repos, call);
        return true;
      })
      .catch((error: unknown) => {
        if (error instanceof NotReturned) return false;
        throw error;
      });
  }
}

/** A call that was to go back to the queue went out meanwhile: the transaction is undone. */
class NotReturned extends Error {}

/** Settled dial records are kept a week (no call lasts that long), looked over hourly. */
const KEEP_RECORDS_DAYS = 7;
const PRUNE_RECORDS_EVERY_MS = 60 * 60 * 1000;
/** Most sends written in one statement. */
const SENDS_PER_GROUP = 500;

/** A send waiting for its group's statement. */
interface PendingSend {
  callId: string;
  provider: string;
  at: Date;
  progressEvents: boolean;
  resolve: (sent: boolean) => void;
  reject: (error: unknown) => void;
}

/**
 * A call's dial record after it is opened (the `DialRecords` port the transports and the
 * reconciler are given): held, sent, refused, answered, ended, adopted, and pruned once old.
 * With `CallLifecycle`'s opening and return, the one writer of dial records. Each record names
 * this process's lease (`OwnerLease`), which it takes on `start` and gives back on `close`.
 * Once committed, a call's going out is announced as `call.sent` and its first answer as
 * `call.answered`, whichever transport reported them.
 *
 * Sends, the per-call write of every dial (a campaign sends up to ~1000 a second), are grouped:
 * those asked for in one turn of the event loop go in one statement.
 */
export class DialSteps implements DialRecords {
  readonly lease: OwnerLease;
  private readonly sends: PendingSend[] = [];
  private flushing = false;
  private pruner: NodeJS.Timeout | null = null;

  constructor(
    private readonly options: {
      store: Store;
      logger?: Logger;
      /**
       * The reactions that are part of a step (`calls.progressing`: the call.started and
       * call.answered webhooks, `wiring/subscribers.ts`), run inside its transaction.
       */
      reactions?: TransactionBus<CallTransactionEvents>;
      /** Where a call's going out (`call.sent`) and first answer (`call.answered`) are announced. */
      events: DomainEventBus;
    },
  ) {
    this.lease = new OwnerLease(options.store, options.logger);
  }

  get owner(): string {
    return this.lease.owner;
  }

  /** Takes this process's lease (renewed until close) and prunes old records hourly. */
  async start(): Promise<void> {
    await this.lease.start();
    void this.prune();
    this.pruner = setInterval(() => void this.prune(), PRUNE_RECORDS_EVERY_MS);
    this.pruner.unref();
  }

  /** Stops pruning and gives the lease back. */
  async close(): Promise<void> {
    if (this.pruner) clearInterval(this.pruner);
    this.pruner = null;
    await this.lease.close();
  }

  hold(callId: string, provider: string): Promise<boolean> {
    return this.options.store.dials.hold(this.owner, callId, provider);
  }

  send(callId: string, provider: string, at: Date, progressEvents = true): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.sends.push({ callId, provider, at, progressEvents, resolve, reject });
      if (!this.flushing) void this.flushSends();
    });
  }

  private async flushSends(): Promise<void> {
    this.flushing = true;
    try {
      while (this.sends.length > 0) {
        // One turn of the event loop lets the sends asked for at the same moment join the group.
        await new Promise<void>((resolve) => setImmediate(resolve));
        const group = this.sends.splice(0, SENDS_PER_GROUP);
        try {
          const sent = await this.sendGroup(group);
          for (const entry of group) entry.resolve(sent.has(entry.callId));
          // Announced after the senders heard (the SIP INVITE goes out without waiting for it).
          void this.announceSent(sent);
        } catch (error) {
          for (const entry of group) entry.reject(error);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /**
   * One statement: each record this process holds waiting (or a call with none yet) becomes sent,
   * and its call's recorded start time becomes the moment it went out; in the same transaction the
   * progress sink hears of the calls that started. A group none of whose calls has listeners for
   * its progress (most campaigns) is the statement alone, without a transaction around it.
   */
  private async sendGroup(group: PendingSend[]): Promise<Map<string, Date>> {
    const { store } = this.options;
    const calls = [...new Map(group.map((entry) => [entry.callId, entry])).values()];
    const sink = calls.some((call) => call.progressEvents) ? this.progressSink() : undefined;
    const sent = sink
      ? await store.tx(async (repos) => {
          const rows = await repos.dials.send(this.owner, calls);
          await sink(
            repos,
            rows.map((row) => ({ kind: 'started', callId: row.callId, at: row.sentAt })),
          );
          return rows;
        })
      : await store.dials.send(this.owner, calls);
    return new Map(sent.map((row) => [row.callId, row.sentAt]));
  }

  /** The step's reactions, when any is subscribed: a step without them needs no transaction. */
  private progressSink(): CallProgressSink | undefined {
    const reactions = this.options.reactions;
    if (!reactions || reactions.subscribersOf('calls.progressing').length === 0) return undefined;
    return (tx, progress) => reactions.run('calls.progressing', { tx, progress });
  }

  private async announceSent(sent: Map<string, Date>): Promise<void> {
    for (const [callId, at] of sent) await this.options.events.emit('call.sent', { callId, at });
  }

  async refused(callId: string): Promise<void> {
    await this.options.store.dials.refused(this.owner, callId);
  }

  /**
   * The first answer of a call is kept and announced (a repeated report changes nothing and tells
   * no one again). Without listeners for the call's progress, the one statement alone.
   */
  async answered(callId: string, at: Date, progressEvents = true): Promise<void> {
    const { store, events } = this.options;
    const sink = progressEvents ? this.progressSink() : undefined;
    const first = sink
      ? await store.tx(async (repos) => {
          const marked = await repos.dials.answered(this.owner, callId, at);
          if (marked) await sink(repos, [{ kind: 'answered', callId, at }]);
          return marked;
        })
      : await store.dials.answered(this.owner, callId, at);
    if (first) await events.emit('call.answered', { callId, at });
  }

  ended(event: CallEndedEvent): Promise<void> {
    return this.options.store.dials.ended(this.owner, event);
  }

  find(callId: string): Promise<DialRecord | null> {
    return this.options.store.dials.find(callId);
  }

  adopt(callId: string, from: string): Promise<boolean> {
    return this.options.store.dials.adopt(this.owner, callId, from);
  }

  handOff(callId: string): Promise<boolean> {
    return this.options.store.dials.handOff(this.owner, callId);
  }

  private async prune(): Promise<void> {
    try {
      await this.options.store.dials.pruneSettled(KEEP_RECORDS_DAYS);
    } catch (error) {
      this.options.logger?.warn({ err: error }, 'could not prune old dial records');
    }
  }
}
