import { sql } from 'kysely';
import { type Db, json } from '../adapters/postgres/database.js';
import {
  DIAL_RECORD_COLUMNS,
  type DialRecordRow,
  dialRecordFrom,
  openAnsweredDial,
  openDials,
  returnDial,
} from '../adapters/postgres/dial-records.js';
import { type AgentCallFields, agentCallFields, dialVariables } from '../domain/agent-call.js';
import { dialAllowance, MINUTES_RESERVED_PER_CALL, type UserCallLoad } from '../domain/allowance.js';
import { metricSchemaFor, toMetricConfig } from '../domain/analysis.js';
import type { ConsentRecord } from '../domain/batch.js';
import { minutesToCharge } from '../domain/billing.js';
import {
  type CallChannel,
  type CallStatus,
  DIAL_REFUSED_MESSAGE,
  failedDialEnd,
  isSuccess,
  type TranscriptEntry,
} from '../domain/call.js';
import { consentError, normalizeConsent } from '../domain/consent.js';
import { AppError } from '../domain/errors.js';
import { newId } from '../domain/ids.js';
import { E164_MESSAGE, normalizeE164 } from '../domain/phone.js';
import {
  type CallCompletedPayload,
  type CallEvent,
  singleCallUrl,
  singleCallWantsProgress,
} from '../domain/webhooks.js';
import type {
  CallEndedEvent,
  DialRecord,
  DialRequest,
  LiveCallEntry,
  LiveCallStatus,
  Recording,
} from '../ports.js';
import { advanceBatchContacts, type EndingBatch, finishIfDone, returnContact } from './batch-lifecycle.js';
import { callLoad } from './call-load.js';
import type { Deps } from './deps.js';
import { RecordingLinks } from './recording-links.js';
import { isSuppressed } from './suppressions.js';
import { assertWebhookUrls, queueWebhook } from './webhooks.js';

export interface CallerDetails {
  name?: string;
  email?: string;
  company?: string | null;
  metadata?: Record<string, unknown>;
  /** The contact's consent record (issue 15); replaces the stored one when given. */
  consent?: ConsentRecord;
}

export interface DialInput {
  to?: string;
  agentConfigId: string;
  contactId?: string;
  callerDetails?: CallerDetails;
  /** Values for the agent's {{variables}} on this call (stored with it). */
  variables?: Record<string, string>;
  statusCallBackUrl?: string;
  /** The events statusCallBackUrl hears of; default ["call.completed"]. */
  statusCallBackEvents?: CallEvent[];
}

export interface DialResult {
  message: string;
  callId: string;
  contactId: string;
  status: 'ONGOING';
}

/** The spec's Persistent call status `data`, with the call's AI agent side (endedReason, turns, toolCalls, latency). */
export interface PersistentCallStatus extends AgentCallFields {
  id: string;
  status: CallStatus;
  direction: string;
  duration: number | null;
  createdAt: string;
  endedAt: string | null;
  contact: { name: string; phoneNumber: string };
  agent: string;
  recordingUrl: string | null;
  transcription: TranscriptEntry[];
  error: string | null;
  batchId: string | null;
  contactId: string;
  agentId: string;
  /** 'web': the dashboard's Talk to this agent; 'phone': every other call. */
  channel: CallChannel;
  /** The SIP status code of the carrier's final answer (calls through a SIP trunk), else null. */
  sipStatusCode: number | null;
}

/** The user's one contact that stands for the browser on web calls. */
const WEB_CONTACT = { phoneNumber: 'web', name: 'Browser' } as const;

type WebContact = { id: string; name: string; phone_number: string };

interface NewCall {
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

interface CallRow {
  id: string;
  user_id: string;
  agent_id: string;
  contact_id: string;
  batch_id: string | null;
  status: CallStatus;
  phone_number: string;
  error: string | null;
  duration: number | null;
  created_at: Date;
}

/**
 * A call recorded before dial records existed (an upgrade with calls up) is left this long to its
 * old process before it is taken for one that never went out.
 */
const UNRECORDED_GRACE_MS = 60_000;
/**
 * A call sent this long ago by this process (or reported ended by any) and still ONGOING is
 * checked too: its end report may have been lost (the database was down when it came).
 */
const LOST_END_GRACE_MS = 60_000;
/**
 * A call of this process still waiting this long, which its provider does not hold (a dial that
 * failed on a database error, say), is taken up again. A claimed call waits for its slot about a
 * second; a call waiting for its trunk is held by the provider and left alone.
 */
const STUCK_WAITING_MS = 5 * 60_000;

/** How long a live entry read or written by this process is reused without asking the cache. */
const NEAR_CACHE_MS = 250;
const NEAR_CACHE_MAX = 10_000;
/** Most call ends applied in one transaction. */
const ENDINGS_PER_GROUP = 200;

export class CallService {
  private readonly near = new Map<string, { at: number; entry: LiveCallEntry }>();
  private readonly endings: Array<{
    event: CallEndedEvent;
    resolve: (changed: boolean) => void;
    reject: (error: unknown) => void;
  }> = [];
  private applyingEndings = false;

