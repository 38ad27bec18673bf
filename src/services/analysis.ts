import { sql } from 'kysely';
import { json } from '../adapters/postgres/database.js';
import { type AgentCallFields, agentCallFields } from '../domain/agent-call.js';
import {
  type Analysis,
  type Analyzer,
  activeCustomMetrics,
  type MetricConfig,
  metricSchemaFor,
  toMetricConfig,
} from '../domain/analysis.js';
import type { CallStatus, TranscriptEntry } from '../domain/call.js';
import { AppError } from '../domain/errors.js';
import { singleCallUrl } from '../domain/webhooks.js';
import { completedPayload } from './calls/reads.js';
import type { Deps } from './deps.js';
import type { RecordingLinks } from './recording-links.js';
import { recordOptOut } from './suppressions.js';
import { queueWebhook } from './webhooks.js';

/** Attempts at a call's automatic analysis before its webhook goes out without one. */
const MAX_ATTEMPTS = 3;
/** A claimed analysis falls due again after this if its worker died (the lease). */
const LEASE_MS = 120_000;

export interface SummaryReply {
  success: true;
  summary: string;
  customMetricsProcessed: number;
}

/** The spec's Call metrics response. */
export interface CallMetrics {
  success: true;
  call: {
    id: string;
    contactId: string;
    agentId: string;
    status: CallStatus;
    startTime: string;
    endTime: string | null;
    duration: number | null;
    phoneNumber: string;
    contactName: string;
    transcription: TranscriptEntry[];
    summary: string | null;
    metricJson: Record<string, unknown> | null;
  } & AgentCallFields;
  metricSchema: Record<string, unknown>;
}

interface Claimed {
  id: string;
  user_id: string;
  batch_id: string | null;
  phone_number: string;
  status: string;
  transcription: TranscriptEntry[] | null;
  summary: string | null;
  analysis_attempts: number;
  status_callback_url: string | null;
  status_callback_events: string[] | null;
  metric_config: Record<string, unknown>;
  webhooks: Record<string, string> | null;
}

/**
 * Summaries and metrics of calls: automatically after every call that has a transcription (a
 * background worker; the call's webhook is sent once the analysis is stored), or on request.
 * The analyzer runs outside any transaction: a model may take seconds, a row lock must not.
 */
export class AnalysisService {
  constructor(
    private readonly deps: Deps,
    private readonly analyzer: Analyzer,
    private readonly links: RecordingLinks,
  ) {}

  /** One worker pass: claims due calls, analyses them a few at a time. Returns how many it took. */
  async tick(limit = 8): Promise<number> {
    const { db, clock } = this.deps;
    const now = clock.now();
    const claimed = (
      await sql<Claimed>`
        with due as (
          select id from calls
          where analysis_status = 'pending' and analysis_due_at <= ${now}
          order by analysis_due_at
          limit ${limit}
          for update skip locked
        )
        update calls c set analysis_attempts = c.analysis_attempts + 1,
                           analysis_due_at = ${new Date(now.getTime() + LEASE_MS)}
        from due
        where c.id = due.id
        returning c.id, c.user_id, c.batch_id, c.phone_number, c.status, c.transcription, c.summary, c.analysis_attempts,
                  c.status_callback_url, c.status_callback_events,
                  (select metric_config from agents a where a.id = c.agent_id) as metric_config,
                  (select webhooks from batches b where b.id = c.batch_id) as webhooks`.execute(db)
    ).rows;
    await Promise.all(claimed.map((row) => this.process(row)));
    return claimed.length;
  }

  private async process(row: Claimed): Promise<void> {
    const { logger } = this.deps;
    let analysis: Analysis | null = null;
    if (row.summary === null) {
      const stop = this.deps.metrics.analysisDuration.startTimer({ analyzer: this.analyzer.name });
      try {
        analysis = await this.analyzer.analyze({
          transcription: row.transcription ?? [],
          metricConfig: toMetricConfig(row.metric_config),
          callStatus: row.status,
        });
        stop();
      } catch (error) {
        logger.error({ err: error, callId: row.id, attempt: row.analysis_attempts }, 'call analysis failed');
        if (row.analysis_attempts < MAX_ATTEMPTS) {
          await this.retryLater(row.id, row.analysis_attempts);
          return;
        }
      }
    }
    await this.complete(row, analysis);
  }

  private async retryLater(callId: string, attempts: number): Promise<void> {
    const { db, clock } = this.deps;
    await db
      .updateTable('calls')
      .set({ analysis_due_at: new Date(clock.now().getTime() + 5_000 * attempts) })
      .where('id', '=', callId)
      .where('analysis_status', '=', 'pending')
      .execute();
  }

