import type { BatchStatus } from '../domain/batch.js';

/** What `outdial batch watch` shows of a campaign, from GET /api/v1/batch/check-status. */
export interface WatchFigures {
  status: BatchStatus;
  total: number;
  processed: number;
  succeeded: number;
  failed: number;
  callsPerSecond: number;
}

/** The terminal width assumed when the output is not a terminal (a log, a pipe, CI). */
export const DEFAULT_COLUMNS = 80;

/** The bar's widest and narrowest: below the narrowest the figures alone say more. */
const BAR_MAX = 30;
const BAR_MIN = 5;

/**
 * One progress line that fits `columns`: the figures first, then a bar in the room left. The
 * batch id is printed once above it instead of on every line: it is 30 characters of an 80-column
 * terminal. One column stays free, as a terminal may wrap when the last one is written.
 */
export function progressLine(figures: WatchFigures, columns: number): string {
  const percent = figures.total > 0 ? Math.floor((figures.processed / figures.total) * 100) : 0;
  const text = `${percent}% ${figures.processed}/${figures.total} ok ${figures.succeeded} failed ${figures.failed} ${figures.callsPerSecond} calls/s ${figures.status}`;
  const room = columns - 1 - text.length - 3;
  if (room < BAR_MIN) return text.slice(0, Math.max(columns - 1, 1));
  const width = Math.min(room, BAR_MAX);
  const filled = Math.round((width * percent) / 100);
  return `[${'\u2588'.repeat(filled)}${'\u2591'.repeat(width - filled)}] ${text}`;
}

/** The closing summary, on two lines so that each fits 80 columns at any campaign size. */
export function summaryLines(batchId: string, figures: WatchFigures): string[] {
  return [
    `Batch ${batchId} ${figures.status}: ${figures.processed}/${figures.total} processed`,
    `  ${figures.succeeded} succeeded, ${figures.failed} failed`,
  ];
}
