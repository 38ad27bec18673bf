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
import type { ClaimedAnalysisRow } from '../store/analysis.js';
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

type Claimed = ClaimedAnalysisRow;

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
    const now = this.deps.clock.now();
    const claimed = await this.deps.store.analysis.claimDue(now, new Date(now.getTime() + LEASE_MS), limit);
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
    await this.deps.store.analysis.retryAt(
      callId,
      new Date(this.deps.clock.now().getTime() + 5_000 * attempts),
    );
  }

  /**
   * Stores the analysis (or marks it failed when `analysis` is null and none was stored before)
   * and queues the call's webhook in the same transaction.
   */
  private async complete(row: Claimed, analysis: Analysis | null): Promise<void> {
    const { store, clock } = this.deps;
    await store.tx(async (repos) => {
      const now = clock.now();
      const stored = row.summary !== null;
      const updated = await repos.analysis.finishPending(row.id, { analysis, stored }, now);
      if (updated && analysis && isOptOut(analysis)) {
        // The callee asked not to be called again: on the list in the transaction that stores the
        // analysis, so no later claim of this number (a retry, another batch) can miss it.
        await recordOptOut(repos, {
          userId: row.user_id,
          phoneNumber: row.phone_number,
          callId: row.id,
          now,
        });
      }
      // The summary arrived through the API after the claim: keep it, and still send the webhook.
      if (!updated && !(await repos.analysis.markDone(row.id, now))) return;
      const url = row.batch_id ? row.webhooks?.onCallComplete : singleCallUrl(row, 'call.completed');
      if (url) {
        await queueWebhook(repos, {
          userId: row.user_id,
          url,
          payload: await completedPayload(repos, this.links, row.id),
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
    const { store } = this.deps;
    const call = await store.analysis.summarySource(userId, callId);
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
    const saved = await store.tx(async (repos) => {
      const row = await repos.analysis.saveSummary(
        callId,
        analysis,
        call.transcription && call.transcription.length > 0 ? null : transcription,
        now,
      );
      if (row && isOptOut(analysis)) {
        await recordOptOut(repos, {
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
    const winner = await store.analysis.summaryOf(callId);
    return stored(winner.summary ?? analysis.summary, winner.metric_json, config);
  }

  /** `GET /api/v1/call/get-metric`: the call's metrics, if the call, agent and contact pair up and are the user's. */
  async metrics(
    userId: string,
    query: { callId: string; agentId: string; contactId: string },
  ): Promise<CallMetrics> {
    const row = await this.deps.store.analysis.metricsOf(userId, query);
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
