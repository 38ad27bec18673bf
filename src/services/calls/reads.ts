import { type AgentCallFields, agentCallFields, type EndedReason } from '../../domain/agent-call.js';
import { metricSchemaFor, toMetricConfig } from '../../domain/analysis.js';
import { type CallChannel, type CallStatus, isSuccess, type TranscriptEntry } from '../../domain/call.js';
import { AppError } from '../../domain/errors.js';
import type { FailureSource } from '../../domain/failure.js';
import type { CallCompletedPayload } from '../../domain/webhooks.js';
import type { LiveCallEntry, LiveCallStatus } from '../../ports.js';
import type { Repos } from '../../store/index.js';
import type { Deps } from '../deps.js';
import { defaultCountryOf, phoneOrRefuse } from '../phone-numbers.js';
import type { RecordingLinks } from '../recording-links.js';
import type { LiveView } from './live-view.js';

/** One call of `GET /api/v1/calls`: what a list shows; the whole call is `GET /api/v1/call/check-status`. */
export interface CallListItem {
  callId: string;
  status: CallStatus;
  phoneNumber: string;
  /** 'web': the dashboard's Talk to this agent; 'phone': every other call. */
  channel: CallChannel;
  contactId: string;
  contactName: string;
  agentId: string;
  /** The campaign the call belongs to; null for a single call (`POST /api/v1/call/dial`). */
  batchId: string | null;
  /** Why it ended (docs/agents.md); null while up, and for an unanswered call that failed nobody of ours. */
  endedReason: EndedReason | null;
  /** Whose failure it was (domain/failure.ts): contact or service; null when it did not fail or is up. */
  failureSource: FailureSource | null;
  /** Seconds of connected time; null while the call is up or when it never connected. */
  duration: number | null;
  createdAt: string;
  endedAt: string | null;
}

export interface CallListFilters {
  status?: CallStatus;
  batchId?: string;
  /** As given: read by the one phone-number rule in the user's default country (400 naming `phoneNumber`). */
  phoneNumber?: string;
  /** Calls created at or after this instant. */
  from?: Date;
  /** Calls created before this instant (half-open, so consecutive windows never share a call). */
  to?: Date;
  /** Only calls placed outside any campaign (the dashboard's single calls); not an API filter. */
  singleOnly?: boolean;
  /** The X-Next-Cursor of the previous page: the callId of its last call. */
  cursor?: string;
  limit: number;
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
  /** Minutes taken from the balance for the call (0 while up, unanswered, or failed on our side). */
  minutesCharged: number;
}

const badParameter = (field: string, message: string) =>
  new AppError('INVALID_PARAMETER', `${field} ${message}`, { fieldErrors: { [field]: [message] } });

/**
 * The user's calls, single and campaign ones, newest first. Pages are keyset pages on
 * (created_at, id), the order of the index calls_user_page_idx: a page starts strictly after the
 * call its cursor names, so calls created meanwhile (always newer, on page 1) never shift a later
 * page, and no call is shown twice or skipped.
 */
export class CallReads {
  constructor(
    private readonly deps: Pick<Deps, 'store' | 'cache' | 'logger' | 'config'>,
    private readonly live: LiveView,
    private readonly links: RecordingLinks,
  ) {}

  async list(
    userId: string,
    filters: CallListFilters,
  ): Promise<{ items: CallListItem[]; nextCursor: string | null }> {
    let phoneNumber: string | undefined;
    if (filters.phoneNumber !== undefined) {
      const country = await defaultCountryOf(this.deps, userId);
      phoneNumber = phoneOrRefuse(filters.phoneNumber, country, 'phoneNumber', 'INVALID_PARAMETER');
    }
    if (filters.from && filters.to && filters.to.getTime() <= filters.from.getTime()) {
      throw badParameter('to', 'must be later than from');
    }
    const rows = await this.deps.store.callViews.listForUser(userId, {
      ...(filters.status ? { status: filters.status } : {}),
      ...(filters.batchId ? { batchId: filters.batchId } : {}),
      ...(filters.singleOnly ? { singleOnly: true } : {}),
      ...(phoneNumber ? { phoneNumber } : {}),
      ...(filters.from ? { from: filters.from } : {}),
      ...(filters.to ? { to: filters.to } : {}),
      ...(filters.cursor ? { cursor: filters.cursor } : {}),
      limit: filters.limit,
    });
    // An empty page may come from a cursor that names no call of the user's: that is a bad
    // request, not the end of the list. Asked only then, so a full page costs one query.
    if (
      filters.cursor &&
      rows.length === 0 &&
      !(await this.deps.store.callViews.isUsers(userId, filters.cursor))
    ) {
      throw badParameter('cursor', 'is not the X-Next-Cursor of a previous page');
    }
    const page = rows.slice(0, filters.limit);
    return {
      items: page.map((row) => ({
        callId: row.id,
        status: row.status,
        phoneNumber: row.phone_number,
        channel: row.channel,
        contactId: row.contact_id,
        contactName: row.contact_name,
        agentId: row.agent_id,
        batchId: row.batch_id,
        endedReason: row.ended_reason,
        failureSource: row.failure_source,
        duration: row.duration,
        createdAt: row.created_at.toISOString(),
        endedAt: row.ended_at ? row.ended_at.toISOString() : null,
      })),
      nextCursor: rows.length > filters.limit ? (page.at(-1)?.id ?? null) : null,
    };
  }