  constructor(private readonly deps: Deps) {}

  /**
   * Starts a single call. The call row (status ONGOING) is committed before the provider is asked:
   * it is the dial intent, and a unique index lets at most one call per contact be ONGOING, so two
   * concurrent dials to one contact resolve to one call and one 409.
   */
  async dial(
    userId: string,
    input: DialInput,
    /** Runs in the transaction that records the dial intent (the Idempotency-Key's record). */
    onCommit?: (trx: Db, result: DialResult) => Promise<void>,
  ): Promise<DialResult> {
    const { db } = this.deps;
    assertWebhookUrls({ statusCallBackUrl: input.statusCallBackUrl }, this.deps.config.webhookAllowPrivate);
    const agent = await this.activeAgent(userId, input.agentConfigId);
    const dialAgent = agentForDial(agent);
    const callId = newId('call');
    const now = this.deps.clock.now();
    let contactId: string | null = null;
    let contact: Awaited<ReturnType<CallService['resolveContact']>>;
    let attempt = 1;
    const providerName = this.deps.provider.nameFor(dialAgent);
    try {
      ({ contact, attempt } = await db.transaction().execute(async (trx) => {
        // Credit and concurrency are decided under the user's row lock, in the transaction that
        // records the dial intent, so two dials in any processes never both take the last place.
        assertMayDial(await callLoad(trx, userId, { lock: true }));
        const resolved = await this.resolveContact(trx, userId, input);
        // A number on the user's suppression list is never dialed; throwing here rolls back the
        // contact upsert too, so the refusal stores nothing and charges nothing.
        if (await isSuppressed(trx, userId, resolved.phone_number)) {
          throw new AppError(
            'NUMBER_SUPPRESSED',
            `${resolved.phone_number} is on your suppression list; remove it (DELETE /api/v1/suppressions/{phoneNumber}) to call it`,
          );
        }
        contactId = resolved.id;
        const attemptNumber = await this.insertCall(trx, {
          callId,
          userId,
          agentId: agent.id,
          contact: resolved,
          provider: providerName,
          channel: 'phone',
          now,
          answeredAt: null,
          statusCallBackUrl: input.statusCallBackUrl ?? null,
          // Kept only with a URL to send them to; null reads as the default.
          statusCallBackEvents:
            input.statusCallBackUrl && input.statusCallBackEvents ? input.statusCallBackEvents : null,
          variables: input.variables ?? null,
        });
        await openDials(trx, this.deps.dials.owner, [{ callId, provider: providerName }], now);
        await onCommit?.(trx, dialResult(callId, resolved.id));
        return { contact: resolved, attempt: attemptNumber };
      }));
    } catch (error) {
      if (!isUniqueViolation(error) || contactId === null) throw error;
      const ongoing = await db
        .selectFrom('calls')
        .select('id')
        .where('contact_id', '=', contactId)
        .where('status', '=', 'ONGOING')
        .executeTakeFirst();
      throw new AppError('CALL_IN_PROGRESS', 'A call is already in progress for this contact', {
        callId: ongoing?.id ?? null,
      });
    }

    await this.putNewSingleCall(callId, userId, contact, now);

    const request: DialRequest = {
      callId,
      to: contact.phone_number,
      attempt,
      agent: dialAgent,
      contact: { id: contact.id, name: contact.name },
      variables: dialVariables(
        { name: contact.name, phoneNumber: contact.phone_number, company: contact.company },
        contact.metadata,
        input.variables,
      ),
      progressEvents: singleCallWantsProgress({
        status_callback_url: input.statusCallBackUrl ?? null,
        status_callback_events: input.statusCallBackEvents ?? null,
      }),
    };
    try {
      await this.deps.provider.dial(request);
      this.deps.metrics.callsDialed.inc({ kind: 'single' });
    } catch (error) {
      this.deps.logger.error({ err: error, callId }, 'provider refused the dial');
      await this.finish(failedDialEnd(callId, this.deps.clock.now()));
      throw new AppError('PROVIDER_ERROR', DIAL_REFUSED_MESSAGE, { callId });
    }
    return dialResult(callId, contact.id);
  }

