import { sql } from 'kysely';
import { type Db, json } from '../../adapters/postgres/database.js';
import { openAnsweredDial, openDials, returnDial } from '../../adapters/postgres/dial-records.js';
import { minutesToCharge } from '../../domain/billing.js';
import { awaitsAnalysis, type CallChannel } from '../../domain/call.js';
import type { CallEvent } from '../../domain/webhooks.js';
import type { CallEndedEvent } from '../../ports.js';
import type { Repos } from '../../store/index.js';
import { type EndingBatch, returnContact } from '../batch-lifecycle.js';
import type { Deps } from '../deps.js';
import type { CallEventBus, EndedCall, TransactionBus } from '../events.js';

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

/** A batch contact's claimed call to open (the dispatcher's claim). */
export interface NewBatchCall {
  callId: string;
  contactId: string;
  phoneNumber: string;
  /** The batch contact's attempt: its earlier attempts in the batch + 1. */
  attempt: number;
  seq: number;
  /** Its slot: the call row's start until it is sent. */
  startAt: Date;
}

/** A call as the end's update returns it. */
export interface EndedCallRow extends EndedCall {
  status_callback_url: string | null;
  status_callback_events: string[] | null;
  batch_seq: number | null;
  attempt: number;
  minutes_charged: number;
}

