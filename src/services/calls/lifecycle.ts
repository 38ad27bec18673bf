import { minutesToCharge } from '../../domain/billing.js';
import { awaitsAnalysis, type CallChannel, nextAttempt } from '../../domain/call.js';
import type { CallEvent } from '../../domain/webhooks.js';
import type { CallEndedEvent } from '../../ports.js';
import type { EndingBatchRow } from '../../store/batches.js';
import type { EndedCallRow, NewBatchCallRow } from '../../store/calls.js';
import type { Repos } from '../../store/index.js';
import { returnContact } from '../batch-lifecycle.js';
import type { Deps } from '../deps.js';
import type { DomainEventBus, TransactionBus } from '../events.js';

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

/** What the lifecycle announces inside its transactions (`TransactionBus`). */
export interface CallTransactionEvents {
  'calls.ending': EndingCalls;
}

/** Most call ends applied in one transaction. */
const ENDINGS_PER_GROUP = 200;

/**
 * The call's lifecycle: the one writer of `calls` rows and of the dial records they open with,
 * from the dial intent (`open`, `openBatchCalls`) to the end (`finish`) or the way back to the
 * queue (`returnToQueue`).
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
        unique.map((e) => ({
          id: e.callId,
          status: e.status,
          duration: e.duration,
          answeredAt: e.answeredAt,
          endedAt: e.endedAt,
          error: e.error,
          transcription: JSON.stringify(e.transcription),
          charge: minutesToCharge(e.status, e.duration),
          analysis: awaitsAnalysis(e) ? 'pending' : null,
          sipCode: e.sipCode ?? null,
          endedReason: e.endedReason ?? null,
          turns: e.turns ? JSON.stringify(e.turns) : null,
          toolCalls: e.toolCalls ? JSON.stringify(e.toolCalls) : null,
        })),
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
