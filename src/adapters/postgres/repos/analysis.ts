import { sql } from 'kysely';
import type { TranscriptEntry } from '../../../domain/call.js';
import type {
  AnalysisRepo,
  CallMetricsRow,
  ClaimedAnalysisRow,
  StoredAnalysis,
  SummarySourceRow,
} from '../../../store/analysis.js';
import { type Db, json } from '../database.js';
import { COMPLETED_COLUMNS } from './call-views.js';

export class PgAnalysisRepo implements AnalysisRepo {
  constructor(private readonly db: Db) {}

  async markDue(callIds: string[], now: Date): Promise<void> {
    if (callIds.length === 0) return;
    await sql`
      update calls set analysis_status = 'pending', analysis_due_at = ${now}
      where id = any(${callIds}::text[])`.execute(this.db);
  }

  async claimDue(now: Date, leaseUntil: Date, limit: number): Promise<ClaimedAnalysisRow[]> {
    return (
      await sql<ClaimedAnalysisRow>`
        with due as (
          select id from calls
          where analysis_status = 'pending' and analysis_due_at <= ${now}
          order by analysis_due_at
          limit ${limit}
          for update skip locked
        )
        update calls c set analysis_attempts = c.analysis_attempts + 1,
                           analysis_due_at = ${leaseUntil}
        from due
        where c.id = due.id
        returning c.id, c.user_id, c.batch_id, c.phone_number, c.status, c.transcription, c.summary, c.analysis_attempts,
                  c.status_callback_url, c.status_callback_events,
                  (select metric_config from agents a where a.id = c.agent_id) as metric_config,
                  (select webhooks from batches b where b.id = c.batch_id) as webhooks`.execute(this.db)
    ).rows;
  }

  async retryAt(callId: string, dueAt: Date): Promise<void> {
    await this.db
      .updateTable('calls')
      .set({ analysis_due_at: dueAt })
      .where('id', '=', callId)
      .where('analysis_status', '=', 'pending')
      .execute();
  }

  async finishPending(
    callId: string,
    outcome: { analysis: StoredAnalysis | null; stored: boolean },
    now: Date,
  ): Promise<boolean> {
    const { analysis, stored } = outcome;
    let update = this.db
      .updateTable('calls')
      .set({
        analysis_status: analysis || stored ? 'done' : 'failed',
        analysis_due_at: null,
        updated_at: now,
        ...(analysis
          ? { summary: analysis.summary, metric_json: json(analysis.metricJson), analyzer: analysis.analyzer }
          : {}),
      })
      .where('id', '=', callId)
      .where('analysis_status', '=', 'pending');
    // A summary requested through the API meanwhile is kept: it is never regenerated.
    if (analysis) update = update.where('summary', 'is', null);
    const updated = await update.executeTakeFirst();
    return Number(updated.numUpdatedRows) > 0;
  }

  async markDone(callId: string, now: Date): Promise<boolean> {
    const marked = await this.db
      .updateTable('calls')
      .set({ analysis_status: 'done', analysis_due_at: null, updated_at: now })
      .where('id', '=', callId)
      .where('analysis_status', '=', 'pending')
      .executeTakeFirst();
    return Number(marked.numUpdatedRows) > 0;
  }

  summarySource(userId: string, callId: string): Promise<SummarySourceRow | undefined> {
    return this.db
      .selectFrom('calls')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .select([
        'calls.id',
        'calls.status',
        'calls.summary',
        'calls.metric_json',
        'calls.transcription',
        'calls.phone_number',
        'agents.metric_config',
      ])
      .where('calls.id', '=', callId)
      .where('calls.user_id', '=', userId)
      .executeTakeFirst();
  }

  saveSummary(
    callId: string,
    analysis: StoredAnalysis,
    transcription: TranscriptEntry[] | null,
    now: Date,
  ): Promise<{ summary: string | null; metric_json: Record<string, unknown> | null } | undefined> {
    return this.db
      .updateTable('calls')
      .set({
        summary: analysis.summary,
        metric_json: json(analysis.metricJson),
        analyzer: analysis.analyzer,
        updated_at: now,
        ...(transcription ? { transcription: json(transcription) } : {}),
      })
      .where('id', '=', callId)
      .where('summary', 'is', null)
      .returning(['summary', 'metric_json'])
      .executeTakeFirst();
  }

  summaryOf(
    callId: string,
  ): Promise<{ summary: string | null; metric_json: Record<string, unknown> | null }> {
    return this.db
      .selectFrom('calls')
      .select(['summary', 'metric_json'])
      .where('id', '=', callId)
      .executeTakeFirstOrThrow();
  }

  metricsOf(
    userId: string,
    query: { callId: string; agentId: string; contactId: string },
  ): Promise<CallMetricsRow | undefined> {
    return this.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .select(COMPLETED_COLUMNS)
      .where('calls.id', '=', query.callId)
      .where('calls.user_id', '=', userId)
      .where('calls.agent_id', '=', query.agentId)
      .where('calls.contact_id', '=', query.contactId)
      .executeTakeFirst();
  }
}
