import { sql } from 'kysely';
import type { TranscriptEntry } from '../domain/call.js';
import { AppError } from '../domain/errors.js';
import type { BatchReads, BatchStatistics } from './batch-reads.js';
import type { Deps } from './deps.js';

export interface BatchDashboard {
  batch: BatchStatistics;
  /** Calls started per second over the batch's last ten minutes of activity: [unix seconds, count]. */
  series: Array<[number, number]>;
  /** Calls by status (every attempt). */
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
  }>;
}

export interface CallDetail {
  id: string;
  status: string;
  batchId: string | null;
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
      series: series.rows.map((row) => [Number(row.second), row.count]),
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
      })),
    };
  }

  async call(userId: string, callId: string): Promise<CallDetail> {
    const row = await this.deps.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .select([
        'calls.id',
        'calls.status',
        'calls.batch_id',
        'calls.phone_number',
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
      batchId: row.batch_id,
      agentName: row.agent_name,
      contactName: row.contact_name,
      phoneNumber: row.phone_number,
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
    };
  }
}