  /**
   * Opens a call from the dashboard's "Talk to this agent" (channel 'web'): the same checks and
   * the same call row as a dial (one unreserved minute, a free place under maxConcurrentCalls),
   * answered from its first moment. Its dial record is written sent and answered in the same
   * transaction, so no sweep ever takes it for one that never went out and dials it: a web call
   * whose process dies is settled as cut off (WebCallProvider.lookup). The callee is the user's
   * one "Browser" contact, so a user has at most one web call up at a time (409 otherwise).
   */
  async openWebCall(
    userId: string,
    agentId: string,
    provider: string,
  ): Promise<{ request: DialRequest; answeredAt: Date }> {
    const agent = await this.activeAgent(userId, agentId);
    const callId = newId('call');
    const now = this.deps.clock.now();
    let contact: WebContact;
    let attempt: number;
    try {
      ({ contact, attempt } = await this.deps.db.transaction().execute(async (trx) => {
        assertMayDial(await callLoad(trx, userId, { lock: true }));
        const browser = await trx
          .insertInto('contacts')
          .values({
            id: newId('cnt'),
            user_id: userId,
            phone_number: WEB_CONTACT.phoneNumber,
            name: WEB_CONTACT.name,
          })
          .onConflict((oc) => oc.columns(['user_id', 'phone_number']).doUpdateSet({ updated_at: now }))
          .returning(['id', 'name', 'phone_number'])
          .executeTakeFirstOrThrow();
        const attemptNumber = await this.insertCall(trx, {
          callId,
          userId,
          agentId: agent.id,
          contact: browser,
          provider,
          channel: 'web',
          now,
          answeredAt: now,
          statusCallBackUrl: null,
          statusCallBackEvents: null,
          variables: null,
        });
        await openAnsweredDial(trx, this.deps.dials.owner, { callId, provider }, now);
        return { contact: browser, attempt: attemptNumber };
      }));
    } catch (error) {
      if (!isUniqueViolation(error)) throw error;
      throw new AppError(
        'CALL_IN_PROGRESS',
        'A web call of yours is already in progress; hang it up (or wait for it to end) first',
      );
    }
    await this.putNewSingleCall(callId, userId, contact, now);
    this.deps.metrics.callsDialed.inc({ kind: 'web' });
    return {
      request: {
        callId,
        to: contact.phone_number,
        attempt,
        agent: agentForDial(agent),
        contact: { id: contact.id, name: contact.name },
        provider,
        variables: dialVariables(
          { name: contact.name, phoneNumber: contact.phone_number, company: null },
          {},
          {},
        ),
      },
      answeredAt: now,
    };
  }

  /** The live view of a single (non-batch) call that has just been opened: ONGOING, nothing yet. */
  private async putNewSingleCall(
    callId: string,
    userId: string,
    contact: { id: string; phone_number: string },
    now: Date,
  ): Promise<void> {
    await this.putLive({
      callId,
      userId,
      status: 'ONGOING',
      startTime: now.toISOString(),
      phoneNumber: contact.phone_number,
      contactId: contact.id,
      batchId: null,
      error: null,
      duration: null,
      recordingUrl: null,
    });
  }

