import { sql } from 'kysely';
import { type AgentCallFields, agentCallFields } from '../domain/agent-call.js';
import type { ConsentRecord } from '../domain/batch.js';
import { isFinalBatch } from '../domain/batch-lifecycle.js';
import type { CallChannel, TranscriptEntry } from '../domain/call.js';
import { AppError } from '../domain/errors.js';
import type { BatchReads, BatchStatistics } from './batch-reads.js';
import type { Deps } from './deps.js';

export interface BatchDashboard {
  batch: BatchStatistics;
  /**
   * Calls started per second over the batch's last ten minutes of activity: [unix seconds, count],
   * one point for every second of that span, 0 for the idle ones.
   */
  series: Array<[number, number]>;
  /** Call attempts by status: a contact dialed three times counts three times. */
  outcomes: Record<string, number>;
  /** The latest calls with their summaries. */
  calls: Array<{
    id: string;
    status: string;
    duration: number | null;
    createdAt: string;
    phoneNumber: string;
    contactName: string;
    summary: string | null;
    intent: string | null;
    /** Whether anything was said: the list offers a transcript only then. */
    hasTranscript: boolean;
  }>;
}

export interface CallDetail {
  id: string;
  status: string;
  batchId: string | null;
  /** The campaign's name, for the call page's breadcrumb; null for a single call. */
  batchName: string | null;
  channel: CallChannel;
  agentName: string;
  contactName: string;
  phoneNumber: string;
  attempt: number;
  duration: number | null;
  error: string | null;
  createdAt: string;
  answeredAt: string | null;
  endedAt: string | null;
  transcription: TranscriptEntry[];
  summary: string | null;
  metricJson: Record<string, unknown> | null;
  analysisStatus: string | null;
  /** The carrier's final SIP answer, for calls through a SIP trunk. */
  sipCode: number | null;
  /** The AI agent side: endedReason, turns, tool calls, voice-to-voice summary. */
  agent: AgentCallFields;
  /** The contact's consent record (issue 15), as the latest batch that gave one said; null: none. */
  consent: ConsentRecord | null;
}

/** The chart's span at most: ten minutes, as the query reads. */
const SERIES_SECONDS = 600;

/**
 * One point per second from the first call of the span to its end (now, while the batch runs), so
 * the chart draws an idle second as 0 instead of a line across it from the last busy second.
 */
export function everySecond(points: Array<[number, number]>, now: number | null): Array<[number, number]> {
  const first = points[0];
  if (!first) return [];
  const counts = new Map(points);
  const last = points[points.length - 1]?.[0] ?? first[0];
  const end = Math.max(last, now ?? last);
  const start = Math.max(first[0], end - SERIES_SECONDS + 1);
  const out: Array<[number, number]> = [];
  for (let second = start; second <= end; second++) out.push([second, counts.get(second) ?? 0]);
  return out;
}

/** Reads the dashboard needs beyond the public API's, each scoped to the signed-in user. */
export class DashboardReads {
  constructor(
    private readonly deps: Deps,
    private readonly batches: BatchReads,
  ) {}

  async batch(userId: string, batchId: string): Promise<BatchDashboard> {
    const batch = await this.batches.checkStatus(userId, batchId, 0);
    const { db } = this.deps;
    const [series, outcomes, calls] = await Promise.all([
      sql<{ second: number; count: number }>`
        with last as (select max(created_at) as at from calls where batch_id = ${batchId})
        select extract(epoch from date_trunc('second', c.created_at))::bigint as second, count(*)::int as count
        from calls c, last
        where c.batch_id = ${batchId} and c.created_at > last.at - interval '10 minutes'
        group by 1 order by 1`.execute(db),
      sql<{ status: string; count: number }>`
        select status, count(*)::int as count from calls where batch_id = ${batchId} group by 1`.execute(db),
      db
        .selectFrom('calls')
        .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
        .select([
          'calls.id',
          'calls.status',
          'calls.duration',
          'calls.created_at',
          'calls.phone_number',
          'calls.summary',
          'calls.metric_json',
          sql<boolean>`coalesce(jsonb_array_length(calls.transcription) > 0, false)`.as('has_transcript'),
          'contacts.name as contact_name',
        ])
        .where('calls.batch_id', '=', batchId)
        .where('calls.user_id', '=', userId)
        .orderBy('calls.created_at', 'desc')
        .orderBy('calls.id', 'desc')
        .limit(25)
        .execute(),
    ]);
    return {
      batch,
      series: everySecond(
        series.rows.map((row) => [Number(row.second), row.count]),
        isFinalBatch(batch.status) ? null : Math.floor(this.deps.clock.now().getTime() / 1000),
      ),
      outcomes: Object.fromEntries(outcomes.rows.map((row) => [row.status, row.count])),
      calls: calls.map((row) => ({
        id: row.id,
        status: row.status,
        duration: row.duration,
        createdAt: row.created_at.toISOString(),
        phoneNumber: row.phone_number,
        contactName: row.contact_name,
        summary: row.summary,
        intent: typeof row.metric_json?.intent === 'string' ? row.metric_json.intent : null,
        hasTranscript: row.has_transcript,
      })),
    };
  }

  async call(userId: string, callId: string): Promise<CallDetail> {
    const row = await this.deps.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .leftJoin('batches', 'batches.id', 'calls.batch_id')
      .select([
        'calls.id',
        'calls.status',
        'calls.batch_id',
        'calls.phone_number',
        'calls.channel',
        'calls.attempt',
        'calls.duration',
        'calls.error',
        'calls.created_at',
        'calls.answered_at',
        'calls.ended_at',
        'calls.transcription',
        'calls.summary',
        'calls.metric_json',
        'calls.analysis_status',
        'calls.sip_code',
        'calls.ended_reason',
        'calls.turns',
        'calls.tool_calls',
        'contacts.name as contact_name',
        'contacts.consent',
        'agents.name as agent_name',
        'batches.name as batch_name',
      ])
      .where('calls.id', '=', callId)
      .where('calls.user_id', '=', userId)
      .executeTakeFirst();
    if (!row) throw new AppError('NOT_FOUND');
    return {
      id: row.id,
      status: row.status,
      batchId: row.batch_id,
      batchName: row.batch_name,
      agentName: row.agent_name,
      contactName: row.contact_name,
      phoneNumber: row.phone_number,
      channel: row.channel,
      attempt: row.attempt,
      duration: row.duration,
      error: row.error,
      createdAt: row.created_at.toISOString(),
      answeredAt: row.answered_at?.toISOString() ?? null,
      endedAt: row.ended_at?.toISOString() ?? null,
      transcription: row.transcription ?? [],
      summary: row.summary,
      metricJson: row.metric_json,
      analysisStatus: row.analysis_status,
      sipCode: row.sip_code,
      agent: agentCallFields(row),
      consent: row.consent,
    };
  }
}