  /** Live status: the cache first; when the entry is gone (expired, cache flushed) the database answers. */
  async liveStatus(userId: string, callId: string): Promise<LiveCallStatus> {
    const cached = this.live.nearLive(callId) ?? (await this.live.readLive(callId));
    if (cached) {
      if (cached.userId !== userId) throw new AppError('NOT_FOUND');
      // The cached link was issued when the call ended: issue a fresh one. Built field by field:
      // one object, where a rest and a spread made two (a status read is the hottest path).
      return {
        callId: cached.callId,
        status: cached.status,
        startTime: cached.startTime,
        phoneNumber: cached.phoneNumber,
        contactId: cached.contactId,
        batchId: cached.batchId,
        error: cached.error,
        duration: cached.duration,
        recordingUrl: this.links.url(cached.callId, cached.status, cached.duration),
      };
    }
    const row = await this.deps.store.callViews.liveRowForUser(userId, callId);
    if (!row) throw new AppError('NOT_FOUND');
    const { userId: _owner, ...status } = this.live.liveFromRow(row);
    return status;
  }

  /**
   * The live entries of a batch's calls: the cache's, or, when the database holds calls the cache
   * has lost (a restart on the memory cache, expired or flushed entries), the database's rows with
   * the cache's fresher entry wherever it has one. The count keeps the common case at one cheap
   * read beside the cache's.
   */
  async liveCallsOfBatch(userId: string, batchId: string): Promise<LiveCallEntry[]> {
    const { store, cache, logger } = this.deps;
    let cached: LiveCallEntry[] = [];
    try {
      cached = (await cache.getBatchCalls(batchId)).filter((entry) => entry.userId === userId);
    } catch (error) {
      logger.warn({ err: error, batchId }, 'live cache read failed; answering from the database');
    }
    const stored = await store.callViews.countOfBatchForUser(userId, batchId);
    if (stored <= cached.length) return cached;
    const byId = new Map(cached.map((entry) => [entry.callId, entry]));
    const rows = await store.callViews.liveRowsOfBatchForUser(userId, batchId);
    return rows.map((row) => byId.get(row.id) ?? this.live.liveFromRow(row));
  }

  async persistentStatus(userId: string, callId: string): Promise<PersistentCallStatus> {
    const row = await this.deps.store.callViews.persistentForUser(userId, callId);
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
      recordingUrl: this.links.url(row.id, row.status, row.duration),
      transcription: row.transcription ?? [],
      error: row.error,
      batchId: row.batch_id,
      contactId: row.contact_id,
      agentId: row.agent_id,
      channel: row.channel,
      sipStatusCode: row.sip_code,
      minutesCharged: row.minutes_charged,
      ...agentCallFields(row),
    };
  }
}

/**
 * The onCallComplete (and statusCallBackUrl) payload of an ended call, with its analysis when
 * there is one. Read inside the caller's transaction, so it is what that transaction commits.
 */
export async function completedPayload(
  repos: Repos,
  links: RecordingLinks,
  callId: string,
): Promise<CallCompletedPayload> {
  const row = await repos.callViews.completed(callId);
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
      recordingUrl: links.url(row.id, row.status, row.duration),
      summary: row.summary,
      metricJson: row.metric_json,
      ...agentCallFields(row),
    },
    metricSchema: metricSchemaFor(toMetricConfig(row.metric_config)),
  };
}
