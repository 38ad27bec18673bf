import { latencySummary } from '../domain/agent-call.js';
import { contactZone } from '../domain/calling-window.js';
import { AppError } from '../domain/errors.js';
import type { Deps } from './deps.js';

/** Rows read from the database per page while streaming an export. */
const PAGE = 1000;

export const EXPORT_COLUMNS = [
  'seq',
  'phoneNumber',
  'contactId',
  'name',
  'email',
  'company',
  'state',
  'finalStatus',
  'attempts',
  'callId',
  'duration',
  'sipStatusCode',
  'endedAt',
  'summary',
  'intent',
  'sentiment',
  'confidence',
  'customerSatisfaction',
  'metricJson',
  'endedReason',
  'failureSource',
  'voiceToVoiceP50Ms',
  'voiceToVoiceP95Ms',
  'timezone',
  'waitingForWindow',
  'windowOpensAt',
  'consentSource',
  'consentObtainedAt',
] as const;

/**
 * The export's finalStatus: the call's outcome for a contact done, else what kept it from being
 * dialed (CANCELLED, SUPPRESSED, NO_CONSENT); empty while it waits or is being dialed.
 */
export function finalStatusOf(state: string, outcome: string | null): string | null {
  switch (state) {
    case 'done':
      return outcome;
    case 'cancelled':
      return 'CANCELLED';
    case 'suppressed':
      return 'SUPPRESSED';
    case 'skipped':
      return 'NO_CONSENT';
    default:
      return null;
  }
}

/** Text a spreadsheet would evaluate: starting with = or @ (or a tab or CR), or with + or - when it is more than a plain number (so "+14155550123" stays as it is). */
function isFormulaLike(text: string): boolean {
  if (/^[=@\t\r]/.test(text)) return true;
  return /^[+-]/.test(text) && !/^[+-]\d+(\.\d+)?$/.test(text);
}

/**
 * A cell of CSV (RFC 4180): quoted when it holds a comma, quote or line break; and a text that a
 * spreadsheet would run as a formula (=, +, -, @, tab, CR first) is prefixed with a quote, so a
 * contact's name can never become a formula in the user's spreadsheet.
 */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return '';
  let text =
    typeof value === 'string' ? value : typeof value === 'object' ? JSON.stringify(value) : String(value);
  if (typeof value === 'string' && isFormulaLike(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

/** Every contact of a batch with its outcome and analysis, for `GET /api/v1/batch/{batchId}/export`. */
export class BatchExport {
  constructor(private readonly deps: Pick<Deps, 'store'>) {}

  /** Checks the batch is the user's (404 otherwise) before anything is streamed. */
  async assertOwned(userId: string, batchId: string): Promise<{ name: string }> {
    const batch = await this.deps.store.batches.nameForUser(userId, batchId);
    if (!batch) throw new AppError('NOT_FOUND');
    return { name: batch.name };
  }

  /** The CSV, a header line then one line per contact in batch order, read a page at a time. */
  async *csv(batchId: string): AsyncGenerator<string> {
    yield `${EXPORT_COLUMNS.join(',')}\r\n`;
    const batch = await this.deps.store.batches.zoneAndWindow(batchId);
    const batchZone = batch?.timezone ?? 'UTC';
    const hasWindow = batch?.calling_window != null;
    let after = -1;
    for (;;) {
      const rows = await this.deps.store.batchContacts.exportPage(batchId, after, PAGE);
      if (rows.length === 0) return;
      let chunk = '';
      for (const row of rows) {
        const metrics = row.metric_json ?? {};
        const latency = latencySummary(row.turns ?? []);
        const waiting = row.state === 'queued' && row.window_wait;
        const cells = [
          row.seq,
          row.phone_number,
          row.contact_id,
          row.name,
          row.email,
          row.company,
          row.state,
          finalStatusOf(row.state, row.outcome),
          row.attempts,
          row.call_id,
          row.duration,
          row.sip_code,
          row.ended_at?.toISOString() ?? null,
          row.summary,
          metrics.intent,
          metrics.sentiment,
          metrics.confidence,
          metrics.customerSatisfaction,
          row.metric_json,
          row.ended_reason,
          row.failure_source,
          latency?.voiceToVoiceP50Ms,
          latency?.voiceToVoiceP95Ms,
          // The zone the window is read in; empty for a batch without a window.
          hasWindow ? contactZone(row.timezone, row.phone_number, batchZone) : null,
          hasWindow ? waiting : null,
          waiting ? row.next_attempt_at?.toISOString() : null,
          row.consent?.source,
          row.consent?.obtainedAt,
        ];
        chunk += `${cells.map(csvCell).join(',')}\r\n`;
      }
      yield chunk;
      after = rows[rows.length - 1]?.seq ?? after;
      if (rows.length < PAGE) return;
    }
  }
}
