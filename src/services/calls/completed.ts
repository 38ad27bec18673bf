import { awaitsAnalysis } from '../../domain/call.js';
import { singleCallUrl } from '../../domain/webhooks.js';
import type { RecordingLinks } from '../recording-links.js';
import { queueWebhook } from '../webhooks.js';
import type { EndingCalls } from './lifecycle.js';
import { completedPayload } from './reads.js';

/**
 * Queues `call.completed` for the calls that just ended, in the transaction that ends them: to
 * the batch's onCallComplete, or a single call's statusCallBackUrl. A call with words in its
 * transcript is analysed first; the analysis worker queues its webhook with the analysis.
 */
export async function queueCallCompleted(ending: EndingCalls, links: RecordingLinks): Promise<void> {
  const { tx, rows, events, batches, now } = ending;
  for (const row of rows) {
    const batch = row.batch_id ? batches.find((b) => b.id === row.batch_id) : undefined;
    const url = batch ? batch.webhooks?.onCallComplete : singleCallUrl(row, 'call.completed');
    const event = events.get(row.id);
    if (url && event && !awaitsAnalysis(event)) {
      await queueWebhook(tx, {
        userId: row.user_id,
        url,
        payload: await completedPayload(tx, links, row.id),
        batchId: row.batch_id,
        callId: row.id,
        now,
      });
    }
  }
}