  /**
   * Stores the analysis (or marks it failed when `analysis` is null and none was stored before)
   * and queues the call's webhook in the same transaction.
   */
  private async complete(row: Claimed, analysis: Analysis | null): Promise<void> {
    const { db, clock } = this.deps;
    await db.transaction().execute(async (trx) => {
      const now = clock.now();
      const stored = row.summary !== null;
      let update = trx
        .updateTable('calls')
        .set({
          analysis_status: analysis || stored ? 'done' : 'failed',
          analysis_due_at: null,
          updated_at: now,
          ...(analysis
            ? {
                summary: analysis.summary,
                metric_json: json(analysis.metricJson),
                analyzer: analysis.analyzer,
              }
            : {}),
        })
        .where('id', '=', row.id)
        .where('analysis_status', '=', 'pending');
      // A summary requested through the API meanwhile is kept: it is never regenerated.
      if (analysis) update = update.where('summary', 'is', null);
      const updated = await update.executeTakeFirst();
      if (Number(updated.numUpdatedRows) > 0 && analysis && isOptOut(analysis)) {
        // The callee asked not to be called again: on the list in the transaction that stores the
        // analysis, so no later claim of this number (a retry, another batch) can miss it.
        await recordOptOut(this.deps.legacy.repos(trx), {
          userId: row.user_id,
          phoneNumber: row.phone_number,
          callId: row.id,
          now,
        });
      }
      if (Number(updated.numUpdatedRows) === 0) {
        // The summary arrived through the API after the claim: keep it, and still send the webhook.
        const marked = await trx
          .updateTable('calls')
          .set({ analysis_status: 'done', analysis_due_at: null, updated_at: now })
          .where('id', '=', row.id)
          .where('analysis_status', '=', 'pending')
          .executeTakeFirst();
        if (Number(marked.numUpdatedRows) === 0) return;
      }
      const url = row.batch_id ? row.webhooks?.onCallComplete : singleCallUrl(row, 'call.completed');
      if (url) {
        await queueWebhook(this.deps.legacy.repos(trx), {
          userId: row.user_id,
          url,
          payload: await completedPayload(trx, this.links, row.id),
          batchId: row.batch_id,
          callId: row.id,
          now,
        });
      }
    });
  }

  /**
   * `POST /api/v1/call/create-summary`: the call's summary, generated from `transcription` the
   * first time and returned as stored every time after (never regenerated).
   */
  async createSummary(
    userId: string,
    callId: string,
    transcription: TranscriptEntry[],
  ): Promise<SummaryReply> {
    const { db } = this.deps;
    const call = await db
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
    if (!call) throw new AppError('NOT_FOUND');
    if (call.status === 'ONGOING') {
      throw new AppError(
        'CALL_NOT_ENDED',
        `Call ${callId} is still in progress; summarise it once it has ended`,
      );
    }
    const config = toMetricConfig(call.metric_config);
    if (call.summary !== null) return stored(call.summary, call.metric_json, config);
    const analysis = await this.analyzer.analyze({
      transcription,
      metricConfig: config,
      callStatus: call.status,
    });
    const now = this.deps.clock.now();
    const saved = await db.transaction().execute(async (trx) => {
      const row = await trx
        .updateTable('calls')
        .set({
          summary: analysis.summary,
          metric_json: json(analysis.metricJson),
          analyzer: analysis.analyzer,
          updated_at: now,
          ...(call.transcription && call.transcription.length > 0
            ? {}
            : { transcription: json(transcription) }),
        })
        .where('id', '=', callId)
        .where('summary', 'is', null)
        .returning(['summary', 'metric_json'])
        .executeTakeFirst();
      if (row && isOptOut(analysis)) {
        await recordOptOut(this.deps.legacy.repos(trx), {
          userId,
          phoneNumber: call.phone_number,
          callId,
          now,
        });
      }
      return row;
    });
    if (saved?.summary) return stored(saved.summary, saved.metric_json, config);
    // Another request (or the background analysis) stored one first: that one is the summary.
    const winner = await db
      .selectFrom('calls')
      .select(['summary', 'metric_json'])
      .where('id', '=', callId)
      .executeTakeFirstOrThrow();
    return stored(winner.summary ?? analysis.summary, winner.metric_json, config);
  }

  /** `GET /api/v1/call/get-metric`: the call's metrics, if the call, agent and contact pair up and are the user's. */
  async metrics(
    userId: string,
    query: { callId: string; agentId: string; contactId: string },
  ): Promise<CallMetrics> {
    const row = await this.deps.db
      .selectFrom('calls')
      .innerJoin('contacts', 'contacts.id', 'calls.contact_id')
      .innerJoin('agents', 'agents.id', 'calls.agent_id')
      .select([
        'calls.id',
        'calls.contact_id',
        'calls.agent_id',
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
      .where('calls.id', '=', query.callId)
      .where('calls.user_id', '=', userId)
      .where('calls.agent_id', '=', query.agentId)
      .where('calls.contact_id', '=', query.contactId)
      .executeTakeFirst();
    if (!row) throw new AppError('NOT_FOUND');
    return {
      success: true,
      call: {
        id: row.id,
        contactId: row.contact_id,
        agentId: row.agent_id,
        status: row.status,
        startTime: row.created_at.toISOString(),
        endTime: row.ended_at?.toISOString() ?? null,
        duration: row.duration,
        phoneNumber: row.phone_number,
        contactName: row.contact_name,
        transcription: row.transcription ?? [],
        summary: row.summary,
        metricJson: row.metric_json,
        ...agentCallFields(row),
      },
      metricSchema: metricSchemaFor(toMetricConfig(row.metric_config)),
    };
  }
}

/** The analysis heard the callee ask never to be called again (issue 15's opt-out). */
function isOptOut(analysis: Analysis): boolean {
  return analysis.metricJson.intent === 'do_not_call';
}

function stored(
  summary: string,
  metricJson: Record<string, unknown> | null,
  config: MetricConfig,
): SummaryReply {
  const custom = activeCustomMetrics(config).filter(
    (metric) => metricJson !== null && metric.name in metricJson,
  );
  return { success: true, summary, customMetricsProcessed: custom.length };
}
