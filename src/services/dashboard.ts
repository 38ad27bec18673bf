import { type AgentCallFields, agentCallFields } from '../domain/agent-call.js';
import type { ConsentRecord } from '../domain/batch.js';
import { isFinalBatch } from '../domain/batch-lifecycle.js';
import type { CallChannel, TranscriptEntry } from '../domain/call.js';
import { AppError } from '../domain/errors.js';
import { throttleText } from '../domain/throttle.js';
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
  /** `batch.throttle` in a sentence (`throttleText`), which the page's script writes as it is. */
  throttleText: string;
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
    private readonly deps: Pick<Deps, 'store' | 'clock'>,
    private readonly batches: BatchReads,
  ) {}

  async batch(userId: string, batchId: string): Promise<BatchDashboard> {
    const batch = await this.batches.checkStatus(userId, batchId, 0);
    const { calls: callsRepo } = this.deps.store;
    const [series, outcomes, calls] = await Promise.all([
      callsRepo.perSecond(batchId),
      callsRepo.countByStatus(batchId),
      callsRepo.latestOfBatchForUser(userId, batchId),
    ]);
    return {
      batch,
      series: everySecond(
        series.map((row) => [Number(row.second), row.count]),
        isFinalBatch(batch.status) ? null : Math.floor(this.deps.clock.now().getTime() / 1000),
      ),
      outcomes: Object.fromEntries(outcomes.map((row) => [row.status, row.count])),
      throttleText: throttleText(batch.throttle),
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
    const row = await this.deps.store.calls.detailForUser(userId, callId);
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