/** A batch of calls ending together, locked, with what its contacts' next step depends on. */
export type EndingCallsBatch = EndingBatch & { webhooks: Record<string, string> | null };

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
    private readonly deps: Pick<Deps, 'db' | 'legacy' | 'clock' | 'dials' | 'logger' | 'metrics'>,
    private readonly events: CallEventBus,
    private readonly reactions: TransactionBus<CallTransactionEvents>,
  ) {}

  /**
   * Opens a single or web call in the caller's transaction (the one that records the dial
   * intent): its row, ONGOING, and its dial record, naming this process. A dial's record waits for
   * the provider; a web call's is sent and answered at once, as its browser is on the line already.
   * Returns the call's attempt number.
   */
  async open(trx: Db, call: NewCall): Promise<number> {
    const attempt = await this.insertCall(trx, call);
    const record = { callId: call.callId, provider: call.provider };
    if (call.answeredAt) await openAnsweredDial(trx, this.deps.dials.owner, record, call.now);
    else await openDials(trx, this.deps.dials.owner, [record], call.now);
    return attempt;
  }

  /**
   * Opens a batch's claimed calls in the claim's transaction: their rows, ONGOING from their
   * slots, and their waiting dial records. A contact with a call up already (another batch, a
   * single dial) gets none: the ids of the calls opened are returned.
   */
  async openBatchCalls(
    trx: Db,
    batch: { id: string; userId: string; agentId: string },
    calls: NewBatchCall[],
    provider: string,
    now: Date,
  ): Promise<Set<string>> {
    const inserted = await sql<{ id: string }>`
      insert into calls (id, user_id, agent_id, contact_id, batch_id, batch_seq, status, phone_number, attempt, provider, created_at, updated_at)
      select x.id, ${batch.userId}, ${batch.agentId}, x.contact_id, ${batch.id}, x.seq, 'ONGOING', x.phone, x.attempt, ${provider}, x.start_at, ${now}
      from unnest(${calls.map((c) => c.callId)}::text[], ${calls.map((c) => c.contactId)}::text[],
                  ${calls.map((c) => c.phoneNumber)}::text[], ${calls.map((c) => c.attempt)}::int[],
                  ${calls.map((c) => c.startAt.toISOString())}::timestamptz[], ${calls.map((c) => c.seq)}::int[])
        as x(id, contact_id, phone, attempt, start_at, seq)
      on conflict (contact_id) where status = 'ONGOING' do nothing
      returning id`.execute(trx);
    const opened = new Set(inserted.rows.map((row) => row.id));
    await openDials(
      trx,
      this.deps.dials.owner,
      calls.filter((call) => opened.has(call.callId)).map((call) => ({ callId: call.callId, provider })),
      now,
    );
    return opened;
  }

  /**
   * Writes a new call row (status ONGOING) in the caller's transaction, the one shape every call
   * starts in (a dial, a web call); returns its attempt number (1 for a contact's first call).
   */
  private async insertCall(trx: Db, call: NewCall): Promise<number> {
    const earlier = await trx
      .selectFrom('calls')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('contact_id', '=', call.contact.id)
      .executeTakeFirstOrThrow();
    const attempt = earlier.n + 1;
    await trx
      .insertInto('calls')
      .values({
        id: call.callId,
        user_id: call.userId,
        agent_id: call.agentId,
        contact_id: call.contact.id,
        batch_id: null,
        status: 'ONGOING',
        phone_number: call.contact.phone_number,
        attempt,
        provider: call.provider,
        channel: call.channel,
        error: null,
        duration: null,
        transcription: json(null),
        summary: null,
        metric_json: json(null),
        status_callback_url: call.statusCallBackUrl,
        status_callback_events: json(call.statusCallBackEvents),
        ...(call.variables ? { variables: json(call.variables) } : {}),
        created_at: call.now,
        answered_at: call.answeredAt,
        ended_at: null,
      })
      .execute();
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
    const { db, clock } = this.deps;
    const first = new Map<string, number>();
    events.forEach((event, index) => {
      if (!first.has(event.callId)) first.set(event.callId, index);
    });
    const unique = [...first.values()].map((index) => events[index] as CallEndedEvent);
    const ids = unique.map((event) => event.callId);
    const done = await db.transaction().execute(async (trx) => {
      // The same lock order as a single end: the batch rows first (in id order, so two groups
      // never wait on each other in a circle), then the users whose minutes change, then the calls.
      const batches = (
        await sql<EndingCallsBatch>`
          select b.id, b.status, b.max_attempts, b.no_answer_delay_ms, b.busy_delay_ms, b.webhooks
          from batches b
          where b.id in (select batch_id from calls where id = any(${ids}::text[]) and batch_id is not null)
          order by b.id
          for update of b`.execute(trx)
      ).rows;
      await sql`
        select id from users
        where id in (select user_id from calls where id = any(${ids}::text[]))
        order by id for update`.execute(trx);
      const now = clock.now();
      const rows = (
        await sql<EndedCallRow>`
          update calls c set
            status = x.status, duration = x.duration::int, answered_at = x.answered_at::timestamptz,
            ended_at = x.ended_at::timestamptz, error = x.error, transcription = x.transcription::jsonb,
            minutes_charged = x.charge::int, updated_at = ${now}, analysis_status = x.analysis,
            sip_code = x.sip_code::int, ended_reason = x.ended_reason, turns = x.turns::jsonb,
            tool_calls = x.tool_calls::jsonb,
            analysis_due_at = case when x.analysis is null then null else ${now}::timestamptz end
          from unnest(
            ${ids}::text[], ${unique.map((e) => e.status)}::text[], ${unique.map((e) => String(e.duration))}::text[],
            ${unique.map((e) => e.answeredAt?.toISOString() ?? null)}::text[], ${unique.map((e) => e.endedAt.toISOString())}::text[],
            ${unique.map((e) => e.error)}::text[], ${unique.map((e) => JSON.stringify(e.transcription))}::text[],
            ${unique.map((e) => String(minutesToCharge(e.status, e.duration)))}::text[],
            ${unique.map((e) => (awaitsAnalysis(e) ? 'pending' : null))}::text[],
            ${unique.map((e) => (e.sipCode == null ? null : String(e.sipCode)))}::text[],
            ${unique.map((e) => e.endedReason ?? null)}::text[],
            ${unique.map((e) => (e.turns ? JSON.stringify(e.turns) : null))}::text[],
            ${unique.map((e) => (e.toolCalls ? JSON.stringify(e.toolCalls) : null))}::text[]
          ) as x(id, status, duration, answered_at, ended_at, error, transcription, charge, analysis, sip_code,
                 ended_reason, turns, tool_calls)
          where c.id = x.id and c.status = 'ONGOING'
          returning c.id, c.user_id, c.agent_id, c.contact_id, c.batch_id, c.status, c.phone_number, c.error,
                    c.duration, c.created_at, c.status_callback_url, c.status_callback_events, c.batch_seq, c.attempt, c.minutes_charged`.execute(
          trx,
        )
      ).rows;
      if (rows.length === 0) return rows;
      const charges = new Map<string, number>();
      for (const row of rows) charges.set(row.user_id, (charges.get(row.user_id) ?? 0) + row.minutes_charged);
      const charged = [...charges].filter(([, minutes]) => minutes > 0);
      if (charged.length > 0) {
        await sql`
          update users u set available_minutes = u.available_minutes - x.minutes
          from unnest(${charged.map(([id]) => id)}::text[], ${charged.map(([, m]) => m)}::int[]) as x(id, minutes)
          where u.id = x.id`.execute(trx);
      }
      // The reactions that are part of the end (wiring/subscribers.ts): the outbox's
      // call.completed, the batch contacts and the batch's completion, in this transaction.
      await this.reactions.run('calls.ending', {
        tx: this.deps.legacy.repos(trx),
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
    return this.deps.db
      .transaction()
      .execute(async (trx) => {
        // Lock order everywhere: the batch row first, then its contacts, then calls.
        await trx.selectFrom('batches').select('id').where('id', '=', call.batchId).forUpdate().execute();
        const removed = await trx
          .deleteFrom('calls')
          .where('id', '=', call.callId)
          .where('status', '=', 'ONGOING')
          .executeTakeFirst();
        if (Number(removed.numDeletedRows) === 0) return false;
        // The call row goes only with a record still waiting; otherwise the delete is undone.
        if (!(await returnDial(trx, call.callId, owner))) throw new NotReturned();
        await returnContact(this.deps.legacy.repos(trx), call);
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