  /** The user's agent, active; AGENT_NOT_FOUND otherwise (someone else's agent is not told apart). */
  private async activeAgent(userId: string, agentId: string) {
    const agent = await this.deps.db
      .selectFrom('agents')
      .selectAll()
      .where('id', '=', agentId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    if (!agent?.is_active) {
      throw new AppError('AGENT_NOT_FOUND', `Agent ${agentId} does not exist, is inactive or is not yours`);
    }
    return agent;
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
   * the batch's counters, and completes the batch with its last contact.
   */
  async finish(event: CallEndedEvent): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.endings.push({ event, resolve, reject });
      if (!this.applyingEndings) void this.applyEndings();
    });
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
            entry.resolve(results[index] ?? false);
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
            await this.finishGroup([entry.event]).then(
              ([changed]) => entry.resolve(changed ?? false),
              entry.reject,
            );
          }
        }
      }
    } finally {
      this.applyingEndings = false;
    }
  }

  /** Several calls' ends in one transaction; returns, per event, whether it changed anything. */
  private async finishGroup(events: CallEndedEvent[]): Promise<boolean[]> {
    const { db, clock } = this.deps;
    const first = new Map<string, number>();
    events.forEach((event, index) => {
      if (!first.has(event.callId)) first.set(event.callId, index);
    });
    const unique = [...first.values()].map((index) => events[index] as CallEndedEvent);
    const ids = unique.map((event) => event.callId);
    const analysed = (event: CallEndedEvent) =>
      event.transcription.some((entry) => entry.content.trim() !== '');
    const done = await db.transaction().execute(async (trx) => {
      // The same lock order as a single end: the batch rows first (in id order, so two groups
      // never wait on each other in a circle), then the users whose minutes change, then the calls.
      const batches = (
        await sql<EndingBatch & { webhooks: Record<string, string> | null }>`
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
        await sql<
          CallRow & {
            status_callback_url: string | null;
            status_callback_events: string[] | null;
            batch_seq: number | null;
            attempt: number;
            minutes_charged: number;
          }
        >`
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
            ${unique.map((e) => (analysed(e) ? 'pending' : null))}::text[],
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
      const eventById = new Map(unique.map((event) => [event.callId, event]));
      const counted = await advanceBatchContacts(trx, batches, rows, eventById, now);
      for (const row of rows) {
        const batch = row.batch_id ? batches.find((b) => b.id === row.batch_id) : undefined;
        const url = batch ? batch.webhooks?.onCallComplete : singleCallUrl(row, 'call.completed');
        const event = eventById.get(row.id);
        if (url && event && !analysed(event)) {
          await queueWebhook(trx, {
            userId: row.user_id,
            url,
            payload: await this.completedPayload(trx, row.id),
            batchId: row.batch_id,
            callId: row.id,
            now,
          });
        }
      }
      for (const batch of counted) await finishIfDone(trx, batch.id, now, batch);
      return rows;
    });
    const recorded = new Map(unique.map((event) => [event.callId, event]));
    for (const row of done) {
      this.deps.metrics.callsEnded.inc({ status: row.status });
      const event = recorded.get(row.id);
      if (event) this.deps.metrics.observeAgentCall(event);
      await this.putLive(this.liveFromRow(row));
    }
    const changed = new Set(done.map((row) => row.id));
    return events.map((event, index) => first.get(event.callId) === index && changed.has(event.callId));
  }

  /**
   * The onCallComplete (and statusCallBackUrl) payload of an ended call, with its analysis when
   * there is one. Read inside the caller's transaction, so it is what that transaction commits.
   */
  async completedPayload(trx: Db, callId: string): Promise<CallCompletedPayload> {
    const row = await trx
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .select([
        'calls.id',
        'calls.contact_id',
        'calls.agent_id',
        'calls.batch_id',
        'calls.status',
        'calls.created_at',
        'calls.ended_at',
        'calls.duration',
        'calls.phone_number',
        'calls.transcription',
        'calls.summary',
        'calls.metric_json',
        'calls.ended_reason',
        'calls.turns',
        'calls.tool_calls',
        'contacts.name as contact_name',
        'agents.metric_config',
      ])
      .where('calls.id', '=', callId)
      .executeTakeFirstOrThrow();
    return {
      event: 'call.completed',
      success: isSuccess(row.status),
      call: {
        id: row.id,
        contactId: row.contact_id,
        agentId: row.agent_id,
        batchId: row.batch_id,
        status: row.status,
        startTime: row.created_at.toISOString(),
        endTime: row.ended_at?.toISOString() ?? null,
        duration: row.duration,
        phoneNumber: row.phone_number,
        contactName: row.contact_name,
        transcription: row.transcription ?? [],
        recordingUrl: this.recordingUrl(row.id, row.status, row.duration),
        summary: row.summary,
        metricJson: row.metric_json,
        ...agentCallFields(row),
      },
      metricSchema: metricSchemaFor(toMetricConfig(row.metric_config)),
    };
  }

  /** Publishes a call's live entry (the dispatcher does, when a batch call starts). */
  async announce(entry: LiveCallEntry): Promise<void> {
    await this.putLive(entry);
  }

  /** Live status: the cache first; when the entry is gone (expired, cache flushed) the database answers. */
  async liveStatus(userId: string, callId: string): Promise<LiveCallStatus> {
    const cached = await this.readLive(callId);
    if (cached) {
      if (cached.userId !== userId) throw new AppError('NOT_FOUND');
      const { userId: _owner, ...status } = cached;
      // The cached link was issued when the call ended: issue a fresh one.
      return { ...status, recordingUrl: this.recordingUrl(status.callId, status.status, status.duration) };
    }
    const row = await this.deps.db
      .selectFrom('calls')
      .select(CALL_COLUMNS)
      .where('id', '=', callId)
      .where('user_id', '=', userId)
      .executeTakeFirst();
    if (!row) throw new AppError('NOT_FOUND');
    const { userId: _owner, ...status } = this.liveFromRow(row);
    return status;
  }

  /**
   * The live entries of a batch's calls: the cache's, or, when the database holds calls the cache
   * has lost (a restart on the memory cache, expired or flushed entries), the database's rows with
   * the cache's fresher entry wherever it has one. The count keeps the common case at one cheap
   * read beside the cache's.
   */
  async liveCallsOfBatch(userId: string, batchId: string): Promise<LiveCallEntry[]> {
    const { db, cache, logger } = this.deps;
    let cached: LiveCallEntry[] = [];
    try {
      cached = (await cache.getBatchCalls(batchId)).filter((entry) => entry.userId === userId);
    } catch (error) {
      logger.warn({ err: error, batchId }, 'live cache read failed; answering from the database');
    }
    const stored = await db
      .selectFrom('calls')
      .select(sql<number>`count(*)::int`.as('n'))
      .where('batch_id', '=', batchId)
      .where('user_id', '=', userId)
      .executeTakeFirstOrThrow();
    if (stored.n <= cached.length) return cached;
    const byId = new Map(cached.map((entry) => [entry.callId, entry]));
    const rows = await db
      .selectFrom('calls')
      .select(CALL_COLUMNS)
      .where('batch_id', '=', batchId)
      .where('user_id', '=', userId)
      .execute();
    return rows.map((row) => byId.get(row.id) ?? this.liveFromRow(row));
  }

  async persistentStatus(userId: string, callId: string): Promise<PersistentCallStatus> {
    const row = await this.deps.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .select([
        'calls.id',
        'calls.status',
        'calls.direction',
        'calls.duration',
        'calls.created_at',
        'calls.ended_at',
        'calls.phone_number',
        'calls.transcription',
        'calls.error',
        'calls.batch_id',
        'calls.contact_id',
        'calls.agent_id',
        'calls.channel',
        'calls.sip_code',
        'calls.ended_reason',
        'calls.turns',
        'calls.tool_calls',
        'contacts.name as contact_name',
        'agents.name as agent_name',
      ])
      .where('calls.id', '=', callId)
      .where('calls.user_id', '=', userId)
      .executeTakeFirst();
    if (!row) throw new AppError('NOT_FOUND');
    return {
      id: row.id,
      status: row.status,
      direction: row.direction,
      duration: row.duration,
      createdAt: row.created_at.toISOString(),
      endedAt: row.ended_at?.toISOString() ?? null,
      contact: { name: row.contact_name, phoneNumber: row.phone_number },
      agent: row.agent_name,
      recordingUrl: this.recordingUrl(row.id, row.status, row.duration),
      transcription: row.transcription ?? [],
      error: row.error,
      batchId: row.batch_id,
      contactId: row.contact_id,
      agentId: row.agent_id,
      channel: row.channel,
      sipStatusCode: row.sip_code,
      ...agentCallFields(row),
    };
  }

  /** Audio of a finished, answered call. `userId` (bearer) or a valid signed token must be given. */
  async recording(callId: string, access: { userId?: string; token?: string }): Promise<Recording> {
    let query = this.deps.db
      .selectFrom('calls')
      .select(['id', 'status', 'duration', 'transcription', 'user_id', 'provider'])
      .where('id', '=', callId);
    if (access.userId) query = query.where('user_id', '=', access.userId);
    else if (!access.token || !this.verifyRecordingToken(callId, access.token))
      throw new AppError('NOT_FOUND');
    const row = await query.executeTakeFirst();
    if (!row || row.status === 'ONGOING' || !row.duration) throw new AppError('NOT_FOUND');
    const recording = await this.deps.provider.recording({
      id: row.id,
      duration: row.duration,
      transcription: row.transcription ?? [],
      provider: row.provider,
    });
    if (!recording) throw new AppError('NOT_FOUND');
    return recording;
  }

  /**
   * Settles calls still ONGOING whose owner is gone (its lease ran out: it died, or stopped and
   * gave it back). A call whose owner is alive is never touched, however long it runs. From the
   * call's dial record: one that never reached the network goes back to the queue with no
   * attempt charged (a batch contact, as Dispatcher.close does) or is dialed again by this process
   * under its same id (a single call); one that went out is settled by its provider (its reported
   * end, a cut-off, or, for the simulator, a rebuilt outcome or a pickup). `all` takes every other
   * owner for gone: at the start of the embedded service, whose database is this process's alone.
   */
  async reconcileStale(options: { limit?: number; all?: boolean } = {}): Promise<number> {
    const owner = this.deps.dials.owner;
    const all = options.all === true;
    const unrecordedBefore = new Date(this.deps.clock.now().getTime() - (all ? 0 : UNRECORDED_GRACE_MS));
    const lostBefore = new Date(this.deps.clock.now().getTime() - LOST_END_GRACE_MS);
    const stuckBefore = new Date(this.deps.clock.now().getTime() - STUCK_WAITING_MS);
    const rows = (
      await sql<
        DialRecordRow & {
          id: string;
          phone_number: string;
          attempt: number;
          created_at: Date;
          user_id: string;
          batch_id: string | null;
          batch_seq: number | null;
          provider: string;
          agent_id: string;
          agent_name: string;
          basic_details: Record<string, unknown>;
          sip_trunk_id: string | null;
          contact_id: string;
          contact_name: string;
          contact_company: string | null;
          contact_metadata: Record<string, unknown> | null;
          variables: Record<string, string> | null;
        }
      >`
        select c.id, c.phone_number, c.attempt, c.created_at, c.user_id, c.batch_id, c.batch_seq, c.provider,
               c.variables, a.id as agent_id, a.name as agent_name, a.basic_details, a.sip_trunk_id,
               ct.id as contact_id, ct.name as contact_name, ct.company as contact_company,
               ct.metadata as contact_metadata, ${DIAL_RECORD_COLUMNS}
        from calls c
        join agents a on a.id = c.agent_id
        join contacts ct on ct.id = c.contact_id
        left join dials d on d.call_id = c.id
        left join dial_owners o on o.id = d.owner
        where c.status = 'ONGOING'
          and (
            (d.call_id is null and c.created_at < ${unrecordedBefore})
            or (d.owner <> ${owner} and (${all} or o.id is null or o.lease_until < now()))
            or (d.state in ('sent', 'ended') and (d.owner = ${owner} or d.state = 'ended')
                and coalesce(d.sent_at, d.created_at) < ${lostBefore})
            or (d.owner = ${owner} and d.state = 'waiting' and d.created_at < ${stuckBefore})
          )
        -- Calls of gone owners first: this process's own long calls (checked for a lost end, and
        -- usually still up here) must never fill the page and hold a dead worker's calls back.
        order by (d.owner = ${owner} and d.state = 'sent') nulls first, c.created_at
        limit ${options.limit ?? 200}`.execute(this.deps.db)
    ).rows;
    let handled = 0;
    for (const row of rows) {
      const record = dialRecordFrom(row);
      const request: DialRequest = {
        callId: row.id,
        to: row.phone_number,
        attempt: row.attempt,
        agent: agentForDial({
          id: row.agent_id,
          name: row.agent_name,
          basic_details: row.basic_details,
          sip_trunk_id: row.sip_trunk_id,
        }),
        contact: { id: row.contact_id, name: row.contact_name },
        provider: row.provider,
        variables: dialVariables(
          { name: row.contact_name, phoneNumber: row.phone_number, company: row.contact_company },
          row.contact_metadata,
          row.variables,
        ),
      };
      try {
        if (await this.settleOrphan(row, request, record)) handled++;
      } catch (error) {
        // One call that cannot be settled now must not hold up the others behind it.
        this.deps.logger.error({ err: error, callId: row.id }, 'could not settle a call whose owner is gone');
      }
    }
    return handled;
  }

  /** Signed, expiring recording links; a fresh one on every read of a call (stateless, cheap to make). */
  private get links(): RecordingLinks {
    return new RecordingLinks(this.deps);
  }

  /** One call of a gone owner: back to the queue, dialed again, or ended; true when it moved. */
  private async settleOrphan(
    call: {
      id: string;
      user_id: string;
      phone_number: string;
      contact_id: string;
      batch_id: string | null;
      batch_seq: number | null;
      created_at: Date;
    },
    request: DialRequest,
    record: DialRecord | null,
  ): Promise<boolean> {
    if (record?.state === 'sent' || record?.state === 'ended') {
      // Up in this process, or picked up now: its end comes when it ends.
      const state = await this.deps.provider.lookup(request, record);
      return state.ended ? this.finish(state.ended) : false;
    }
    if (record && record.state !== 'waiting') return false; // returned: its row is on its way out
    // This process's own: only when its provider does not hold it (not waiting for a trunk).
    if (record?.owner === this.deps.dials.owner && (await this.deps.provider.lookup(request, record)).known)
      return false;
    if (call.batch_id !== null && call.batch_seq !== null) {
      const returned = await this.returnToQueue(
        { callId: call.id, batchId: call.batch_id, seq: call.batch_seq },
        record?.owner ?? null,
      );
      if (returned)
        this.deps.logger.warn({ callId: call.id }, 'a call that never went out went back to the queue');
      return returned;
    }
    // A single call has no queue: this process dials it, under the same id, so at most once.
    if (
      record &&
      record.owner !== this.deps.dials.owner &&
      !(await this.deps.dials.adopt(call.id, record.owner))
    )
      return false;
    this.deps.logger.warn({ callId: call.id }, 'a call that never went out is dialed now');
    await this.putLive({
      callId: call.id,
      userId: call.user_id,
      status: 'ONGOING',
      startTime: call.created_at.toISOString(),
      phoneNumber: call.phone_number,
      contactId: call.contact_id,
      batchId: null,
      error: null,
      duration: null,
      recordingUrl: null,
    });
    await this.deps.provider.dial(request);
    return true;
  }

  /**
   * A call went out later than it was announced (it waited for its trunk): the live view shows
   * the moment it did, as the call row does.
   */
  async started(callId: string, at: Date): Promise<void> {
    const entry = await this.readLive(callId);
    if (entry?.status !== 'ONGOING' || entry.startTime === at.toISOString()) return;
    await this.putLive({ ...entry, startTime: at.toISOString() });
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
        await returnContact(trx, call);
        return true;
      })
      .catch((error: unknown) => {
        if (error instanceof NotReturned) return false;
        throw error;
      });
  }

  recordingUrl(callId: string, status: CallStatus, duration: number | null): string | null {
    return this.links.url(callId, status, duration);
  }

  /** The signed recording path (no host) of an ended, answered call; for pages outdial serves itself. */
  recordingPath(callId: string, status: CallStatus, duration: number | null): string | null {
    return this.links.path(callId, status, duration);
  }

  private verifyRecordingToken(callId: string, token: string): boolean {
    return this.links.verify(callId, token);
  }

  private liveFromRow(row: CallRow): LiveCallEntry {
    return {
      callId: row.id,
      userId: row.user_id,
      status: row.status,
      startTime: row.created_at.toISOString(),
      phoneNumber: row.phone_number,
      contactId: row.contact_id,
      batchId: row.batch_id,
      error: row.error,
      duration: row.status === 'ONGOING' ? null : row.duration,
      recordingUrl: this.recordingUrl(row.id, row.status, row.duration),
    };
  }

  /** The live cache is a view: when it is down the call goes on and the database answers reads. */
  private async putLive(entry: LiveCallEntry): Promise<void> {
    this.near.set(entry.callId, { at: Date.now(), entry });
    try {
      await this.deps.cache.putCall(entry);
    } catch (error) {
      this.deps.logger.warn({ err: error, callId: entry.callId }, 'live cache write failed');
    }
  }

  /**
   * The live entry: from this process's near cache when it was read or written here in the last
   * NEAR_CACHE_MS (a client polling a call every few milliseconds costs one cache read per
   * window), from the live cache otherwise.
   */
  private async readLive(callId: string): Promise<LiveCallEntry | null> {
    const now = Date.now();
    const near = this.near.get(callId);
    if (near && now - near.at < NEAR_CACHE_MS) return near.entry;
    if (this.near.size > NEAR_CACHE_MAX) {
      for (const [id, item] of this.near) if (now - item.at >= NEAR_CACHE_MS) this.near.delete(id);
    }
    try {
      const entry = await this.deps.cache.getCall(callId);
      if (entry) this.near.set(callId, { at: now, entry });
      return entry;
    } catch (error) {
      this.deps.logger.warn({ err: error, callId }, 'live cache read failed; answering from the database');
      return null;
    }
  }

  private async resolveContact(db: Db, userId: string, input: DialInput) {
    const to = input.to === undefined ? undefined : normalizeE164(input.to);
    if (input.to !== undefined && !to) {
      throw new AppError('INVALID_REQUEST', `to ${E164_MESSAGE}`, { fieldErrors: { to: [E164_MESSAGE] } });
    }
    if (input.contactId) {
      const contact = await db
        .selectFrom('contacts')
        .selectAll()
        .where('id', '=', input.contactId)
        .where('user_id', '=', userId)
        .executeTakeFirst();
      if (!contact) throw new AppError('NOT_FOUND', 'Contact not found');
      if (to && to !== contact.phone_number) {
        throw new AppError('INVALID_REQUEST', "to does not match the contact's phone number", {
          fieldErrors: { to: [`does not match the phone number of contact ${contact.id}`] },
        });
      }
      return contact;
    }
    if (!to) {
      throw new AppError('INVALID_REQUEST', 'to is required when contactId is not given', {
        fieldErrors: { to: ['is required when contactId is not given'] },
      });
    }
    const details = input.callerDetails ?? {};
    const now = this.deps.clock.now();
    const consentProblem = details.consent ? consentError(details.consent, now) : null;
    if (consentProblem) {
      const field = `callerDetails.consent.${consentProblem.field}`;
      throw new AppError('INVALID_REQUEST', `${field} ${consentProblem.message}`, {
        fieldErrors: { [field]: [consentProblem.message] },
      });
    }
    // One statement creates the contact or updates it with the details given, and always returns it.
    return db
      .insertInto('contacts')
      .values({
        id: newId('cnt'),
        user_id: userId,
        phone_number: to,
        name: details.name ?? 'Unknown',
        email: details.email ?? null,
        company: details.company ?? null,
        metadata: json(details.metadata ?? {}),
        consent: json(details.consent ? normalizeConsent(details.consent) : null),
      })
      .onConflict((oc) =>
        oc.columns(['user_id', 'phone_number']).doUpdateSet((eb) => ({
          name: details.name !== undefined ? eb.ref('excluded.name') : eb.ref('contacts.name'),
          email: details.email !== undefined ? eb.ref('excluded.email') : eb.ref('contacts.email'),
          company: details.company !== undefined ? eb.ref('excluded.company') : eb.ref('contacts.company'),
          metadata:
            details.metadata !== undefined
              ? sql`contacts.metadata || excluded.metadata`
              : eb.ref('contacts.metadata'),
          consent: details.consent !== undefined ? eb.ref('excluded.consent') : eb.ref('contacts.consent'),
          updated_at: now,
        })),
      )
      .returningAll()
      .executeTakeFirstOrThrow();
  }
}

function dialResult(callId: string, contactId: string): DialResult {
  return { message: 'Call initiated successfully', callId, contactId, status: 'ONGOING' };
}

/** A call that was to go back to the queue went out meanwhile: the transaction is undone. */
class NotReturned extends Error {}

const CALL_COLUMNS = [
  'id',
  'user_id',
  'agent_id',
  'contact_id',
  'batch_id',
  'status',
  'phone_number',
  'error',
  'duration',
  'created_at',
] as const;

/**
 * A single dial's check: 402 without an unreserved minute, 429 CONCURRENCY_LIMIT at the user's
 * limit of calls in progress. Credit first: waiting for a place does not help a spent balance.
 */
function assertMayDial(load: UserCallLoad | null): void {
  if (!load) throw new AppError('UNAUTHORIZED');
  const allowance = dialAllowance(load);
  if (allowance.unreservedMinutes < MINUTES_RESERVED_PER_CALL) {
    const reserved =
      load.callsInProgress > 0
        ? `, ${allowance.reservedMinutes} of them reserved by ${load.callsInProgress} calls in progress`
        : '';
    throw new AppError(
      'INSUFFICIENT_CREDITS',
      `A call needs ${MINUTES_RESERVED_PER_CALL} unreserved minute; ${load.availableMinutes} available${reserved}`,
      {
        estimatedMinutesRequired: MINUTES_RESERVED_PER_CALL,
        availableMinutes: load.availableMinutes,
        reservedMinutes: allowance.reservedMinutes,
      },
    );
  }
  if (allowance.freePlaces === 0) {
    throw new AppError(
      'CONCURRENCY_LIMIT',
      `${load.callsInProgress} calls are in progress, the most this user may have at once (maxConcurrentCalls ${load.maxConcurrentCalls}); dial again when one ends`,
    );
  }
}

/** The agent as a dial request carries it, from its row. */
export function agentForDial(agent: {
  id: string;
  name: string;
  basic_details: Record<string, unknown>;
  sip_trunk_id: string | null;
}): DialRequest['agent'] {
  const details = agent.basic_details;
  return {
    id: agent.id,
    name: agent.name,
    agentName: typeof details.agent_name === 'string' ? details.agent_name : null,
    language: typeof details.agentLanguage === 'string' ? details.agentLanguage : null,
    sipTrunkId: agent.sip_trunk_id,
    details,
  };
}

export function isUniqueViolation(error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === '23505';
}
